//! Suite v1: 69 scenarios x 3 memory levels = 207 members (`docs/suite.md`, `suites/v1/`).
//!
//! Frozen: the shipped files are v1. A change here (or in a generator, importer or the memory
//! rule) that alters a v1 file fails the regeneration test; make a v2 instead.

use super::recipe::{AsPublished, Net, Origin, Profile, Recipe, Scenario};
use pipeplan_formulations::generate::Device;
use pipeplan_formulations::import::Source;
use pipeplan_formulations::instance::ScheduleKind::{self, Async, Gpipe, OneFOneB};

const IB_100: &str = "100 Gb/s InfiniBand, taken as 10 GB/s achievable";

/// V100s on PCIe: MadPipe's measured 12 GB/s.
const V100_PCIE: Net = Net {
    device: Device::V100,
    intra: 12e9,
    inter: 10e9,
    pcie: 12e9,
    intra_what: "PCIe 3.0, the bandwidth MadPipe measured",
    inter_what: IB_100,
};

/// V100s with one NVLink 2 link between neighbours.
const V100_NVLINK: Net = Net {
    device: Device::V100,
    intra: 25e9,
    inter: 10e9,
    pcie: 12e9,
    intra_what: "one NVLink 2 link",
    inter_what: IB_100,
};

/// A100 nodes of 8 with NVLink 3 and HDR InfiniBand.
const A100_NVLINK: Net = Net {
    device: Device::A100,
    intra: 100e9,
    inter: 25e9,
    pcie: 24e9,
    intra_what: "NVLink 3, taken as 100 GB/s achievable",
    inter_what: "200 Gb/s HDR InfiniBand, taken as 25 GB/s achievable",
};

/// The CAPTURE evaluation cluster: A100 nodes of 4.
const A100_CAPTURE: Net = Net {
    device: Device::A100,
    intra: 100e9,
    inter: 10e9,
    pcie: 24e9,
    intra_what: "NVLink, taken as 100 GB/s achievable, as in the CAPTURE evaluation cluster",
    inter_what: IB_100,
};

/// An analytic model.
#[allow(clippy::too_many_arguments)]
const fn model(
    model: &'static str,
    batch: Option<u32>,
    family: &'static str,
    gpus: u32,
    nodes: u32,
    net: Net,
    schedule: ScheduleKind,
    why: &'static str,
) -> Scenario {
    Scenario {
        origin: Origin::Analytic { model, batch },
        family,
        gpus,
        nodes,
        net: Some(net),
        schedule,
        large: false,
        why,
    }
}

/// A peer profile on a cluster of the suite's.
#[allow(clippy::too_many_arguments)]
const fn peer(
    profile: Profile,
    family: &'static str,
    gpus: u32,
    nodes: u32,
    net: Option<Net>,
    schedule: ScheduleKind,
    large: bool,
    why: &'static str,
) -> Scenario {
    Scenario {
        origin: Origin::Peer(profile),
        family,
        gpus,
        nodes,
        net,
        schedule,
        large,
        why,
    }
}

const fn profile(source: Source, label: &'static str, file: &'static str) -> Profile {
    Profile {
        source,
        label,
        file,
        data_root: None,
        gpu_type: None,
    }
}

const fn pipedream(label: &'static str, file: &'static str) -> Profile {
    profile(Source::PipeDream, label, file)
}

const fn galvatron(label: &'static str, file: &'static str) -> Profile {
    Profile {
        data_root: Some("galvatron/v2.x_14f5972"),
        ..profile(Source::Galvatron, label, file)
    }
}

const fn sailor(label: &'static str, file: &'static str, gpu_type: &'static str) -> Profile {
    Profile {
        gpu_type: Some(gpu_type),
        ..profile(Source::Sailor, label, file)
    }
}

