//! galvatron family: the named algorithms.

use crate::algorithm::Algorithm;

/// The family's algorithms, in the order `pipeplan algorithms` lists them.
pub fn algorithms() -> Vec<Box<dyn Algorithm>> {
    Vec::new()
}
