//! Sailor's profiles and plan files (peers folder `sailor/`), tensor-parallel measurements and
//! the calibration constants in the evaluator.

mod constants;
mod import;
mod plan_files;
mod runs;

use pipeplan_formulations::calibration::Calibration;
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::import::sailor::plan::SailorPlan;
use pipeplan_formulations::import::sailor::runs::{collect, Outcome, RunOptions};
use pipeplan_formulations::import::sailor::{import_file, Selection};
use pipeplan_formulations::instance::{Instance, Layer, Precision, TensorParallel};
use pipeplan_formulations::peers;
use pipeplan_formulations::peers::sailor_runs::{documented, documented_runs};
use pipeplan_formulations::plan::{Plan, Schedule, Stage};
use pipeplan_formulations::plan_from::sailor::{read_noted, scaled_profile};
use pipeplan_formulations::testing::shipped;
use std::path::PathBuf;

fn sailor() -> Option<PathBuf> {
    peers::subdir("sailor/sailor", "Sailor profiles and measured runs")
}

fn opt_config(root: &std::path::Path) -> PathBuf {
    root.join("Planner/simulations/configs/training_config_opt_350.json")
}

fn select(gpu: &str, nodes: u32, mbs: u32) -> Selection {
    Selection {
        gpu_type: gpu.into(),
        nodes,
        micro_batch: mbs,
        gpus_per_node: None,
    }
}

/// Four layers, each profiled at tensor-parallel degree 2, on `gpus` GPUs (4 per node), micro-batch
/// 2.
fn four_layers(gpus: u32) -> Instance {
    let mut inst = shipped("bert-large-s512-b8-8gpu-8gib.json");
    let mut layers = Vec::new();
    for i in 0..4 {
        let mut l = Layer::new(format!("l{i}"), 4.0, 8.0, 1e8, 1e6);
        l.tensor_parallel.push(TensorParallel {
            degree: 2,
            forward: 3.0,
            backward: 5.0,
            weights: 6e7,
            saved: 2e6,
        });
        layers.push(l);
    }
    inst.model.layers = layers;
    inst.model.batch = 2;
    inst.cluster.gpus = gpus;
    inst.cluster.gpus_per_node = Some(4);
    inst.training.micro_batch = Some(2);
    inst.validate().unwrap();
    inst
}
