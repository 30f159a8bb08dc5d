//! The layer chain the cost models read: an instance's layers with every default resolved,
//! scaled to the trained micro-batch and under the instance's calibration.

use super::{Instance, TensorParallel};
use std::collections::BTreeMap;

/// The layer chain with every default resolved and scaled to the trained micro-batch:
/// the numbers all cost models work from. Index `l` is layer `l` (0-based); `a[0]` is the model
/// input and `a[l + 1]` the output of layer `l`.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// Forward times u_F (ms).
    pub forward: Vec<f64>,
    /// Backward times u_B (ms).
    pub backward: Vec<f64>,
    /// Parameter bytes W.
    pub weights: Vec<f64>,
    /// Activations: `act[0]` = input, `act[l + 1]` = output of layer l (bytes).
    pub act: Vec<f64>,
    /// Bytes kept for the backward of each layer.
    pub saved: Vec<f64>,
    /// Bytes crossing a cut after each layer.
    pub cut: Vec<f64>,
    /// Prefix sums of forward + backward: `prefix[l]` = U(0, l - 1).
    prefix: Vec<f64>,
    /// Per measured tensor-parallel degree, the layers' numbers on one GPU of the group.
    pub tensor_parallel: BTreeMap<u32, MeasuredDegree>,
}

/// Every layer measured on a tensor-parallel group (from
/// [`Layer::tensor_parallel`](super::Layer::tensor_parallel)), scaled like the rest of the
/// [`Chain`]; index `l` is layer `l`, numbers per GPU of the group.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredDegree {
    /// Forward times (ms).
    pub forward: Vec<f64>,
    /// Backward times (ms).
    pub backward: Vec<f64>,
    /// Parameter bytes per GPU.
    pub weights: Vec<f64>,
    /// Bytes kept for the backward per GPU.
    pub saved: Vec<f64>,
}

impl Chain {
    pub(super) fn new(inst: &Instance) -> Chain {
        let k = inst.batch_scale();
        let cal = inst.calibration();
        let (time, stored) = (k * cal.compute_factor, k * cal.activation_factor);
        let layers = &inst.model.layers;
        let mut act = Vec::with_capacity(layers.len() + 1);
        act.push(inst.model.input * k);
        act.extend(layers.iter().map(|l| l.output * k));
        let saved = layers
            .iter()
            .enumerate()
            .map(|(i, l)| l.saved.unwrap_or(layers_input(inst, i)) * stored)
            .collect();
        let cut = layers
            .iter()
            .map(|l| l.cut.unwrap_or(l.output) * k)
            .collect();
        let forward: Vec<f64> = layers.iter().map(|l| l.forward * time).collect();
        let backward: Vec<f64> = layers.iter().map(|l| l.backward * time).collect();
        let mut prefix = vec![0.0; layers.len() + 1];
        for i in 0..layers.len() {
            prefix[i + 1] = prefix[i] + forward[i] + backward[i];
        }
        // Validation makes every layer list the same degrees: take layer 0's.
        let degrees = layers.first().map_or(&[][..], |l| &l.tensor_parallel[..]);
        let tensor_parallel = degrees
            .iter()
            .map(|d| {
                let at = |f: &dyn Fn(&TensorParallel) -> f64| -> Vec<f64> {
                    layers
                        .iter()
                        .map(|l| {
                            l.tensor_parallel
                                .iter()
                                .find(|t| t.degree == d.degree)
                                .map_or(0.0, f)
                        })
                        .collect()
                };
                let measured = MeasuredDegree {
                    forward: at(&|t| t.forward * time),
                    backward: at(&|t| t.backward * time),
                    weights: at(&|t| t.weights),
                    saved: at(&|t| t.saved * stored),
                };
                (d.degree, measured)
            })
            .collect();
        Chain {
            forward,
            backward,
            weights: layers.iter().map(|l| l.weights).collect(),
            act,
            saved,
            cut,
            prefix,
            tensor_parallel,
        }
    }

    /// The chain of blocks of consecutive layers, block `b` ending at layer `ends[b]` (increasing,
    /// the last one `len() - 1`): times, weights and stored bytes add up, a block's output and cut
    /// are its last layer's. Every quantity of a stage made of whole blocks equals that of the same
    /// layers here. Tensor-parallel measurements are not carried over.
    pub fn merged(&self, ends: &[usize]) -> Chain {
        let mut merged = Chain {
            forward: Vec::with_capacity(ends.len()),
            backward: Vec::with_capacity(ends.len()),
            weights: Vec::with_capacity(ends.len()),
            act: vec![self.act[0]],
            saved: Vec::with_capacity(ends.len()),
            cut: Vec::with_capacity(ends.len()),
            prefix: vec![0.0],
            tensor_parallel: BTreeMap::new(),
        };
        let mut first = 0;
        for &last in ends {
            let sum = |v: &[f64]| v[first..=last].iter().sum::<f64>();
            merged.forward.push(sum(&self.forward));
            merged.backward.push(sum(&self.backward));
            merged.weights.push(sum(&self.weights));
            merged.saved.push(sum(&self.saved));
            merged.act.push(self.act[last + 1]);
            merged.cut.push(self.cut[last]);
            merged.prefix.push(self.prefix[last + 1]);
            first = last + 1;
        }
        merged
    }

    /// The layers measured on tensor-parallel groups of `degree` GPUs, if the instance has them.
    pub fn measured(&self, degree: u32) -> Option<&MeasuredDegree> {
        self.tensor_parallel.get(&degree)
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.forward.len()
    }

    /// True when the chain has no layer (never for a validated instance).
    pub fn is_empty(&self) -> bool {
        self.forward.is_empty()
    }

    /// U(k..l) = sum of forward + backward times of layers `k..l` (half-open).
    pub fn compute(&self, k: usize, l: usize) -> f64 {
        self.prefix[l] - self.prefix[k]
    }

    /// Total parameter bytes of layers `k..l` (half-open).
    pub fn weights(&self, k: usize, l: usize) -> f64 {
        self.weights[k..l].iter().sum()
    }

    /// Total saved bytes of layers `k..l` (half-open).
    pub fn saved(&self, k: usize, l: usize) -> f64 {
        self.saved[k..l].iter().sum()
    }
}

fn layers_input(inst: &Instance, i: usize) -> f64 {
    if i == 0 {
        inst.model.input
    } else {
        inst.model.layers[i - 1].output
    }
}
