//! DawnPiper family (`docs/dawnpiper.md`): `dawnpiper` (BiPar, Algorithm 1, with
//! AdjacentPartition and MemOpt) and `dawnpiper-exhaustive` (every cut position, same MemOpt).

pub mod bipar;
pub mod exhaustive;
pub mod options;
pub mod stages;

use crate::algorithm::Algorithm;

/// The family's algorithms, in the order `pipeplan algorithms` lists them.
pub fn algorithms() -> Vec<Box<dyn Algorithm>> {
    vec![Box::new(bipar::Dawnpiper), Box::new(exhaustive::Exhaustive)]
}