/// The recipe of v1 (one scenario a line).
#[rustfmt::skip]
pub fn recipe() -> Recipe {
    const MADPIPE: &str = "CNN in the MadPipe setting (1000x1000 px, batch 8, SGD, fp32).";
    const LLM: &str = "Large language model on A100 nodes.";
    let scenarios = vec![
        // Analytic CNNs at high resolution.
        model("resnet50", None, "resnet", 4, 1, V100_PCIE, Async, MADPIPE),
        model("resnet50", None, "resnet", 8, 1, V100_PCIE, Gpipe, MADPIPE),
        model("resnet50", None, "resnet", 16, 2, V100_PCIE, OneFOneB, MADPIPE),
        model("resnet101", None, "resnet", 2, 1, V100_PCIE, Async, MADPIPE),
        model("resnet101", None, "resnet", 8, 1, V100_PCIE, Async, MADPIPE),
        model("resnet101", None, "resnet", 16, 2, V100_PCIE, Async, MADPIPE),
        model("inception-v3", None, "inception", 4, 1, V100_PCIE, Async, MADPIPE),
        model("inception-v3", None, "inception", 8, 1, V100_PCIE, OneFOneB, MADPIPE),
        model("densenet121", None, "densenet", 4, 1, V100_PCIE, Gpipe, MADPIPE),
        model("densenet121", None, "densenet", 8, 1, V100_PCIE, Async, MADPIPE),
        model("densenet121", None, "densenet", 32, 4, V100_PCIE, Async, MADPIPE),
        model("wide-resnet", None, "wide-resnet", 8, 1, V100_NVLINK, Async, MADPIPE),
        model("wide-resnet", None, "wide-resnet", 16, 2, V100_NVLINK, OneFOneB, MADPIPE),
        model("wresnet-1b", None, "wide-resnet", 16, 4, A100_CAPTURE, OneFOneB, "Alpa's Wide-ResNet 1B on the CAPTURE cluster."),
        model("wresnet-2b", None, "wide-resnet", 8, 1, A100_NVLINK, Gpipe, "Alpa's Wide-ResNet 2B."),
        model("wresnet-2b", None, "wide-resnet", 32, 8, A100_CAPTURE, OneFOneB, "Alpa's Wide-ResNet 2B on eight CAPTURE nodes."),
        // Analytic transformers.
        model("bert-large", None, "bert", 2, 1, V100_NVLINK, OneFOneB, "BERT-Large pre-training."),
        model("bert-large", None, "bert", 8, 1, V100_NVLINK, Async, "BERT-Large pre-training, asynchronous (PipeDream-2BW style)."),
        model("bert-large", Some(32), "bert", 16, 2, V100_NVLINK, Gpipe, "BERT-Large with micro-batches of 32."),
        model("gpt3-2.6b", None, "gpt", 4, 1, A100_NVLINK, OneFOneB, "GPT-3 2.6B."),
        model("gpt3-2.6b", None, "gpt", 8, 1, A100_NVLINK, Gpipe, "GPT-3 2.6B."),
        model("gpt3-2.6b", None, "gpt", 16, 2, V100_NVLINK, Async, "GPT-3 2.6B, asynchronous, on V100 nodes."),
        model("gpt3-6.7b", None, "gpt", 2, 1, A100_NVLINK, Async, "GPT-3 6.7B on the fewest GPUs."),
        model("gpt3-6.7b", None, "gpt", 8, 1, A100_NVLINK, OneFOneB, "GPT-3 6.7B."),
        model("gpt3-6.7b", None, "gpt", 32, 4, V100_NVLINK, OneFOneB, "GPT-3 6.7B on V100 nodes."),
        model("gpt3-175b", None, "gpt", 32, 4, A100_NVLINK, Async, LLM),
        model("gpt3-175b", None, "gpt", 64, 8, A100_NVLINK, OneFOneB, LLM),
        model("llama3-8b", None, "llama", 8, 1, A100_NVLINK, OneFOneB, LLM),
        model("llama3-8b", None, "llama", 16, 2, A100_NVLINK, Async, LLM),
        model("llama3-70b", None, "llama", 32, 4, A100_NVLINK, OneFOneB, LLM),
        model("llama3-70b", None, "llama", 64, 8, A100_NVLINK, Async, LLM),
        model("llama3-405b", None, "llama", 64, 8, A100_NVLINK, OneFOneB, LLM),
        model("mixtral-8x7b", None, "mixtral", 8, 1, A100_NVLINK, OneFOneB, LLM),
        model("mixtral-8x7b", None, "mixtral", 16, 2, A100_NVLINK, OneFOneB, LLM),
        model("t5-512-4", None, "t5", 4, 1, V100_PCIE, Gpipe, "Galvatron-BMW's imbalanced T5-512/4."),
        model("t5-512-4", None, "t5", 8, 1, V100_PCIE, OneFOneB, "Galvatron-BMW's imbalanced T5-512/4."),
        model("t5-512-4", Some(16), "t5", 16, 2, V100_PCIE, Async, "Galvatron-BMW's T5-512/4 on its low-performance (PCIe) cluster."),
        model("vit-huge", None, "vit", 4, 1, V100_NVLINK, OneFOneB, "ViT-Huge/14 of Galvatron-BMW."),
        model("vit-huge", None, "vit", 8, 1, V100_NVLINK, Async, "ViT-Huge/14 of Galvatron-BMW."),
        model("vit-huge", None, "vit", 16, 2, V100_NVLINK, Gpipe, "ViT-Huge/14 of Galvatron-BMW."),
        model("swin-huge", None, "swin", 8, 1, V100_NVLINK, OneFOneB, "Swin-Huge of Galvatron-BMW."),
        model("swin-huge", None, "swin", 16, 2, V100_NVLINK, Async, "Swin-Huge of Galvatron-BMW."),
        // PipeDream's profiles (V100, per profiled mini-batch).
        peer(pipedream("alexnet", "pipedream/profiler/image_classification/profiles/alexnet/graph.txt"), "alexnet", 2, 1, Some(V100_PCIE), Async, false, PD_WHY),
        peer(pipedream("vgg16", "pipedream/profiler/image_classification/profiles/vgg16/graph.txt"), "vgg", 4, 1, Some(V100_PCIE), Async, false, PD_WHY),
        peer(pipedream("vgg16", "pipedream/profiler/image_classification/profiles/vgg16/graph.txt"), "vgg", 8, 1, Some(V100_PCIE), OneFOneB, false, PD_WHY),
        peer(pipedream("resnet18", "pipedream/profiler/image_classification/profiles/resnet18/graph.txt"), "resnet", 4, 1, Some(V100_PCIE), Gpipe, false, PD_WHY),
        peer(pipedream("squeezenet1_0", "pipedream/profiler/image_classification/profiles/squeezenet1_0/graph.txt"), "squeezenet", 8, 1, Some(V100_PCIE), Async, false, PD_WHY),
        peer(pipedream("gnmt", "pipedream/profiler/translation/profiles/gnmt/graph.txt"), "gnmt", 4, 1, Some(V100_PCIE), Async, false, PD_WHY),
        peer(pipedream("gnmt_large", "pipedream/profiler/translation/profiles/gnmt_large/graph.txt"), "gnmt", 8, 1, Some(V100_NVLINK), Async, false, PD_WHY),
        peer(pipedream("gnmt_large", "pipedream/profiler/translation/profiles/gnmt_large/graph.txt"), "gnmt", 16, 2, Some(V100_NVLINK), OneFOneB, false, PD_WHY),
        peer(pipedream("resnet50", "pipedream/profiler/image_classification/profiles/resnet50/graph.txt"), "resnet", 8, 1, Some(V100_PCIE), Async, true, PD_WHY),
        peer(pipedream("resnext50", "pipedream/profiler/image_classification/profiles/resnext50/graph.txt"), "resnext", 16, 2, Some(V100_PCIE), Async, true, PD_WHY),
        // Piper's planner inputs (A100 profiles).
        peer(profile(Source::Piper, "bert32a100", "piper/inputs/bert32a100.json"), "bert", 8, 1, Some(A100_NVLINK), OneFOneB, false, PIPER_WHY),
        peer(profile(Source::Piper, "bert32a100", "piper/inputs/bert32a100.json"), "bert", 32, 4, Some(A100_NVLINK), Gpipe, false, PIPER_WHY),
        peer(profile(Source::Piper, "gnmt", "piper/inputs/gnmt.json"), "gnmt", 8, 1, Some(A100_NVLINK), Async, false, PIPER_WHY),
        peer(profile(Source::Piper, "resnet", "piper/inputs/resnet.json"), "resnet", 16, 2, Some(A100_NVLINK), Async, true, PIPER_WHY),
        // dnn-partitioning's training graphs (layer and operator level).
        peer(profile(Source::DnnPartitioning, "bert24", "dnn-partitioning/throughput-inputs/LayerGraphs/bert24_training.json"), "bert", 4, 1, Some(V100_NVLINK), OneFOneB, false, DNNP_WHY),
        peer(profile(Source::DnnPartitioning, "bert24", "dnn-partitioning/throughput-inputs/LayerGraphs/bert24_training.json"), "bert", 8, 1, Some(V100_NVLINK), Async, false, DNNP_WHY),
        peer(profile(Source::DnnPartitioning, "gnmt", "dnn-partitioning/throughput-inputs/LayerGraphs/gnmt_training.json"), "gnmt", 8, 1, Some(V100_PCIE), Async, false, DNNP_WHY),
        peer(profile(Source::DnnPartitioning, "bert-l3-ops", "dnn-partitioning/throughput-inputs/OperatorGraphs/bert_l-3_training.json"), "bert", 4, 1, Some(V100_PCIE), Async, true, DNNP_OPS_WHY),
        // Galvatron's profiles, on the clusters of the engine's recorded searches.
        peer(galvatron("vit2560", "galvatron/golden/f_vit2560_4gpu_50GB_bsz64.json"), "vit", 4, 1, None, OneFOneB, false, GALVATRON_WHY),
        peer(galvatron("bert1024", "galvatron/golden/g_bert1024_8gpu_12GB_bsz256.json"), "bert", 8, 1, None, OneFOneB, false, GALVATRON_WHY),
        peer(galvatron("bert1024", "galvatron/golden/g_bert1024_8gpu_12GB_bsz256.json"), "bert", 8, 1, None, Gpipe, false, GALVATRON_WHY),
        peer(galvatron("swinhuge", "galvatron/golden/h_swinhuge_8gpu_16GB_bsz512.json"), "swin", 8, 1, None, OneFOneB, false, GALVATRON_WHY),
        // Sailor's profiles, on the clusters of its measured runs.
        peer(sailor("opt-350-gh200", "sailor/sailor/Planner/simulations/configs/training_config_opt_350.json", "GH-96"), "opt", 4, 1, None, OneFOneB, false, SAILOR_WHY),
        peer(sailor("opt-350-gh200", "sailor/sailor/Planner/simulations/configs/training_config_opt_350.json", "GH-96"), "opt", 16, 4, None, OneFOneB, false, SAILOR_WHY),
        peer(sailor("opt-350-a100", "sailor/sailor/Planner/simulations/configs/training_config_opt_350.json", "A100-40"), "opt", 8, 2, None, OneFOneB, false, SAILOR_WHY),
        peer(sailor("gpt-neo-2.7-gh200", "sailor/sailor/Planner/simulations/configs/training_config_gpt_neo27.json", "GH-96"), "gpt", 8, 2, None, OneFOneB, false, SAILOR_WHY),
        peer(sailor("gpt-neo-2.7-gh200", "sailor/sailor/Planner/simulations/configs/training_config_gpt_neo27.json", "GH-96"), "gpt", 64, 16, None, OneFOneB, false, SAILOR_WHY),
    ];
    Recipe {
        version: "v1",
        scenarios,
        published: AsPublished {
            galvatron_fits: GALVATRON_FITS,
            base: sizes_as_published,
            member: freeze,
        },
    }
}

