//! mcap-bo's encoding and shared run record, and its `engine=egor`: mCAP's Bayesian optimization
//! over pipeline-only partitions with the egobox-ego crate throughout.
//!
//! As in the public mCAP code, a point is P - 1 integers in [1, 100]: entry k is the percentage
//! of the layers GPU k may take (those still unplaced, less one for each later GPU) that it does
//! take, at least one; the last GPU takes the rest. Every point is a valid partition
//! ([`decode`]). egobox's `Egor` optimizer runs on that integer space (`XType::Int(1, 100)` per
//! variable): `initial` seeded Latin-hypercube points, then up to `iterations` points chosen by
//! expected improvement (`InfillStrategy::EI`) under its Gaussian process (constant mean,
//! squared-exponential kernel, hyperparameters by likelihood, refitted from the previous ones
//! plus [`GP_STARTS`] extra starts), maximized from `candidates` starts. The objective is the
//! predicted peak memory in bytes (egobox normalizes its training outputs); the plan returned is
//! the best evaluated one in the family's tie-break order. Seeded by `SolveOptions.seed`;
//! environment flags are ignored.
//!
//! egobox skips a proposal that repeats an evaluated point and stops ("SolverConverged") after
//! three in a row, so a run can make fewer than `initial + iterations` evaluations;
//! [`BoResult::evaluations`] counts the objective's actual calls. Distinct points can decode to
//! the same partition, so [`BoResult::distinct_plans`] can be lower still. The time limit is
//! egobox's `timeout`, checked between guided points: the initial design and the first guided
//! point are always evaluated.
//!
//! Cost: at every guided point egobox 0.42 rescales the criterion on a fresh maximin Latin
//! hypercube of min(100 x (P - 1), 1000) points (five candidate designs, all pairwise distances
//! each), whatever the settings; on 16 GPUs that is most of a run (`docs/capture.md`).
//!
//! The default engine, [`crate::capture::bo_gp`], uses this module's `Egor` run for its initial
//! design only and avoids that cost.
//!
//! Side effects of egobox 0.42 on the process (for both engines: the default one runs `Egor`
//! for its initial design): its first run installs a Ctrl-C handler (Ctrl-C
//! then cancels a running optimization instead of ending the process) and, when no logger is
//! set, an `env_logger` on stdout at level `error` (`EGOBOX_LOG` overrides).

use crate::algorithm::Stop;
use crate::capture::space::{Choice, Key, PlanSpace};
use crate::deadline::Deadline;
use egobox_ego::{
    EgorBuilder, InfillStrategy, RuntimeFlags, TerminationReason, TerminationStatus, XType,
};
use ndarray::{Array2, ArrayView2};
use std::cell::RefCell;
use std::collections::HashSet;

/// Budget and seed of one run.
#[derive(Debug, Clone)]
pub struct BoSettings {
    /// Random initial points (egobox's seeded Latin-hypercube design).
    pub initial: usize,
    /// Guided points (expected improvement).
    pub iterations: usize,
    /// Seed.
    pub seed: u64,
    /// Per guided point: starts of egobox's multistart maximization of expected improvement
    /// (`n_start`); with the GP engine ([`crate::capture::bo_gp`]), random points scored.
    pub candidates: usize,
    /// Wall-clock deadline, checked between guided points only: the initial design is always
    /// evaluated in full.
    pub deadline: Deadline,
}

