//! The MadPipe family (`docs/madpipe.md`, MadPipe paper): asynchronous pipelines under memory limits.
//!
//! - [`valid_period`]: the least period at which 1F1B* fits a contiguous partition in memory;
//! - [`exact_contiguous`]: the optimum period over all contiguous partitions (exact reference);
//! - [`pipedream`]: PipeDream's planner (straight and replicated), judged at its valid period;
//! - [`dp`]: the MadPipe allocation DP with its T^ search (Algorithm 1);
//! - [`schedule_ilp`]: the periodic-schedule ILP (HiGHS) for a given allocation;
//! - [`Madpipe`]: the `madpipe` algorithm, DP + T^ search + schedule ILP.

pub mod dp;
pub mod exact_contiguous;
pub mod pipedream;
mod planner;
pub mod schedule_ilp;
pub mod valid_period;

pub use planner::Madpipe;

/// The family's algorithms, in the order `pipeplan algorithms` lists them.
pub fn algorithms() -> Vec<Box<dyn crate::algorithm::Algorithm>> {
    vec![
        Box::new(pipedream::PipeDream),
        Box::new(Madpipe),
        Box::new(exact_contiguous::ExactContiguous),
    ]
}