const PD_WHY: &str = "A real per-layer profile of PipeDream's profiler.";
const PIPER_WHY: &str = "A real profile of Piper's planner input (its tensor-parallel and \
                         recomputation variants are not used).";
const DNNP_WHY: &str = "A real training layer graph of the dnn-partitioning placement paper.";
const DNNP_OPS_WHY: &str = "A real operator-level training graph of the dnn-partitioning \
                            placement paper (DawnPiper's graph extension).";
const GALVATRON_WHY: &str = "Galvatron's measured profiles, as its search engine reads them.";
const SAILOR_WHY: &str = "Sailor's measured per-layer profiles, on the cluster of its measured \
                          training runs.";

/// A member's sizes as v1 was published, before its memory levels are derived: the Sailor
/// ones ([`sailor_sizes_as_published`]) and the Galvatron ones
/// ([`galvatron_sizes_as_published`]).
fn sizes_as_published(inst: &mut pipeplan_formulations::Instance) {
    sailor_sizes_as_published(inst);
    galvatron_sizes_as_published(inst);
}

/// The Galvatron importer's words on the weights when v1 was generated.
const GALVATRON_WEIGHTS_V1: &str = "weights = parameter_size MB,";

/// A Galvatron member's sizes as v1 was published. v1 was generated when the Galvatron importer
/// stored the engine's `parameter_size` (4 bytes per parameter) as the weights at every
/// precision, with Adam's fp32 factor 2; under mixed precision it now stores the 2-byte weights
/// with factor 6 (the same 16 bytes per parameter, split as the runtime keeps them;
/// `docs/galvatron.md`, "Import"). For v1 the weights are doubled back (exact), the factor and
/// the note restored (`docs/suite.md`, "Versions"). Other instances are left unchanged.
fn galvatron_sizes_as_published(inst: &mut pipeplan_formulations::Instance) {
    use pipeplan_formulations::galvatron::import::WEIGHTS_NOTE;
    use pipeplan_formulations::instance::Precision;
    if !inst.source.contains(WEIGHTS_NOTE) {
        return;
    }
    if inst.training.precision == Some(Precision::Mixed) {
        for layer in &mut inst.model.layers {
            layer.weights *= 2.0;
        }
    }
    inst.training.optimizer_state_factor = 2.0;
    inst.source = inst.source.replace(WEIGHTS_NOTE, GALVATRON_WEIGHTS_V1);
}

