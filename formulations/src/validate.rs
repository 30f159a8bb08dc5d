//! Validation of instances: every rule of the format, with the field named in the error.

use crate::error::InputError;
use crate::instance::{Cluster, Instance, Layer, Model, Training, FORMAT};

/// Checks the `format` tag of a raw JSON document before its fields are read, so that a file of
/// another major version is rejected with a message about the version, not about its fields.
pub fn check_format_tag(doc: &serde_json::Value) -> Result<(), InputError> {
    let Some(tag) = doc.get("format") else {
        return Err(InputError::field(
            "format",
            format!("missing; an instance file starts with \"format\": \"{FORMAT}\""),
        ));
    };
    let Some(tag) = tag.as_str() else {
        return Err(InputError::field(
            "format",
            format!("expected the string \"{FORMAT}\", found {tag}"),
        ));
    };
    check_format(tag)
}

fn check_format(tag: &str) -> Result<(), InputError> {
    if tag == FORMAT {
        return Ok(());
    }
    match tag.strip_prefix("pipeplan/instance@") {
        Some(version) => {
            let major = version.split('.').next().unwrap_or(version);
            if major == "1" {
                // 1.x minor revisions only add optional fields.
                Ok(())
            } else {
                Err(InputError::field(
                    "format",
                    format!(
                        "unsupported version {tag:?}: this pipeplan reads major version 1 \
                         (\"{FORMAT}\")"
                    ),
                ))
            }
        }
        None => Err(InputError::field(
            "format",
            format!("{tag:?} is not a pipeplan instance format; expected \"{FORMAT}\""),
        )),
    }
}

/// Runs every rule and keeps the first failure.
struct Checker {
    first: Option<InputError>,
}

impl Checker {
    fn fail(&mut self, field: String, message: String) {
        if self.first.is_none() {
            self.first = Some(InputError::field(field, message));
        }
    }

    /// A finite, non-negative number; `what` is "time", "size"...
    fn non_negative(&mut self, field: impl FnOnce() -> String, what: &str, unit: &str, v: f64) {
        if !v.is_finite() {
            self.fail(field(), format!("{what} is not a finite number ({v})"));
        } else if v < 0.0 {
            self.fail(field(), format!("negative {what} {v} {unit}"));
        }
    }

    fn positive(&mut self, field: impl FnOnce() -> String, what: &str, unit: &str, v: f64) {
        if !v.is_finite() {
            self.fail(field(), format!("{what} is not a finite number ({v})"));
        } else if v <= 0.0 {
            self.fail(
                field(),
                format!("{what} must be positive, found {v} {unit}"),
            );
        }
    }
}

impl Checker {
    fn model(&mut self, m: &Model) {
        if m.batch == 0 {
            self.fail("model.batch".into(), "must be at least 1 sample".into());
        }
        self.non_negative(|| "model.input".into(), "size", "bytes", m.input);
        if m.layers.is_empty() {
            self.fail(
                "model.layers".into(),
                "the chain has no layer; at least one is needed".into(),
            );
        }
        for (i, l) in m.layers.iter().enumerate() {
            self.layer(i, l, &m.layers[0]);
        }
    }

