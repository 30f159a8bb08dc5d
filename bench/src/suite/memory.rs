//! Memory levels: the per-GPU budget of a suite member, derived from the instance itself so
//! that "tight" means the same thing for a CNN at 1000 px and for a 175B-parameter model
//! (`docs/suite.md`, "Memory levels").
//!
//! Three anchors, all computed by existing code on the instance (any budget will do: none of
//! them depends on it):
//!
//! - `lower` — the certificate's bound (`evaluate::explain::certificate`): model states spread
//!   evenly over every GPU; no plan of the evaluator's model needs less;
//! - `pipeline` — the evaluated peak of `balanced-memory`'s plan: the least memory a plain
//!   contiguous pipeline (one GPU per stage, no recomputation, swap or sharding) needs;
//! - `time` — the evaluated peak of `balanced-time`'s plan: the compute-balanced partition.
//!
//! Levels: tight = (lower + pipeline) / 2 (no plain pipeline fits: only plans that shard,
//! split, recompute or swap do); moderate = pipeline (the best plain pipeline just fits);
//! loose = max(2 x pipeline, time) (the compute-balanced partition fits too). Each is rounded
//! up to a multiple of [`GRANULE`].

use super::SuiteError;
use pipeplan_formulations::evaluate::explain::certificate;
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::SolveOptions;
use pipeplan_solvers::{harness, registry};

/// Budgets are multiples of 16 MiB, so files and names stay readable.
pub const GRANULE: f64 = 16.0 * 1024.0 * 1024.0;

/// How much memory a member's GPUs have, relative to what its model needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemoryClass {
    /// Half-way between the lower bound and the best plain pipeline: few algorithms fit.
    Tight,
    /// The best plain pipeline's peak: memory-aware partitions fit, most others do not.
    Moderate,
    /// Twice that, and at least the compute-balanced partition's peak: memory rarely binds.
    Loose,
}

impl MemoryClass {
    /// Every class, tightest first.
    pub const ALL: [MemoryClass; 3] = [
        MemoryClass::Tight,
        MemoryClass::Moderate,
        MemoryClass::Loose,
    ];

    /// The name used in member names and tags.
    pub fn name(self) -> &'static str {
        match self {
            MemoryClass::Tight => "tight",
            MemoryClass::Moderate => "moderate",
            MemoryClass::Loose => "loose",
        }
    }
}

/// The three anchors of an instance (bytes per GPU).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchors {
    /// The certificate's lower bound on the busiest GPU's memory in any plan.
    pub lower: f64,
    /// The evaluated peak of `balanced-memory`'s plan.
    pub pipeline: f64,
    /// The evaluated peak of `balanced-time`'s plan.
    pub time: f64,
}

/// The evaluated peak memory of `algo`'s plan for `inst`.
fn evaluated_peak(inst: &Instance, algo: &str) -> Result<f64, SuiteError> {
    let invalid = |what: String| SuiteError::Invalid {
        path: inst.name.clone(),
        what,
    };
    let a = registry::by_name(algo)
        .ok_or_else(|| invalid(format!("no algorithm {algo} (a bug in the suite recipe)")))?;
    let sol = harness::run(a.as_ref(), inst, &SolveOptions::default())
        .map_err(|e| invalid(format!("memory anchor {algo}: {e}")))?;
    sol.evaluated
        .map(|e| e.max_memory)
        .ok_or_else(|| invalid(format!("memory anchor {algo}: the plan was not evaluated")))
}

impl Anchors {
    /// The anchors of `inst` (its memory budget is not used).
    pub fn of(inst: &Instance) -> Result<Anchors, SuiteError> {
        Ok(Anchors {
            lower: certificate(inst).memory_lower_bound,
            pipeline: evaluated_peak(inst, "balanced-memory")?,
            time: evaluated_peak(inst, "balanced-time")?,
        })
    }

    /// The budget of `class`, before rounding.
    fn exact(&self, class: MemoryClass) -> f64 {
        match class {
            MemoryClass::Tight => (self.lower + self.pipeline) / 2.0,
            MemoryClass::Moderate => self.pipeline,
            MemoryClass::Loose => (2.0 * self.pipeline).max(self.time),
        }
    }

    /// The budget of `class` (bytes per GPU), rounded up to a multiple of [`GRANULE`].
    pub fn budget(&self, class: MemoryClass) -> f64 {
        (self.exact(class) / GRANULE).ceil().max(1.0) * GRANULE
    }

    /// One sentence stating the budget of `class` and how it follows from the anchors.
    pub fn sentence(&self, class: MemoryClass) -> String {
        let lower = format!(
            "lower bound {} (the certificate's model states over all GPUs)",
            fmt_bytes(self.lower)
        );
        let pipeline = format!(
            "plain-pipeline peak {} (balanced-memory's plan, evaluated)",
            fmt_bytes(self.pipeline)
        );
        let rule = match class {
            MemoryClass::Tight => format!("({lower} + {pipeline}) / 2"),
            MemoryClass::Moderate => pipeline,
            MemoryClass::Loose => format!(
                "max(2 x {pipeline}, compute-balanced peak {} (balanced-time's plan, evaluated))",
                fmt_bytes(self.time)
            ),
        };
        format!(
            "Memory level {}: budget {} per GPU = {rule}, rounded up to 16 MiB (docs/suite.md, \
             \"Memory levels\").",
            class.name(),
            fmt_bytes(self.budget(class))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_rounded_up() {
        let gib = 1024.0 * 1024.0 * 1024.0;
        let a = Anchors {
            lower: 0.5 * gib,
            pipeline: 8.3 * gib,
            time: 42.5 * gib,
        };
        let [t, m, l] = MemoryClass::ALL.map(|c| a.budget(c));
        assert!(t < m && m < l, "{t} {m} {l}");
        assert!((4.4 * gib..4.4 * gib + GRANULE).contains(&t), "{t}");
        assert!(m >= a.pipeline && m - a.pipeline < GRANULE);
        assert_eq!(l, (42.5 * gib / GRANULE).ceil() * GRANULE);
        for b in [t, m, l] {
            assert_eq!(b % GRANULE, 0.0);
        }
        // Without a compute-balanced outlier, loose is twice the pipeline's peak.
        let b = Anchors {
            time: 9.0 * gib,
            ..a
        };
        assert_eq!(
            b.budget(MemoryClass::Loose),
            (16.6 * gib / GRANULE).ceil() * GRANULE
        );
    }
}