/// The Sailor importer's notes on sizes and optimizer states when v1 was generated.
const SAILOR_SIZES_V1: &str = "Sizes: llm_info.json; weights = params_floats x 2 bytes (fp16), output = act_output_floats x 2 bytes per sample, saved = act_mem_floats x 4 bytes per sample (the profiler's allocation).";

/// A Sailor member's sizes as v1 was published. v1 was generated when the Sailor importer read
/// every profile as fp16 (`params_floats` and `act_output_floats` x 2 bytes, Adam's mixed-precision
/// states); it now reads the bytes `llm_info.json` records, fp32 for every profile, the data type
/// the runs trained in (`docs/sailor.md`). For v1 the weights and outputs are halved back (exact:
/// the fp32 bytes are 4 x whole element counts), the precision and state factor restored, and
/// the note keeps its published sentences (`docs/suite.md`, "Versions"). Other instances are left
/// unchanged.
fn sailor_sizes_as_published(inst: &mut pipeplan_formulations::Instance) {
    use pipeplan_formulations::import::sailor::{optimizer_states, sizes_note};
    use pipeplan_formulations::instance::Precision;
    let fp32 = sizes_note(Precision::Fp32);
    if inst.training.precision != Some(Precision::Fp32) || !inst.source.contains(&fp32) {
        return;
    }
    for layer in &mut inst.model.layers {
        layer.weights /= 2.0;
        layer.output /= 2.0;
        for t in &mut layer.tensor_parallel {
            t.weights /= 2.0;
        }
    }
    let sgd = inst.training.optimizer_state_factor == optimizer_states(Precision::Fp32, true).0;
    let (now, now_note) = optimizer_states(Precision::Fp32, sgd);
    let (then, then_note) = optimizer_states(Precision::Mixed, sgd);
    inst.training.optimizer_state_factor = then;
    inst.training.precision = Some(Precision::Mixed);
    inst.source = inst.source.replace(&fp32, SAILOR_SIZES_V1).replace(
        &format!("Optimizer {now_note} (optimizer_state_factor {now})."),
        &format!("Optimizer {then_note} (optimizer_state_factor {then})."),
    );
}

