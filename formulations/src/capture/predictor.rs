//! CAPTURE's predictor (paper §III-B): the per-GPU peak memory of a stage config (layer group,
//! parallelism, degree) from the statistics, and the layer merger (§III-A3).
//!
//! - pipeline stage: M_p(l..l+n) = M_i(l) + sum_{k=l+1}^{l+n} M_a(k), per profiled batch size;
//! - target batch: the straight line through the two profiled batch sizes, sampled at the target;
//! - degrees with a table are predicted directly; a degree d > 4 without one by a + b ln(d)
//!   through d = 2 and d = 4 (both needed);
//! - optional 1F1B correction: the batch-proportional part (activations and buffers) scaled by
//!   min(m, P - s) / g, where g is the in-flight count the statistics were measured with.

use crate::capture::profile::{MemoryProfile, Parallelism};
use crate::error::InputError;

/// A stage's parallelism and degree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StageConfig {
    /// Parallelism.
    pub parallelism: Parallelism,
    /// Degree (GPUs of the stage).
    pub degree: u32,
}

impl StageConfig {
    /// The pipeline-only config (one GPU).
    pub const PIPELINE: StageConfig = StageConfig {
        parallelism: Parallelism::Pp,
        degree: 1,
    };
}

impl std::fmt::Display for StageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.parallelism {
            Parallelism::Pp => f.write_str("pp"),
            p => write!(f, "{p}{}", self.degree),
        }
    }
}

/// One (parallelism, degree) at both profiled batch sizes, as prefix sums.
#[derive(Debug, Clone)]
struct Fit {
    config: StageConfig,
    batch: [f64; 2],
    m_i: [Vec<f64>; 2],
    /// `prefix[b][k]` = sum of M_a over layers `0..k` at batch b.
    prefix: [Vec<f64>; 2],
}

/// Predicts stage memory for a (possibly merged) chain.
#[derive(Debug, Clone)]
pub struct Predictor {
    fits: Vec<Fit>,
    /// Original layer range `(first, last)` of every predictor layer (merged groups).
    groups: Vec<(usize, usize)>,
    target: f64,
    in_flight: Option<f64>,
}

impl Predictor {
    /// A predictor of `profile` at the target batch size (samples per micro-batch).
    pub fn new(profile: &MemoryProfile, target_batch: f64) -> Predictor {
        let n = profile.layers();
        let mut fits: Vec<Fit> = Vec::new();
        for t in &profile.tables {
            let config = StageConfig {
                parallelism: t.parallelism,
                degree: t.degree,
            };
            let mut prefix = vec![0.0; n + 1];
            for k in 0..n {
                prefix[k + 1] = prefix[k] + t.m_a[k];
            }
            match fits.iter_mut().find(|f| f.config == config) {
                Some(f) => {
                    f.batch[1] = t.batch;
                    f.m_i[1] = t.m_i.clone();
                    f.prefix[1] = prefix;
                }
                None => fits.push(Fit {
                    config,
                    batch: [t.batch, f64::NAN],
                    m_i: [t.m_i.clone(), Vec::new()],
                    prefix: [prefix, Vec::new()],
                }),
            }
        }
        Predictor {
            fits,
            groups: (0..n).map(|l| (l, l)).collect(),
            target: target_batch,
            in_flight: profile.in_flight,
        }
    }

    /// A predictor after merging the profile to `target_layers` layers (CAPTURE's layer merger:
    /// repeatedly merge the adjacent pair with the lowest merged pipeline M_i at the target batch,
    /// the first such pair on ties). Errors when `target_layers` is 0.
    pub fn merged(
        profile: &MemoryProfile,
        target_batch: f64,
        target_layers: usize,
    ) -> Result<Predictor, InputError> {
        if target_layers == 0 {
            return Err(InputError::field(
                "--set merge",
                "the layer merger needs at least 1 layer",
            ));
        }
        let mut prof = profile.clone();
        let mut groups: Vec<(usize, usize)> = (0..prof.layers()).map(|l| (l, l)).collect();
        while groups.len() > target_layers {
            let p = Predictor::new(&prof, target_batch);
            let best = (0..groups.len() - 1)
                .map(|l| {
                    (
                        l,
                        p.memory(l, l + 1, StageConfig::PIPELINE)
                            .unwrap_or(f64::INFINITY),
                    )
                })
                .fold(
                    (0, f64::INFINITY),
                    |acc, (l, v)| if v < acc.1 { (l, v) } else { acc },
                )
                .0;
            prof.merge_pair(best);
            groups[best].1 = groups[best + 1].1;
            groups.remove(best + 1);
        }
        let mut p = Predictor::new(&prof, target_batch);
        p.groups = groups;
        Ok(p)
    }

