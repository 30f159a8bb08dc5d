//! mcap-bo: mCAP's Bayesian optimization over pipeline-only partitions, with the egobox-ego crate.
//!
//! As in the public mCAP code, a point is P - 1 integers in [1, 100]: entry k is the percentage
//! of the layers still unplaced that GPU k takes (at least one, leaving one per later GPU), so
//! every point is a valid partition ([`decode`]). egobox's `Egor` optimizer runs on that integer
//! space (`XType::Int(1, 100)` per variable): `initial` seeded Latin-hypercube points, then up to
//! `iterations` points chosen by expected improvement (`InfillStrategy::EI`) under its Gaussian
//! process (constant mean, squared-exponential kernel, hyperparameters by likelihood, refitted
//! from the previous ones plus [`GP_STARTS`] extra starts), maximized from `candidates` starts.
//! The objective is the predicted peak memory; the plan returned is the best evaluated one in the
//! family's tie-break order. Seeded by `SolveOptions.seed`; environment flags are ignored.
//!
//! egobox skips a proposal that repeats an evaluated point and stops ("SolverConverged") after
//! three in a row, so a run can make fewer than `initial + iterations` evaluations;
//! [`BoResult::evaluations`] counts the objective's actual calls. The time limit is egobox's
//! `timeout`, checked between guided points: the initial design and the first guided point are
//! always evaluated.
//!
//! Side effects of egobox 0.42 on the process: its first run installs a Ctrl-C handler (Ctrl-C
//! then cancels a running optimization instead of ending the process) and, when no logger is
//! set, an `env_logger` on stdout at level `error` (`EGOBOX_LOG` overrides).

use crate::capture::space::{Choice, Key, PlanSpace};
use egobox_ego::{
    EgorBuilder, InfillStrategy, RuntimeFlags, TerminationReason, TerminationStatus, XType,
};
use ndarray::{Array2, ArrayView2};
use std::cell::RefCell;
use std::time::Instant;

/// Budget and seed of one run.
#[derive(Debug, Clone, Copy)]
pub struct BoSettings {
    /// Random initial points (egobox's seeded Latin-hypercube design).
    pub initial: usize,
    /// Guided points (expected improvement).
    pub iterations: usize,
    /// Seed.
    pub seed: u64,
    /// Starts of the multistart maximization of expected improvement per guided point (egobox's
    /// `n_start`).
    pub candidates: usize,
    /// Wall-clock deadline. egobox checks it between guided points only: the initial design is
    /// always evaluated in full.
    pub deadline: Option<Instant>,
}

/// Outcome: the best plan by the family's tie-break order, and the evaluations made.
#[derive(Debug, Clone)]
pub struct BoResult {
    /// Best plan evaluated.
    pub best: Key,
    /// Objective evaluations (calls of the objective, one per point).
    pub evaluations: usize,
    /// Points in egobox's own history (equal to `evaluations`: a cross-check of the counter);
    /// `None` when egobox failed or was not run (one GPU).
    pub history: Option<usize>,
    /// True when the deadline cut the guided phase short.
    pub timed_out: bool,
    /// Why egobox stopped (for example `SolverConverged` when it could not propose a new point).
    pub termination: String,
    /// egobox's error, when it failed: the result is then the best point evaluated before it.
    pub error: Option<String>,
}

/// Largest percentage of the remaining layers a GPU can take.
const PERCENT: i32 = 100;
/// Extra starts of the GP's likelihood maximization per fit (egobox's default is 10; the fit is
/// most of an iteration's cost). Not 1: egobox-gp 0.37 draws a single extra start from an
/// unseeded generator (`optimization.rs`, `prepare_multistart`), which breaks reproducibility;
/// two or more come from a seeded Latin hypercube.
pub const GP_STARTS: usize = 2;

/// The partition a point encodes (stage ends over `space.gpus` GPUs).
pub fn decode(space: &PlanSpace, x: &[i64]) -> Vec<Choice> {
    let (l, p) = (space.layers, space.gpus);
    let mut out = Vec::with_capacity(p);
    let mut first = 0;
    for (k, &pct) in x.iter().enumerate().take(p - 1) {
        let remaining = l - first;
        let later = p - k - 1;
        let take = ((pct as f64 / 100.0) * remaining as f64).round() as usize;
        let take = take.clamp(1, remaining - later);
        out.push((first + take - 1, 0));
        first += take;
    }
    out.push((l - 1, 0));
    out
}

/// What the objective has seen: its call count and the best plan so far.
#[derive(Default)]
struct Record {
    evaluations: usize,
    best: Option<Key>,
}

impl Record {
    /// Evaluates one point: its plan's peak, remembered when it is the best so far.
    fn eval(&mut self, space: &PlanSpace, x: &[i64]) -> f64 {
        let key = Key::of(space, &decode(space, x));
        let peak = key.peak();
        self.evaluations += 1;
        if self.best.as_ref().is_none_or(|b| key.rank(b).is_lt()) {
            self.best = Some(key);
        }
        peak
    }
}

/// The point that splits the layers evenly (each GPU takes 1 / (GPUs left) of the rest).
fn even_split(dim: usize) -> Vec<i64> {
    (0..dim)
        .map(|k| (100.0 / (dim + 1 - k) as f64).round() as i64)
        .collect()
}

