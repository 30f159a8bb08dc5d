//! The instances shipped in the repository's `instances/` directory.
//!
//! `formulations/tests/generate/shipped.rs` checks that the files are exactly these instances
//! (`PIPEPLAN_REGENERATE=1` rewrites them). Memory budgets are chosen so that, in most cases, a
//! compute-balanced partition does not fit but a memory-aware one does; see `instances/README.md`.

use super::{generate, Device, GenerateOptions, Optimizer};
use crate::instance::{Bandwidth, Cluster, Instance, ScheduleKind};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// A cluster and the sentence describing it in `source`.
struct Setup {
    cluster: Cluster,
    device: Device,
    note: String,
}

/// One node of V100-class GPUs linked by PCIe 3.0 at `bw` bytes/s (MadPipe measured 12 GB/s and
/// also tried 24 GB/s).
fn v100_node(gpus: u32, gib: f64, bw: f64) -> Setup {
    Setup {
        cluster: Cluster {
            pcie: Some(12e9),
            ..Cluster::single_node(gpus, gib * GIB, bw)
        },
        device: Device::V100,
        note: format!(
            "Cluster: one node of {gpus} V100-class GPUs, memory budget {gib} GiB each \
             (budgets below the physical size model tighter settings, as in MadPipe's 3-16 GB \
             sweep), GPU-to-GPU bandwidth {} GB/s ({}), host link 12 GB/s (PCIe 3.0 x16).",
            bw / 1e9,
            if bw == 12e9 {
                "PCIe 3.0, the bandwidth MadPipe measured"
            } else {
                "MadPipe's second bandwidth setting"
            }
        ),
    }
}

/// Two nodes of 8 V100-class GPUs: intra-node `intra` bytes/s, 100 Gb/s InfiniBand between
/// nodes taken as 10 GB/s achievable.
fn v100_two_nodes(gib: f64, intra: f64, intra_what: &str) -> Setup {
    Setup {
        cluster: Cluster {
            gpus: 16,
            gpus_per_node: Some(8),
            gpu: None,
            memory: gib * GIB,
            bandwidth: Bandwidth {
                intra_node: intra,
                inter_node: Some(10e9),
            },
            pcie: Some(12e9),
        },
        device: Device::V100,
        note: format!(
            "Cluster: 2 nodes x 8 V100-class GPUs, memory budget {gib} GiB each; \
             intra-node {} GB/s ({intra_what}); inter-node 100 Gb/s InfiniBand taken as 10 GB/s \
             achievable; host link 12 GB/s (PCIe 3.0 x16).",
            intra / 1e9
        ),
    }
}

/// One node of 8 A100 40 GB GPUs on PCIe 4.0 x16 (the DawnPiper evaluation server).
fn a100_pcie_node(gpus: u32) -> Setup {
    Setup {
        cluster: Cluster {
            pcie: Some(24e9),
            ..Cluster::single_node(gpus, 40.0 * GIB, 24e9)
        },
        device: Device::A100,
        note: format!(
            "Cluster: one node of {gpus} A100 40 GB GPUs on PCIe 4.0 x16 (as in the DawnPiper \
             evaluation), GPU-to-GPU and host bandwidth taken as 24 GB/s."
        ),
    }
}

/// 4 nodes x 4 A100 40 GB GPUs with NVLink inside a node and 100 Gb/s InfiniBand between nodes
/// (the CAPTURE evaluation cluster).
fn a100_four_nodes() -> Setup {
    Setup {
        cluster: Cluster {
            gpus: 16,
            gpus_per_node: Some(4),
            gpu: None,
            memory: 40.0 * GIB,
            bandwidth: Bandwidth {
                intra_node: 100e9,
                inter_node: Some(10e9),
            },
            pcie: Some(24e9),
        },
        device: Device::A100,
        note: "Cluster: 4 nodes x 4 A100 40 GB GPUs (the CAPTURE evaluation cluster); intra-node \
               NVLink taken as 100 GB/s, inter-node 100 Gb/s InfiniBand taken as 10 GB/s \
               achievable, host link 24 GB/s (PCIe 4.0)."
            .to_string(),
    }
}

/// Options for one shipped instance.
fn opts(model: &str, setup: Setup, why: &str) -> GenerateOptions {
    let mut o = GenerateOptions::new(model, setup.cluster);
    o.device = setup.device;
    o.note = Some(format!("{} Why this instance: {why}", setup.note));
    o
}

fn with(mut o: GenerateOptions, f: impl FnOnce(&mut GenerateOptions)) -> GenerateOptions {
    f(&mut o);
    o
}

