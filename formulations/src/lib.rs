//! # pipeplan-formulations
//!
//! *What* pipeplan optimizes: the common instance format ([`instance`]), plans and schedules
//! ([`plan`]), the reference cost model ([`cost`]), the 1F1B* pattern ([`one_f_one_b_star`]), the
//! periodic-schedule simulator ([`simulate`]) and the neutral evaluator ([`evaluate`](mod@evaluate);
//! what it computes and from which formulas: `docs/evaluator.md`).
//!
//! ```
//! use pipeplan_formulations::{instance::Instance, plan::{Plan, Schedule}, evaluate::evaluate};
//! let inst = Instance::from_json(r#"{
//!   "format": "pipeplan/instance@1",
//!   "model": {"batch": 8, "input": "1 MiB", "layers": [
//!     {"name": "a", "forward": 1, "backward": 2, "weights": "10 MiB", "output": "1 MiB"},
//!     {"name": "b", "forward": 1, "backward": 2, "weights": "10 MiB", "output": "1 MiB"}]},
//!   "cluster": {"gpus": 2, "memory": "1 GiB", "bandwidth": {"intra_node": "10 GB/s"}}
//! }"#).unwrap();
//! let plan = Plan::contiguous(&[0, 1], Schedule::default_for(&inst));
//! let ev = evaluate(&inst, &plan).unwrap();
//! assert!(ev.fits && ev.valid_schedule == Some(true));
//! // Resources: stage 0, the link, stage 1. At the least period (3 ms) each is its own 1F1B* group.
//! assert_eq!(ev.in_flight, vec![3, 1]);
//! ```

pub mod baselines;
pub mod calibration;
pub mod capture;
pub mod cost;
pub mod dawnpiper;
pub mod error;
pub mod evaluate;
pub mod export;
pub mod galvatron;
pub mod instance;
pub mod layer_order;
pub mod memory_limit;
pub mod one_f_one_b_star;
#[cfg(feature = "testing")]
pub mod peers;
pub mod plan;
pub mod plan_from;
pub mod simulate;
#[cfg(feature = "testing")]
pub mod testing;
pub mod timeline;
pub mod units;
pub mod validate;

pub use error::InputError;
pub use evaluate::{evaluate, Evaluation};
pub use instance::{Chain, Instance};
pub use plan::{Plan, Schedule, Stage};
pub mod generate;
pub mod import;
pub mod madpipe;