/// Runs the optimization on a pipeline-only space. Never fails: should egobox return an error,
/// the result is the best point evaluated before it (the even split when there is none) and
/// [`BoResult::error`] says why.
pub fn optimize(space: &PlanSpace, s: BoSettings) -> BoResult {
    let dim = space.gpus - 1;
    let record = RefCell::new(Record::default());
    if dim == 0 {
        // One GPU: a single partition, nothing to optimize (egobox needs a variable).
        record.borrow_mut().eval(space, &[]);
        let r = record.into_inner();
        return BoResult {
            best: r.best.expect("one evaluation"),
            evaluations: r.evaluations,
            history: None,
            timed_out: false,
            termination: "single partition".into(),
            error: None,
        };
    }
    let objective = |x: &ArrayView2<f64>| -> Array2<f64> {
        let mut rec = record.borrow_mut();
        let mut y = Array2::zeros((x.nrows(), 1));
        for (i, row) in x.rows().into_iter().enumerate() {
            // egobox passes integer variables as whole floats; rounding only guards the cast.
            let point: Vec<i64> = row.iter().map(|v| v.round() as i64).collect();
            y[[i, 0]] = rec.eval(space, &point);
        }
        y
    };
    let mut timed_out = false;
    let timeout = match s.deadline {
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now()).as_secs_f64();
            // Out of time already: egobox still evaluates its initial design and one guided point
            // (its timeout must be positive).
            Some(left.max(1e-9))
        }
        None => None,
    };
    let xtypes = vec![XType::Int(1, PERCENT); dim];
    let run = EgorBuilder::optimize(objective)
        .configure(|c| {
            let c = c
                .n_doe(s.initial.max(1))
                .max_iters(s.iterations)
                .n_start(s.candidates.max(1))
                .infill_strategy(InfillStrategy::EI)
                .seed(s.seed)
                // Not from environment variables: same input and seed, same run.
                .runtime_flags(RuntimeFlags::none());
            let c = c.configure_gp(|g| g.n_start(GP_STARTS));
            match timeout {
                Some(t) => c.timeout(t),
                None => c,
            }
        })
        .min_within_mixint_space(&xtypes)
        .and_then(|egor| egor.run());
    let (history, termination, error) = match run {
        Ok(res) => {
            let status = res.state.get_termination_status();
            timed_out = matches!(
                status,
                TerminationStatus::Terminated(TerminationReason::Timeout)
            );
            let termination = match status {
                TerminationStatus::Terminated(r) => format!("{r:?}"),
                TerminationStatus::NotTerminated => "not terminated".into(),
            };
            (Some(res.x_doe.nrows()), termination, None)
        }
        Err(e) => (None, "error".into(), Some(format!("egobox-ego: {e}"))),
    };
    let mut r = record.into_inner();
    if r.best.is_none() {
        r.eval(space, &even_split(dim));
    }
    BoResult {
        best: r.best.expect("at least one evaluation"),
        evaluations: r.evaluations,
        history,
        timed_out,
        termination,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::SolveOptions;
    use pipeplan_formulations::Instance;

    fn space(name: &str, stages: usize) -> PlanSpace {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../instances")
            .join(name);
        let inst = Instance::from_path(&p).unwrap();
        let opts = SolveOptions {
            stages: Some(stages),
            ..SolveOptions::default()
        };
        PlanSpace::pipeline(&inst, &opts).unwrap()
    }

    fn settings(initial: usize, iterations: usize) -> BoSettings {
        BoSettings {
            initial,
            iterations,
            seed: 7,
            candidates: 2,
            deadline: None,
        }
    }

    #[test]
    fn the_evaluation_counter_matches_egobox_history() {
        let r = optimize(
            &space("resnet50-1000px-b8-8gpu-16gib.json", 4),
            settings(6, 3),
        );
        assert_eq!(r.error, None);
        assert_eq!(r.history, Some(r.evaluations));
        assert_eq!(r.evaluations, 9, "{}", r.termination);
    }

    #[test]
    fn a_one_variable_space_stops_when_egobox_repeats_itself() {
        // Two GPUs: one variable of 100 values. However egobox ends (budget or no new point),
        // the counter is the number of points it evaluated, never the nominal budget when short.
        let r = optimize(
            &space("resnet50-1000px-b8-8gpu-16gib.json", 2),
            settings(5, 40),
        );
        assert_eq!(r.error, None);
        assert_eq!(r.history, Some(r.evaluations));
        assert!(r.evaluations <= 45);
        if r.evaluations < 45 {
            assert_eq!(r.termination, "SolverConverged");
        }
    }

    #[test]
    fn every_point_decodes_to_a_partition() {
        let s = space("resnet50-1000px-b8-8gpu-16gib.json", 8);
        for x in [[1i64; 7], [100; 7], [50, 1, 100, 3, 99, 2, 60]] {
            let plan = decode(&s, &x);
            assert_eq!(plan.len(), 8);
            assert!(plan.windows(2).all(|w| w[0].0 < w[1].0));
            assert_eq!(plan[7].0, s.layers - 1);
        }
    }
}
