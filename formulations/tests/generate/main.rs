//! The analytic generators: parameter counts and FLOPs against published figures, the accounting
//! rules, error messages, and the shipped instances in `instances/` (which must be exactly
//! `generate::shipped()`; run with `PIPEPLAN_REGENERATE=1` to rewrite them).

mod models;
mod options;
mod published;
mod rules;
mod shipped;

use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::generate::{
    generate, models, network, shipped, Device, GenerateOptions, Optimizer,
};
use pipeplan_formulations::instance::{Cluster, Instance, Precision, ScheduleKind};
use pipeplan_formulations::plan::{Plan, Schedule};
use pipeplan_formulations::InputError;
use std::collections::BTreeSet;
use std::path::PathBuf;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn cluster(gpus: u32, gib: f64) -> Cluster {
    Cluster::single_node(gpus, gib * GIB, 12e9)
}

fn opts(model: &str) -> GenerateOptions {
    GenerateOptions::new(model, cluster(4, 16.0))
}

fn params(model: &str) -> f64 {
    network(&opts(model)).unwrap().params()
}

#[track_caller]
fn assert_within(got: f64, want: f64, rel: f64, what: &str) {
    let err = (got - want).abs() / want;
    assert!(
        err <= rel,
        "{what}: got {got}, published {want} ({:.2}% off, allowed {:.0}%)",
        100.0 * err,
        100.0 * rel
    );
}
