//! # pipeplan-solvers
//!
//! *How* pipeplan optimizes: DP kernels ([`minmax`]), the HiGHS MILP runner ([`ilp`]), and the
//! named algorithms ([`baselines`], ...) behind one [`Algorithm`] trait, listed in [`registry`].

pub mod algorithm;
pub mod baselines;
pub mod capture;
pub mod dawnpiper;
pub mod galvatron;
pub mod harness;
pub mod ilp;
pub mod madpipe;
pub mod max_batch;
pub mod minmax;
pub mod registry;

pub use algorithm::{
    Algorithm, Claimed, Family, Objective, Solution, SolveError, SolveOptions, Stats, Status,
    Unsupported,
};
