//! The registry of named algorithms.

use crate::algorithm::Algorithm;
use crate::baselines::{BalancedMemory, BalancedParams, BalancedTime, IlpBalancedTime, Uniform};
use crate::madpipe::exact_contiguous::ExactContiguous;
use crate::madpipe::pipedream::PipeDream;
use crate::madpipe::Madpipe;

/// Every algorithm, in the order `pipeplan algorithms` lists them.
pub fn all() -> Vec<Box<dyn Algorithm>> {
    let mut all: Vec<Box<dyn Algorithm>> = vec![
        Box::new(Uniform),
        Box::new(BalancedTime),
        Box::new(BalancedParams),
        Box::new(BalancedMemory),
        Box::new(IlpBalancedTime),
        Box::new(PipeDream),
        Box::new(Madpipe),
        Box::new(ExactContiguous),
    ];
    all.extend(crate::galvatron::algorithms());
    all.extend(crate::capture::algorithms());
    all.extend(crate::dawnpiper::algorithms());
    all
}

/// The algorithm called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Algorithm>> {
    all().into_iter().find(|a| a.name() == name)
}

/// Names of every algorithm.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|a| a.name()).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique() {
        let mut n = super::names();
        let len = n.len();
        n.sort_unstable();
        n.dedup();
        assert_eq!(n.len(), len);
    }
}