/// Outcome: the best plan by the family's tie-break order, and the evaluations made.
#[derive(Debug, Clone)]
pub struct BoResult {
    /// Best plan evaluated.
    pub best: Key,
    /// Objective evaluations (calls of the objective, one per point).
    pub evaluations: usize,
    /// Distinct partitions among the evaluated points.
    pub distinct_plans: usize,
    /// Points in egobox's own history (equal to `evaluations`: a cross-check of the counter);
    /// `None` when egobox failed or was not run (one GPU), and with the GP engine.
    pub history: Option<usize>,
    /// True when the deadline cut the guided phase short.
    pub timed_out: bool,
    /// Why the search stopped (`None` when egobox failed, see `error`): its evaluation budget,
    /// the deadline, no new point proposed ([`Stop::Converged`]) or none left to propose.
    pub termination: Option<Stop>,
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

/// The partition a point encodes (stage ends over `space.gpus` GPUs), by the rule of the public
/// mCAP code (`percent_to_layers`): GPU k may take `free` = the unplaced layers less one per later
/// GPU, and takes `round(x_k / 100 x free)` of them, at least one, rounding half to even as
/// Python's `round` does; the last GPU takes the rest. Entries are clamped to [1, 100]; `x` has
/// one entry per GPU but the last.
pub fn decode(space: &PlanSpace, x: &[i64]) -> Vec<Choice> {
    let (l, p) = (space.layers, space.gpus);
    debug_assert_eq!(x.len() + 1, p, "one percentage per GPU but the last");
    let mut out = Vec::with_capacity(p);
    let mut first = 0;
    for (k, &pct) in x.iter().enumerate().take(p - 1) {
        // At least one layer per GPU from k on is left (the space has L >= P), so free >= 1.
        let free = l - first - (p - k - 1);
        let pct = pct.clamp(1, PERCENT as i64) as f64;
        let take = (pct / 100.0 * free as f64).round_ties_even() as usize;
        let take = take.clamp(1, free);
        out.push((first + take - 1, 0));
        first += take;
    }
    out.push((l - 1, 0));
    out
}

/// What the objective has seen: its call count, the points in order with their peaks, and the
/// best plan so far.
#[derive(Default)]
pub(crate) struct Record {
    pub(crate) evaluations: usize,
    pub(crate) plans: HashSet<Vec<Choice>>,
    pub(crate) best: Option<Key>,
    /// Evaluated points, in order (the GP engine's training inputs).
    pub(crate) points: Vec<Vec<i64>>,
    /// Their objective values (bytes).
    pub(crate) peaks: Vec<f64>,
}

impl Record {
    /// Evaluates one point: its plan's peak, the plan remembered when it is the best so far.
    pub(crate) fn eval(&mut self, space: &PlanSpace, x: &[i64]) -> f64 {
        let peak = self.eval_plan(space, decode(space, x));
        self.points.push(x.to_vec());
        self.peaks.push(peak);
        peak
    }