    /// Number of (merged) layers.
    pub fn layers(&self) -> usize {
        self.groups.len()
    }

    /// Original layer range `(first, last)` of (merged) layer `l`.
    pub fn group(&self, l: usize) -> (usize, usize) {
        self.groups[l]
    }

    /// The target batch size.
    pub fn target_batch(&self) -> f64 {
        self.target
    }

    /// Micro-batches in flight during profiling, when known (needed by the 1F1B correction).
    pub fn in_flight(&self) -> Option<f64> {
        self.in_flight
    }

    /// Whether `config` can be predicted: a table for it, or (degree > 4) tables at 2 and 4.
    pub fn supports(&self, config: StageConfig) -> bool {
        self.fit(config).is_some()
            || (config.degree > 4
                && self.fit(with_degree(config, 2)).is_some()
                && self.fit(with_degree(config, 4)).is_some())
    }

    /// Every predictable config with degree <= `max_degree`, in canonical order: pp, then for
    /// each power-of-two degree 2, 4, ...: dp, tp.
    pub fn configs(&self, max_degree: u32) -> Vec<StageConfig> {
        let mut out = vec![StageConfig::PIPELINE];
        let mut d = 2;
        while d <= max_degree {
            for parallelism in [Parallelism::Dp, Parallelism::Tp] {
                let c = StageConfig {
                    parallelism,
                    degree: d,
                };
                if self.supports(c) {
                    out.push(c);
                }
            }
            d *= 2;
        }
        out
    }

    fn fit(&self, config: StageConfig) -> Option<&Fit> {
        self.fits.iter().find(|f| f.config == config)
    }

    /// The fixed part and the batch-proportional part of the prediction of layers
    /// `first..=last` (predictor indices) at the target batch: memory = fixed + proportional.
    pub fn parts(&self, first: usize, last: usize, config: StageConfig) -> Option<(f64, f64)> {
        if let Some(f) = self.fit(config) {
            let v = |b: usize| f.m_i[b][first] + f.prefix[b][last + 1] - f.prefix[b][first + 1];
            let (v0, v1) = (v(0), v(1));
            let slope = (v1 - v0) / (f.batch[1] - f.batch[0]);
            let fixed = v0 - slope * f.batch[0];
            return Some((fixed, slope * self.target));
        }
        if config.degree > 4 {
            let (a2, b2) = self.parts(first, last, with_degree(config, 2))?;
            let (a4, b4) = self.parts(first, last, with_degree(config, 4))?;
            // a + b ln d through d = 2 and d = 4, sampled at d.
            let x = (config.degree as f64 / 2.0).log2();
            return Some((a2 + (a4 - a2) * x, b2 + (b4 - b2) * x));
        }
        None
    }

    /// Predicted per-GPU peak memory of layers `first..=last` (predictor indices) under `config`.
    pub fn memory(&self, first: usize, last: usize, config: StageConfig) -> Option<f64> {
        self.parts(first, last, config).map(|(a, b)| a + b)
    }

    /// Prediction with the 1F1B correction for pipeline position `position` (0-based) of
    /// `positions`, with `m` micro-batches: the batch-proportional part times
    /// min(m, P - s) / g. `None` when the config is not predictable or g is unknown.
    pub fn memory_1f1b(
        &self,
        first: usize,
        last: usize,
        config: StageConfig,
        position: usize,
        positions: usize,
        m: u32,
    ) -> Option<f64> {
        let g = self.in_flight?;
        let (a, b) = self.parts(first, last, config)?;
        let kept = (m as f64).min((positions - position) as f64);
        Some(a + b * kept / g)
    }
}

fn with_degree(c: StageConfig, degree: u32) -> StageConfig {
    StageConfig {
        parallelism: c.parallelism,
        degree,
    }
}
