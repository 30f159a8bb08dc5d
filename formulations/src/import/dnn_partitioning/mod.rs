//! dnn-partitioning JSON (msr-fiddle/dnn-partitioning, "Efficient Algorithms for Device
//! Placement of DNN Graph Operators", NeurIPS 2020): layer graphs, and operator graphs too.
//!
//! # Format
//!
//! As described in the repository's README ("Input format") and read by `from_json` in
//! `throughput-dp/dp.cpp`:
//!
//! ```json
//! {"maxSizePerFPGA": 17185374208.0, "maxFPGAs": 6, "maxCPUs": 1,
//!  "nodes": [{"name": "node77", "id": 77, "supportedOnFpga": 1, "cpuLatency": 12.36,
//!             "fpgaLatency": 1.236, "isBackwardNode": 0, "colorClass": 77, "size": 205524992.0},
//!            {"name": "node77grad", "id": 178, "supportedOnFpga": 1, "cpuLatency": 14.42,
//!             "fpgaLatency": 1.442, "isBackwardNode": 1, "colorClass": 77, "size": 205524992.0}],
//!  "edges": [{"sourceId": 76, "destId": 77, "cost": 0.0478515625, "size": 102760448.0}]}
//! ```
//!
//! - `maxSizePerFPGA`: bytes of accelerator memory; `maxFPGAs`: accelerators ("FPGA" stands for
//!   any accelerator; the layer graphs hold GPU profiles); `maxCPUs`: CPU cores (unused here).
//! - Nodes: `supportedOnFpga` and `isBackwardNode` are booleans or 0/1; `fpgaLatency` is the
//!   accelerator time, `cpuLatency` the CPU time (unused); `size` is the bytes the node takes on
//!   an accelerator (optional in `dp.cpp`, default 0); nodes sharing a `colorClass` (optional)
//!   must be colocated. Training graphs pair each forward node with backward ("grad") nodes of
//!   the same colour class.
//! - Edges: `cost` is the time to move the source's output to CPU memory (unused); `size`, the
//!   bytes of that output, is optional debug information that the published inputs carry.
//!
//! # Units
//!
//! Latencies are **milliseconds**: the layer graphs copy PipeDream's per-layer profile (ResNet-50
//! `node77` has `fpgaLatency` 1.236, PipeDream's forward time for it, and `cpuLatency` ten times
//! that). Sizes are **bytes** (README). The batch size is not recorded.
//!
//! # Mapping to a chain
//!
//! As `dp.cpp` does, the forward nodes of one colour class are fused (a node without a class is
//! its own class), backward nodes whose class has no forward node get an artificial forward node
//! wired like the mirror image of their backward edges, and strongly connected components of the
//! fused forward graph are fused too. Each fused group is one layer: `forward` = sum of its
//! forward nodes' `fpgaLatency`, `backward` = sum of its classes' backward nodes' `fpgaLatency`
//! (0 for inference graphs). A forward node's output tensor has the largest `size` among its
//! out-edges to forward nodes (the node's own `size` when those edges carry none, 0 for a sink);
//! `output` = the bytes of the group's tensors read outside the group, `cut` = bytes of every
//! tensor live across the cut. `weights`: the layer graphs' `size` is activation + parameters,
//! so a node contributes `size` − its output tensor; a zero-time node without inputs (operator
//! graphs list each weight as one) contributes its whole `size`. Groups are ordered
//! topologically, ties going to the lowest id among their nodes that have inputs.

mod format;
mod fusion;
mod graph;
mod layers;
#[cfg(test)]
mod tests;

use super::{ImportOptions, Profile, Source};
use crate::error::InputError;
use crate::instance::Instance;

/// Imports a dnn-partitioning JSON (same as [`super::import`] with [`Source::DnnPartitioning`]).
pub fn import(text: &str, opts: &ImportOptions) -> Result<Instance, InputError> {
    super::import(Source::DnnPartitioning, text, opts)
}

/// Reads a dnn-partitioning file as a profile: checked (`format`), fused into layers (`fusion`),
/// chained (`layers`), with DawnPiper's graph extension (`graph`).
pub(crate) fn read(text: &str) -> Result<Profile, InputError> {
    let g = format::check(text)?;
    let fused = fusion::fuse(&g);
    let chain = layers::chain(&g, &fused);
    let f = &g.file;
    let n = g.len();
    let forward_nodes = (0..n).filter(|&v| g.forward(v)).count();
    let unsupported = f.nodes.iter().filter(|n| !n.supported_on_fpga).count();
    let mut p = Profile::new(
        "dnn-partitioning",
        (
            1.0,
            "fpgaLatency read as milliseconds (the layer graphs copy PipeDream's per-layer ms); \
             cpuLatency and edge cost are not used."
                .to_string(),
        ),
    );
    p.extensions.insert(
        crate::dawnpiper::graph::KEY.to_string(),
        graph::graph_extension(&chain.layers, &chain.order, &fused.edges, |c| {
            chain.backward[c]
                .iter()
                .map(|&v| (g.name(v), f.nodes[v].id))
                .collect()
        }),
    );
    let (classes, orphans, layers_n) = (fused.classes, fused.orphans, fused.layers);
    let parameter_nodes = chain.parameter_nodes;
    p.layers = chain.layers;
    p.gpus = Some(f.max_fpgas as u32);
    p.memory = Some(f.max_size_per_fpga);
    p.notes.push(format!(
        "dnn-partitioning JSON (msr-fiddle/dnn-partitioning, README \"Input format\" and \
         throughput-dp/dp.cpp): {forward_nodes} forward and {} backward node(s), {} edges. As \
         dp.cpp does, forward nodes of one colorClass are fused ({classes} class(es)), \
         {orphans} class(es) of backward nodes without a forward node get an artificial one, \
         and strongly connected components are fused, giving {layers_n} layers in a \
         topological order (ties: lowest node id). forward / backward = summed fpgaLatency of \
         the forward / backward nodes. A node's output tensor = the largest edge size (bytes) \
         on its out-edges to forward nodes (its own size when they carry none, 0 for a sink); \
         output = bytes of the layer's tensors read by other layers; cut = bytes of every \
         tensor live across a cut after the layer, each counted once; weights = size minus \
         the output tensor ({parameter_nodes} zero-time input-less node(s) count their whole \
         size as weights); model.input = 0. {unsupported} node(s) marked not supported on an \
         accelerator keep their fpgaLatency. dnn-partitioning's maxFPGAs = {}, maxSizePerFPGA \
         = {} bytes, maxCPUs = {}.",
        n - forward_nodes,
        f.edges.len(),
        f.max_fpgas,
        f.max_size_per_fpga,
        f.max_cpus,
    ));
    Ok(p)
}