/// What the Galvatron importer's note called the engine arguments it did not read.
const UNREAD: &str = "Engine arguments not used by pipeplan: ";

/// How v1's Galvatron members fitted the `sequence` profile mode's curves when v1 was
/// published: exact least squares, about 1e-10 from the engine's `curve_fit` that pipeplan has
/// run since 2026-11-29 (`docs/suite.md`, "Versions").
const GALVATRON_FITS: pipeplan_formulations::galvatron::fit::FitMethod =
    pipeplan_formulations::galvatron::fit::FitMethod::LeastSquares;

/// A v1 member as v1 was published: its `source` ([`frozen_source`]), without the layer graph
/// (`extensions.dag`) the PipeDream importer has written since (its chain and cuts are
/// unchanged; without the graph, `pipedream` searches the chain's prefixes, as when v1 was
/// published), and without the GPU model (`cluster.gpu`) the Sailor importer has named since
/// (informational: no figure depends on it; the note names the GPU as before).
fn freeze(inst: &mut pipeplan_formulations::Instance) {
    inst.source = frozen_source(&inst.source);
    inst.extensions
        .remove(pipeplan_formulations::layer_order::KEY);
    inst.cluster.gpu = None;
}

/// A v1 member's `source` as v1 was published. v1 was generated when the Galvatron importer did
/// not read `fine_grained_mode` and `sp_space`, and its members' notes list them among the
/// arguments pipeplan does not use; the importer now reads them (`docs/galvatron.md`, "Coarse
/// search", "Ulysses"). v1's configs all set the defaults (1, `tp`), so its instances' numbers
/// are the same either way, and v1 keeps its published text (`docs/suite.md`, "Versions").
/// Other notes are returned unchanged.
pub(super) fn frozen_source(source: &str) -> String {
    // Arguments the importer has read since v1 was published (every v1 config sets them, to
    // the defaults: `fine_grained_mode` 1, `sp_space` tp).
    const NOW_READ: [&str; 2] = ["fine_grained_mode", "sp_space"];
    let Some(at) = source.find(UNREAD) else {
        return source.to_string();
    };
    let start = at + UNREAD.len();
    // Argument names hold no '.': the list ends at the first one.
    let Some(len) = source[start..].find('.') else {
        return source.to_string();
    };
    let mut args: Vec<&str> = source[start..start + len].split(", ").collect();
    let before = args.len();
    for now_read in NOW_READ {
        if !args.contains(&now_read) {
            args.push(now_read);
        }
    }
    if args.len() == before {
        return source.to_string();
    }
    args.sort_unstable();
    format!(
        "{}{}{}",
        &source[..start],
        args.join(", "),
        &source[start + len..]
    )
}

#[cfg(test)]
mod tests {
    use super::frozen_source;

    #[test]
    fn v1_notes_list_fine_grained_mode_as_published() {
        let now = "x. Engine arguments not used by pipeplan: embed_sdp, memory_profile_mode, \
                   worker. Benchmark";
        assert_eq!(
            frozen_source(now),
            "x. Engine arguments not used by pipeplan: embed_sdp, fine_grained_mode, \
             memory_profile_mode, sp_space, worker. Benchmark"
        );
        assert_eq!(frozen_source(&frozen_source(now)), frozen_source(now));
        assert_eq!(frozen_source("a generated model."), "a generated model.");
        assert_eq!(
            frozen_source("Engine arguments not used by pipeplan: worker."),
            "Engine arguments not used by pipeplan: fine_grained_mode, sp_space, worker."
        );
    }
}