/// The options of every shipped instance, in file order.
fn shipped_options() -> Vec<GenerateOptions> {
    const MADPIPE: &str = "the MadPipe setting (1000x1000 px, batch 8)";
    vec![
        opts(
            "resnet50",
            v100_node(4, 8.0, 12e9),
            &format!(
                "{MADPIPE}; a compute-balanced partition needs far more than 8 GiB at its \
                      period, so the period depends on memory-aware partitioning."
            ),
        ),
        opts(
            "resnet50",
            v100_node(8, 16.0, 12e9),
            &format!("{MADPIPE} with the usual 16 GB GPU."),
        ),
        opts(
            "resnet101",
            v100_node(2, 16.0, 12e9),
            &format!("{MADPIPE} on the fewest GPUs."),
        ),
        opts(
            "resnet101",
            v100_node(8, 8.0, 12e9),
            &format!("{MADPIPE}, tight memory on 8 GPUs."),
        ),
        opts(
            "inception-v3",
            v100_node(4, 6.0, 12e9),
            &format!("{MADPIPE}, tight memory."),
        ),
        opts(
            "inception-v3",
            v100_node(8, 3.0, 12e9),
            &format!("{MADPIPE} at MadPipe's smallest memory (3 GB)."),
        ),
        opts(
            "densenet121",
            v100_node(4, 8.0, 12e9),
            &format!("{MADPIPE}; DenseNet's activations dwarf its weights."),
        ),
        opts(
            "densenet121",
            v100_node(8, 4.0, 12e9),
            &format!("{MADPIPE}, very tight memory on 8 GPUs."),
        ),
        opts(
            "wide-resnet",
            v100_node(8, 16.0, 24e9),
            &format!("{MADPIPE} for a wider network, at 24 GB/s."),
        ),
        with(
            opts(
                "wresnet-1b",
                a100_four_nodes(),
                "the CAPTURE setting for Wide-ResNet 1B (batch 768 = 24 micro-batches of 32, \
                 synchronous 1F1B) on 4 nodes; Alpa's benchmark trains it in fp32, the optimizer \
                 (SGD with momentum) is our assumption.",
            ),
            |o| {
                o.schedule = Some(ScheduleKind::OneFOneB);
                o.micro_batches = Some(24);
                o.optimizer = Some(Optimizer::Momentum);
            },
        ),
        opts(
            "bert-large",
            v100_node(8, 8.0, 12e9),
            "BERT-Large pre-training at sequence 512; a compute-balanced partition of the 1F1B \
             pipeline does not fit 8 GiB on the first GPUs, a memory-aware one does.",
        ),
        with(
            opts(
                "bert-large",
                v100_two_nodes(32.0, 25e9, "one NVLink 2 link"),
                "BERT-Large with micro-batches of 32 on two nodes; the first stages of a \
                 compute-balanced 1F1B partition exceed 32 GiB.",
            ),
            |o| o.batch = 32,
        ),
        opts(
            "gpt3-2.6b",
            a100_pcie_node(8),
            "GPT-3 2.6B on one A100 node; fits with room to spare (a reference case).",
        ),
        opts(
            "gpt3-2.6b",
            v100_two_nodes(32.0, 25e9, "one NVLink 2 link"),
            "GPT-3 2.6B on two V100 32 GB nodes; the first stages of a compute-balanced 1F1B \
             partition exceed 32 GiB.",
        ),
        opts(
            "gpt3-6.7b",
            v100_two_nodes(32.0, 25e9, "one NVLink 2 link"),
            "GPT-3 6.7B on two V100 32 GB nodes; tight.",
        ),
        opts(
            "gpt3-6.7b",
            v100_node(8, 16.0, 12e9),
            "GPT-3 6.7B on 8 GPUs of 16 GiB: model states alone (16 bytes per parameter, 99 GiB) \
             leave no pure pipeline partition that fits; expected to need sharded data \
             parallelism, checkpointing or swapping (or to be reported infeasible).",
        ),
        opts(
            "t5-512-4",
            v100_node(8, 8.0, 12e9),
            "Galvatron-BMW's imbalanced T5-512/4 under an 8 GB budget: encoder layers carry \
             most activations, decoder layers more parameters.",
        ),
        with(
            opts(
                "t5-512-4",
                v100_two_nodes(16.0, 12e9, "PCIe 3.0"),
                "T5-512/4 with micro-batches of 16 on two PCIe nodes (Galvatron-BMW's \
                 low-performance cluster, with a 16 GB budget); a compute-balanced partition \
                 does not fit.",
            ),
            |o| o.batch = 16,
        ),
        opts(
            "vit-huge",
            v100_node(8, 8.0, 12e9),
            "ViT-Huge/14 under an 8 GB budget (Galvatron-BMW's smallest); a compute-balanced \
             partition does not fit.",
        ),
        opts(
            "swin-huge",
            v100_node(8, 16.0, 12e9),
            "Swin-Huge under a 16 GB budget: early stages hold large activations and few \
             parameters, late stages the reverse.",
        ),
    ]
}

/// The exact list of instance files committed under `instances/`: (file stem, instance).
/// The stem is the instance name; every instance is validated.
pub fn shipped() -> Vec<(String, Instance)> {
    shipped_options()
        .iter()
        .map(|o| {
            // The options above are fixed and tested; a failure here is a bug in this file.
            let inst = generate(o).unwrap_or_else(|e| panic!("shipped instance {}: {e}", o.model));
            (inst.name.clone(), inst)
        })
        .collect()
}