    /// Evaluates one plan.
    fn eval_plan(&mut self, space: &PlanSpace, plan: Vec<Choice>) -> f64 {
        let key = Key::of(space, &plan);
        let peak = key.peak();
        self.evaluations += 1;
        self.plans.insert(plan);
        if self.best.as_ref().is_none_or(|b| key.rank(b).is_lt()) {
            self.best = Some(key);
        }
        peak
    }
}

/// The plan returned when egobox evaluated nothing: layers split as evenly as possible.
pub(crate) fn even_split(space: &PlanSpace) -> Vec<Choice> {
    let (l, p) = (space.layers, space.gpus);
    (0..p).map(|k| ((k + 1) * l / p - 1, 0)).collect()
}

/// Runs the optimization on a pipeline-only space. Never fails: should egobox return an error,
/// the result is the best point evaluated before it (an even split when there is none) and
/// [`BoResult::error`] says why.
pub fn optimize(space: &PlanSpace, s: BoSettings) -> BoResult {
    if space.gpus == 1 {
        return single_partition(space);
    }
    let (record, run) = run_egor(space, &s);
    run.into_result(space, record)
}

/// The result on one GPU: a single partition, nothing to optimize (egobox needs a variable).
pub(crate) fn single_partition(space: &PlanSpace) -> BoResult {
    let mut r = Record::default();
    r.eval(space, &[]);
    BoResult {
        best: r.best.expect("one evaluation"),
        evaluations: r.evaluations,
        distinct_plans: r.plans.len(),
        history: None,
        timed_out: false,
        termination: Some(Stop::Exhausted),
        error: None,
    }
}

/// How a run ended, besides what its objective recorded.
pub(crate) struct RunEnd {
    /// Points in the optimizer's own history, when it has one.
    pub(crate) history: Option<usize>,
    /// True when the deadline cut the guided phase short.
    pub(crate) timed_out: bool,
    /// Why the optimizer stopped (`None` on an error).
    pub(crate) termination: Option<Stop>,
    /// The optimizer's error, if any.
    pub(crate) error: Option<String>,
}

impl RunEnd {
    /// The result: the best recorded plan (an even split when nothing was evaluated).
    pub(crate) fn into_result(self, space: &PlanSpace, mut r: Record) -> BoResult {
        if r.best.is_none() {
            r.eval_plan(space, even_split(space));
        }
        BoResult {
            best: r.best.expect("at least one evaluation"),
            evaluations: r.evaluations,
            distinct_plans: r.plans.len(),
            history: self.history,
            timed_out: self.timed_out,
            termination: self.termination,
            error: self.error,
        }
    }
}

/// Runs egobox's `Egor` on a space of two GPUs or more (at least one variable); with
/// `iterations` 0 it evaluates its seeded initial design only.
pub(crate) fn run_egor(space: &PlanSpace, s: &BoSettings) -> (Record, RunEnd) {
    let dim = space.gpus - 1;
    let record = RefCell::new(Record::default());
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
    // Out of time already: egobox still evaluates its initial design and one guided point (its
    // timeout must be positive).
    let timeout = s
        .deadline
        .remaining()
        .map(|left| left.as_secs_f64().max(1e-9));
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
                TerminationStatus::Terminated(TerminationReason::Timeout) => s.deadline.stop(),
                TerminationStatus::Terminated(TerminationReason::Interrupt) => Stop::Interrupted,
                TerminationStatus::Terminated(TerminationReason::MaxItersReached)
                | TerminationStatus::NotTerminated => Stop::EvaluationBudget,
                TerminationStatus::Terminated(_) => Stop::Converged,
            };
            (Some(res.x_doe.nrows()), Some(termination), None)
        }
        Err(e) => (None, None, Some(format!("egobox-ego: {e}"))),
    };
    let end = RunEnd {
        history,
        timed_out,
        termination,
        error,
    };
    (record.into_inner(), end)
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
        let ctx = crate::algorithm::Context::of(&crate::capture::MCAP_BO, &opts).unwrap();
        PlanSpace::pipeline(&inst, &ctx).unwrap()
    }

    fn settings(initial: usize, iterations: usize) -> BoSettings {
        BoSettings {
            initial,
            iterations,
            seed: 7,
            candidates: 2,
            deadline: Deadline::none(),
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
        assert_eq!(r.evaluations, 9, "{:?}", r.termination);
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
            assert_eq!(r.termination, Some(Stop::Converged));
        }
    }

    /// Layer counts of a decoded plan.
    fn counts(plan: &[Choice]) -> Vec<usize> {
        let mut first = 0;
        plan.iter()
            .map(|&(last, _)| {
                let n = last + 1 - first;
                first = last + 1;
                n
            })
            .collect()
    }

    #[test]
    fn decoding_follows_the_public_mcap_rule() {
        // Values from the public code's `percent_to_layers` (Python) on 18 layers, 8 GPUs.
        // GPU 0 may take 11 and takes round(5.5) = 6; GPU 1 may take 6 and takes
        // round(4.5) = 4 (half to even); 1% of 3 rounds to 0 and becomes 1.
        let s = space("resnet50-1000px-b8-8gpu-16gib.json", 8);
        assert_eq!(s.layers, 18);
        let cases: [([i64; 7], [usize; 8]); 3] = [
            ([50, 75, 1, 100, 1, 1, 1], [6, 4, 1, 3, 1, 1, 1, 1]),
            ([100; 7], [11, 1, 1, 1, 1, 1, 1, 1]),
            ([1; 7], [1, 1, 1, 1, 1, 1, 1, 11]),
        ];
        for (x, want) in cases {
            assert_eq!(counts(&decode(&s, &x)), want, "{x:?}");
        }
    }

    #[test]
    fn every_point_decodes_to_a_partition() {
        let inst = "resnet50-1000px-b8-8gpu-16gib.json";
        // A fixed pseudo-random walk over the box, plus its corners, for 2 to 8 GPUs.
        let mut state = 1u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            1 + ((state >> 33) % 100) as i64
        };
        for p in 2..=8 {
            let s = space(inst, p);
            let mut points = vec![vec![1i64; p - 1], vec![100; p - 1]];
            points.extend((0..200).map(|_| (0..p - 1).map(|_| next()).collect::<Vec<_>>()));
            for x in points {
                let plan = decode(&s, &x);
                assert_eq!(plan.len(), p, "{x:?}");
                assert!(plan.windows(2).all(|w| w[0].0 < w[1].0), "{x:?}");
                assert_eq!(plan[p - 1].0, s.layers - 1);
            }
        }
    }
}