    /// Layer `i`, whose tensor-parallel degrees must be those of `first`, the chain's first.
    fn layer(&mut self, i: usize, l: &Layer, first: &Layer) {
        let f = |name: &str| format!("model.layers[{i}].{name}");
        self.non_negative(|| f("forward"), "time", "ms", l.forward);
        self.non_negative(|| f("backward"), "time", "ms", l.backward);
        self.non_negative(|| f("weights"), "size", "bytes", l.weights);
        self.non_negative(|| f("output"), "size", "bytes", l.output);
        if let Some(s) = l.saved {
            self.non_negative(|| f("saved"), "size", "bytes", s);
        }
        if let Some(s) = l.cut {
            self.non_negative(|| f("cut"), "size", "bytes", s);
        }
        let mut degrees = Vec::new();
        for (j, tp) in l.tensor_parallel.iter().enumerate() {
            let g = |name: &str| format!("model.layers[{i}].tensor_parallel[{j}].{name}");
            if tp.degree < 2 {
                self.fail(
                    g("degree"),
                    format!("must be at least 2 GPUs, found {}", tp.degree),
                );
            } else if degrees.contains(&tp.degree) {
                self.fail(
                    g("degree"),
                    format!("degree {} is measured twice", tp.degree),
                );
            }
            degrees.push(tp.degree);
            self.non_negative(|| g("forward"), "time", "ms", tp.forward);
            self.non_negative(|| g("backward"), "time", "ms", tp.backward);
            self.non_negative(|| g("weights"), "size", "bytes", tp.weights);
            self.non_negative(|| g("saved"), "size", "bytes", tp.saved);
        }
        degrees.sort_unstable();
        if i > 0 {
            let mut first: Vec<u32> = first.tensor_parallel.iter().map(|t| t.degree).collect();
            first.sort_unstable();
            if degrees != first {
                self.fail(
                    format!("model.layers[{i}].tensor_parallel"),
                    format!(
                        "measured at degrees {degrees:?} but layer 0 at {first:?}; every layer \
                         must be measured at the same tensor-parallel degrees"
                    ),
                );
            }
        }
    }

    fn cluster(&mut self, cl: &Cluster) {
        if cl.gpus == 0 {
            self.fail(
                "cluster.gpus".into(),
                "zero GPUs; at least one is needed".into(),
            );
        }
        if let Some(n) = cl.gpus_per_node {
            if n == 0 {
                self.fail("cluster.gpus_per_node".into(), "must be at least 1".into());
            } else if cl.gpus % n != 0 {
                self.fail(
                    "cluster.gpus_per_node".into(),
                    format!(
                        "{n} does not divide cluster.gpus = {}; nodes must be equal",
                        cl.gpus
                    ),
                );
            }
        }
        self.positive(|| "cluster.memory".into(), "memory", "bytes", cl.memory);
        self.positive(
            || "cluster.bandwidth.intra_node".into(),
            "bandwidth",
            "bytes/s",
            cl.bandwidth.intra_node,
        );
        if let Some(b) = cl.bandwidth.inter_node {
            self.positive(
                || "cluster.bandwidth.inter_node".into(),
                "bandwidth",
                "bytes/s",
                b,
            );
        }
        if let Some(b) = cl.pcie {
            self.positive(|| "cluster.pcie".into(), "bandwidth", "bytes/s", b);
        }
    }

    fn training(&mut self, t: &Training) {
        if t.micro_batch == Some(0) {
            self.fail(
                "training.micro_batch".into(),
                "must be at least 1 sample".into(),
            );
        }
        if t.micro_batches == Some(0) {
            self.fail("training.micro_batches".into(), "must be at least 1".into());
        }
        if t.weight_versions == 0 {
            self.fail(
                "training.weight_versions".into(),
                "must be at least 1".into(),
            );
        }
        self.non_negative(
            || "training.optimizer_state_factor".into(),
            "factor",
            "",
            t.optimizer_state_factor,
        );
    }
}

/// Validates an instance; returns the first problem found, naming its field.
pub fn validate(inst: &Instance) -> Result<(), InputError> {
    check_format(&inst.format)?;
    let mut c = Checker { first: None };
    c.model(&inst.model);
    c.cluster(&inst.cluster);
    c.training(&inst.training);
    if let (None, Some(cal)) = (&c.first, &inst.calibration) {
        cal.check("calibration")?;
    }
    if c.first.is_none() {
        crate::layer_order::Dag::of(inst)?;
        if inst.extensions.contains_key(crate::dawnpiper::graph::KEY) {
            crate::dawnpiper::graph::Graph::of(inst)?;
        }
    }
    match c.first {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
