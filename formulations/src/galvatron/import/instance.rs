//! The instance of the imported layer types: one chain layer per profiled layer, per sample, with
//! the `layer_types` extension the Galvatron family reads.

use crate::error::InputError;
use crate::galvatron::profile::{LayerTypes, EXTENSION};
use crate::galvatron::settings::{PipelineType, Settings};
use crate::galvatron::MB;
use crate::generate::Optimizer;
use crate::instance::{
    Bandwidth, Cluster, Instance, Layer, Model, Precision, ScheduleKind, Training, FORMAT,
};

/// The pipeplan instance of an extension: one chain layer per profiled layer, per sample.
pub(super) fn instance(
    lt: &LayerTypes,
    name: &str,
    ignored: &[String],
    notes: &[String],
) -> Result<Instance, InputError> {
    let first = &lt.types[0];
    let inst = Instance {
        format: FORMAT.into(),
        name: name.to_string(),
        source: source(name, ignored, notes),
        model: Model {
            name: name.to_string(),
            batch: 1,
            input: first.seq_len * first.hidden_size * lt.settings.element_bytes(),
            layers: layers(lt),
        },
        cluster: cluster(lt),
        training: training(&lt.settings),
        extensions: [(
            EXTENSION.to_string(),
            serde_json::to_value(lt).expect("serializes"),
        )]
        .into(),
        calibration: None,
    };
    inst.validate()?;
    Ok(inst)
}

/// One layer per layer of each type, per sample: backward = 2 x forward, saved = the tp-1
/// activation.
fn layers(lt: &LayerTypes) -> Vec<Layer> {
    let elem = lt.settings.element_bytes();
    let mut layers = Vec::new();
    for t in &lt.types {
        let out = t.seq_len * t.hidden_size * elem;
        for j in 0..t.layers {
            layers.push(Layer {
                name: format!("{}_{j}", t.name),
                kind: Some(t.name.clone()),
                forward: t.forward_ms_per_sample,
                backward: 2.0 * t.forward_ms_per_sample,
                weights: lt.settings.weight_bytes(t.parameter_mb),
                output: out,
                saved: Some(t.activation(1).unwrap_or(0.0) * MB),
                cut: None,
                tensor_parallel: Vec::new(),
            });
        }
    }
    layers
}

/// The engine's GPUs and memory; bandwidths (informative) from its coefficients.
fn cluster(lt: &LayerTypes) -> Cluster {
    let s = &lt.settings;
    let coe_bw = |c: Option<f64>| c.filter(|c| *c > 0.0).map(|c| 1e9 / c);
    let intra = coe_bw(lt.hardware.coe_plain(2)).unwrap_or(1e11);
    let inter = coe_bw(
        lt.hardware
            .p2p_ms_per_mb
            .get(&s.gpu_num().to_string())
            .copied(),
    );
    Cluster {
        gpus: s.gpu_num(),
        gpus_per_node: Some(s.num_gpus_per_node),
        gpu: None,
        memory: s.memory_constraint * 1024.0 * MB,
        bandwidth: Bandwidth {
            intra_node: intra,
            inter_node: inter,
        },
        pcie: None,
    }
}

/// The engine's settled batch and chunks, pipeline type and precision.
fn training(s: &Settings) -> Training {
    let precision = if s.mixed() {
        Precision::Mixed
    } else {
        Precision::Fp32
    };
    let mb = if s.settle_bsz > 0 && s.settle_chunk > 0 {
        Some(((s.settle_bsz / s.settle_chunk) as u32).max(1))
    } else {
        None
    };
    Training {
        micro_batch: mb,
        micro_batches: (s.settle_chunk > 0).then_some(s.settle_chunk as u32),
        schedule: match s.pipeline_type {
            PipelineType::Gpipe => ScheduleKind::Gpipe,
            PipelineType::PipedreamFlush => ScheduleKind::OneFOneB,
        },
        weight_versions: 1,
        // The engine's model states are Adam's (4 x parameter_size).
        optimizer_state_factor: Optimizer::Adam.state_factor(precision),
        precision: Some(precision),
    }
}

/// The `source` note's words on the weights and optimizer states (`docs/galvatron.md`, "Import").
pub const WEIGHTS_NOTE: &str = "weights = parameter_size MB (4 bytes per parameter), halved \
     under mixed precision (2-byte weights, optimizer_state_factor 6 for the fp32 master copy and \
     Adam's moments),";

/// The instance's `source`: what was imported and how, the engine arguments left unused, notes.
fn source(name: &str, ignored: &[String], notes: &[String]) -> String {
    let mut source = format!(
        "Galvatron profiles of {name}, imported by pipeplan: chain per sample (model.batch 1), \
         backward = 2 x forward (the engine's bct_fct_coe), {WEIGHTS_NOTE} saved = tp-1 \
         activation per sample; cluster bandwidths are informative (the layer_types extension \
         carries the engine's coefficients)."
    );
    if !ignored.is_empty() {
        source.push_str(&format!(
            " Engine arguments not used by pipeplan: {}.",
            ignored.join(", ")
        ));
    }
    for n in notes {
        source.push_str(&format!(" {n}."));
    }
    source
}
