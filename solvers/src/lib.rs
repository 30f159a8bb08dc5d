//! # pipeplan-solvers
//!
//! *How* pipeplan optimizes: DP kernels ([`minmax`]), the HiGHS MILP runner ([`ilp`]), and the
//! named algorithms ([`baselines`], ...) behind one [`Algorithm`] trait, listed in [`registry`].

pub mod algorithm;
pub mod baselines;
pub mod calibrate;
pub mod capture;
pub mod dawnpiper;
pub mod deadline;
pub mod galvatron;
pub mod harness;
pub mod ilp;
pub mod madpipe;
pub mod max_batch;
pub mod minmax;
pub mod objective;
pub mod registry;
pub mod settings;

pub use algorithm::{
    Algorithm, Claimed, Context, Family, Objective, ObjectiveKind, Solution, SolveError,
    SolveOptions, Stats, Status, Stop, Unsupported,
};
pub use deadline::Deadline;
pub use settings::{Kind, Param, Settings};
