//! Fitting the evaluator's constants to measured runs (`docs/calibration.md`).
//!
//! Each constant is fitted to what measures it, in three groups: peak memory fixes
//! `reserved_memory` and `activation_factor`; the measured gradient reductions of runs with data
//! parallelism fix `collective_efficiency`; iteration times then fix `compute_factor` and
//! `p2p_efficiency` (and `collective_efficiency` when no run measured a reduction).
//! `p2p_overlap` is not fitted: a blocking transfer and a slower link cost the stages alike, so
//! the runs cannot tell them apart; it is the runtime's, given by the caller. A constant no run's
//! prediction depends on (`p2p_efficiency` when no plan sends between stages) is not fitted: it
//! keeps its reference value, and [`Fit::unconstrained`] names it; one that a single run's
//! prediction depends on is fitted to that run alone, and [`Fit::single_run`] names both. Each
//! fit minimises a robust (soft-L1) loss of the relative errors,
//! `sum 2 (sqrt(1 + (e / 5%)^2) - 1)`, so that one anomalous run cannot drag the constants, with
//! argmin's Nelder-Mead from a fixed set of starts (the best result wins: deterministic).
//! Leave-one-out cross-validation refits without each run and scores that run, so a fit that
//! only memorises shows.

mod report;

pub use report::{calibrate, Calibrated};

use argmin::core::{CostFunction, Error, Executor, State};
use argmin::solver::neldermead::NelderMead;
use pipeplan_formulations::calibration::{Calibration, CONSTANTS};
use pipeplan_formulations::evaluate::accuracy::{Measured, Score};
use pipeplan_formulations::InputError;

/// Scale of the soft-L1 loss: relative errors well below it count quadratically, above it
/// linearly.
const LOSS_SCALE: f64 = 0.05;
/// Nelder-Mead iterations per start.
const ITERATIONS: u64 = 400;
/// Bytes per unit of the fitted reserve (well-conditioned simplex).
const GB: f64 = 1e9;
/// Indices in [`CONSTANTS`].
const RESERVED: usize = 0;
const ACTIVATION: usize = 1;
const COMPUTE: usize = 2;
const P2P: usize = 3;
const COLLECTIVE: usize = 4;

/// How the fit runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The runtime's `p2p_overlap` (0: blocking sends, as Megatron-LM's and DeepSpeed's
    /// pipelines wait for theirs), kept as given.
    pub p2p_overlap: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { p2p_overlap: 0.0 }
    }
}

/// The constants fitted to runs, with the scores they give.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The fitted constants.
    pub constants: Calibration,
    /// Runs whose measured gradient reduction fixed `collective_efficiency` (0: none did, and
    /// iteration times fixed it).
    pub sync_runs: usize,
    /// The constants no run's prediction depends on, kept at their reference values (names of
    /// [`CONSTANTS`]).
    pub unconstrained: Vec<&'static str>,
    /// The constants fitted to a single run's prediction (names of [`CONSTANTS`], with the
    /// run's name): their values are that run's, and leaving that run out leaves them
    /// unconstrained.
    pub single_run: Vec<(&'static str, String)>,
    /// Every run under the identity calibration.
    pub before: Vec<Score>,
    /// Every run under the fitted constants (in-sample).
    pub after: Vec<Score>,
    /// Every run under constants fitted without it (leave-one-out).
    pub cross_validated: Vec<Score>,
}

/// What a group's constants are fitted to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Memory,
    GradSync,
    Time,
}

/// Which constants a group fits, as (index in [`CONSTANTS`], scale of the fitted value).
struct Group {
    members: Vec<(usize, f64)>,
    starts: Vec<Vec<f64>>,
    target: Target,
}

/// The groups, in fitting order: collective traffic joins the time group when no run measured a
/// gradient reduction.
fn groups(with_sync: bool) -> Vec<Group> {
    let memory = Group {
        members: vec![(RESERVED, GB), (ACTIVATION, 1.0)],
        starts: vec![vec![0.0, 1.0], vec![4.0, 1.0]],
        target: Target::Memory,
    };
    let mut time = Group {
        members: vec![(COMPUTE, 1.0), (P2P, 1.0)],
        starts: vec![vec![1.0, 1.0], vec![1.0, 0.5], vec![1.0, 0.25]],
        target: Target::Time,
    };
    if !with_sync {
        time.members.push((COLLECTIVE, 1.0));
        for s in &mut time.starts {
            s.push(s[1]);
        }
        return vec![memory, time];
    }
    let sync = Group {
        members: vec![(COLLECTIVE, 1.0)],
        starts: vec![vec![1.0], vec![0.5], vec![0.25]],
        target: Target::GradSync,
    };
    vec![memory, sync, time]
}

impl Group {
    /// The group with only the members `keep` marks, its starts cut to them.
    fn restricted(&self, keep: &[bool]) -> Group {
        Group {
            members: kept(&self.members, keep),
            starts: self.starts.iter().map(|s| kept(s, keep)).collect(),
            target: self.target,
        }
    }
}

/// The items of `v` that `keep` marks.
fn kept<T: Copy>(v: &[T], keep: &[bool]) -> Vec<T> {
    v.iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(&x, _)| x)
        .collect()
}

/// The predicted and the measured value of `run` that `target` fits.
fn target_values(
    run: &Measured,
    cal: &Calibration,
    target: Target,
) -> Result<(f64, f64), InputError> {
    let p = run.predict(cal)?;
    Ok(match target {
        Target::Memory => (p.peak_memory, run.peak_memory),
        Target::Time => (p.iteration_ms, run.iteration_ms),
        Target::GradSync => (p.grad_sync_ms, run.grad_sync_ms.unwrap_or(0.0)),
    })
}

/// For each member of `group`, the runs (indices in `runs`) whose prediction of the group's
/// target depends on it: the prediction moves when the constant moves from its value in `base`
/// (halved; a gigabyte more for the reserve).
fn dependence(
    runs: &[&Measured],
    base: Calibration,
    group: &Group,
) -> Result<Vec<Vec<usize>>, InputError> {
    let at_base = runs
        .iter()
        .map(|r| Ok(target_values(r, &base, group.target)?.0))
        .collect::<Result<Vec<f64>, InputError>>()?;
    let mut out = Vec::with_capacity(group.members.len());
    for &(i, _) in &group.members {
        let mut v = base.to_vec();
        v[i] = if i == RESERVED { v[i] + GB } else { v[i] * 0.5 };
        let moved = Calibration::from_vec(v);
        let mut depending = Vec::new();
        for (k, (run, &a)) in runs.iter().zip(&at_base).enumerate() {
            let b = target_values(run, &moved, group.target)?.0;
            if (a - b).abs() > 1e-12 * a.abs().max(b.abs()) {
                depending.push(k);
            }
        }
        out.push(depending);
    }
    Ok(out)
}

/// The loss of one group's constants `x` over `runs`, on top of `base`.
struct Loss<'a> {
    runs: &'a [&'a Measured],
    base: Calibration,
    group: &'a Group,
}

impl Loss<'_> {
    fn calibration(&self, x: &[f64]) -> Option<Calibration> {
        let mut v = self.base.to_vec();
        for (&(i, scale), &xi) in self.group.members.iter().zip(x) {
            let (_, lo, hi) = CONSTANTS[i];
            let value = xi * scale;
            if !(value.is_finite() && value >= lo && value <= hi) {
                return None;
            }
            v[i] = value;
        }
        Some(Calibration::from_vec(v))
    }
}

impl CostFunction for Loss<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, x: &Vec<f64>) -> Result<f64, Error> {
        // Outside the admissible ranges: a wall the simplex turns back from.
        let Some(cal) = self.calibration(x) else {
            return Ok(1e30);
        };
        let mut total = 0.0;
        for run in self.runs {
            let (got, want) = target_values(run, &cal, self.group.target)?;
            let e = (got - want) / want / LOSS_SCALE;
            total += 2.0 * ((1.0 + e * e).sqrt() - 1.0);
        }
        Ok(total)
    }
}

/// Fits one group over `runs` from each of `starts`; returns the best constants.
fn fit_group(
    runs: &[&Measured],
    base: Calibration,
    group: &Group,
    starts: &[Vec<f64>],
) -> Result<Calibration, InputError> {
    let mut best: Option<(f64, Calibration)> = None;
    for start in starts {
        let loss = Loss { runs, base, group };
        let mut simplex = vec![start.clone()];
        for j in 0..start.len() {
            let mut p = start.clone();
            p[j] += if p[j].abs() > 1e-9 { 0.2 * p[j] } else { 0.2 };
            simplex.push(p);
        }
        let solver = NelderMead::new(simplex)
            .with_sd_tolerance(1e-10)
            .map_err(|e| InputError::field("calibrate", e.to_string()))?;
        let res = Executor::new(loss, solver)
            .configure(|s| s.max_iters(ITERATIONS))
            .run()
            .map_err(|e| InputError::field("calibrate", e.to_string()))?;
        let state = res.state();
        let (Some(x), cost) = (state.get_best_param(), state.get_best_cost()) else {
            continue;
        };
        let loss = Loss { runs, base, group };
        if let Some(cal) = loss.calibration(x) {
            if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                best = Some((cost, cal));
            }
        }
    }
    best.map(|(_, c)| c).ok_or_else(|| {
        InputError::field("calibrate", "the optimizer found no admissible constants")
    })
}

/// What [`fit_all`] found out about the constants besides their values.
#[derive(Default)]
struct Support {
    /// Indices in [`CONSTANTS`] of those no run depends on, which keep their values in `base`.
    unconstrained: Vec<usize>,
    /// Those a single run depends on, with that run's name.
    single_run: Vec<(usize, String)>,
}

/// Every group fitted over `runs` (each with whether it measured a gradient reduction the
/// evaluator predicts, i.e. with data parallelism) in turn on top of `base`, each on top of the
/// previous ones, from the `starts` of each group (scaled values).
fn fit_all(
    runs: &[(&Measured, bool)],
    base: Calibration,
    starts: &dyn Fn(&Group) -> Vec<Vec<f64>>,
) -> Result<(Calibration, Support), InputError> {
    let mut cal = base;
    let mut support = Support::default();
    let syncing: Vec<&Measured> = runs.iter().filter(|r| r.1).map(|r| r.0).collect();
    let all: Vec<&Measured> = runs.iter().map(|r| r.0).collect();
    for g in groups(!syncing.is_empty()) {
        let chosen = match g.target {
            Target::GradSync => &syncing,
            _ => &all,
        };
        let depending = dependence(chosen, cal, &g)?;
        for (&(i, _), d) in g.members.iter().zip(&depending) {
            match d[..] {
                [] => support.unconstrained.push(i),
                [k] => support.single_run.push((i, chosen[k].name.clone())),
                _ => {}
            }
        }
        let keep: Vec<bool> = depending.iter().map(|d| !d.is_empty()).collect();
        let g = g.restricted(&keep);
        if !g.members.is_empty() {
            cal = fit_group(chosen, cal, &g, &starts(&g))?;
        }
    }
    support.unconstrained.sort_unstable();
    support.single_run.sort_unstable();
    Ok((cal, support))
}

fn group_values(cal: &Calibration, group: &Group) -> Vec<f64> {
    let v = cal.to_vec();
    group.members.iter().map(|&(i, s)| v[i] / s).collect()
}

/// Fits the constants to `runs`, with scores before, after and cross-validated.
pub fn fit(runs: &[Measured], options: &Options) -> Result<Fit, InputError> {
    if runs.len() < 2 {
        return Err(InputError::field(
            "calibrate",
            format!(
                "{} measured run(s): fitting and cross-validating needs at least 2",
                runs.len()
            ),
        ));
    }
    // The fit starts from the identity with the runtime's overlap.
    let base = Calibration {
        p2p_overlap: options.p2p_overlap,
        ..Calibration::IDENTITY
    };
    base.check("calibrate")?;
    let score = |cal: &Calibration| -> Result<Vec<Score>, InputError> {
        runs.iter().map(|r| r.score(cal)).collect()
    };
    let before = score(&Calibration::IDENTITY)?;
    let flagged: Vec<(&Measured, bool)> = runs
        .iter()
        .zip(&before)
        .map(|(r, s)| (r, s.grad_sync_error().is_some()))
        .collect();
    let sync_runs = flagged.iter().filter(|r| r.1).count();
    let (constants, support) = fit_all(&flagged, base, &|g| g.starts.clone())?;
    let after = score(&constants)?;
    // Leave-one-out: refit from the full fit's constants and the first default start.
    let loo_starts = |g: &Group| vec![group_values(&constants, g), g.starts[0].clone()];
    let mut cross_validated = Vec::with_capacity(runs.len());
    for (i, run) in runs.iter().enumerate() {
        let rest: Vec<(&Measured, bool)> = flagged
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, &r)| r)
            .collect();
        let (cal, _) = fit_all(&rest, base, &loo_starts)?;
        cross_validated.push(run.score(&cal)?);
    }
    Ok(Fit {
        constants,
        sync_runs,
        unconstrained: support
            .unconstrained
            .iter()
            .map(|&i| CONSTANTS[i].0)
            .collect(),
        single_run: support
            .single_run
            .into_iter()
            .map(|(i, run)| (CONSTANTS[i].0, run))
            .collect(),
        before,
        after,
        cross_validated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipeplan_formulations::evaluate::evaluate;
    use pipeplan_formulations::testing::chain;
    use pipeplan_formulations::{Instance, Plan, Schedule, Stage};

    /// Eight layers of 4 ms forward, 50 MB of weights and 20 MB of output each, on 8 GPUs.
    fn instance() -> Instance {
        let mut inst = chain(&[4.0; 8], 8);
        for l in &mut inst.model.layers {
            l.weights = 5e7;
            l.output = 2e7;
        }
        inst.cluster.memory = 80e9;
        inst
    }

    /// Stages of equal length, `dp` replicas each, on consecutive GPUs.
    fn plan(stages: usize, dp: u32, micro_batches: u32) -> Plan {
        let per = 8 / stages;
        Plan {
            order: None,
            stages: (0..stages)
                .map(|s| Stage {
                    dp,
                    gpus: (0..dp).map(|r| (s as u32) * dp + r).collect(),
                    ..Stage::single(s * per, (s + 1) * per - 1, s as u32 * dp)
                })
                .collect(),
            schedule: Schedule::OneFOneB {
                micro_batches: Some(micro_batches),
                micro_batch: None,
            },
        }
    }

    /// A run measured as the evaluator predicts it under `truth`.
    fn measured(name: &str, plan: Plan, truth: &Calibration) -> Measured {
        let inst = instance();
        let ev = evaluate(&inst.calibrated(truth), &plan).unwrap();
        Measured {
            name: name.into(),
            dataset: "synthetic".into(),
            instance: inst,
            plan,
            iteration_ms: ev.iteration_ms.unwrap(),
            peak_memory: ev.max_memory,
            grad_sync_ms: ev.grad_sync_ms,
        }
    }

    #[test]
    fn recovers_the_constants_that_made_the_runs() {
        let truth = Calibration {
            reserved_memory: 3e9,
            activation_factor: 1.2,
            compute_factor: 0.9,
            p2p_efficiency: 0.3,
            collective_efficiency: 0.6,
            p2p_overlap: 0.0,
        };
        let runs = vec![
            measured("2x2", plan(2, 2, 4), &truth),
            measured("4x2", plan(4, 2, 8), &truth),
            measured("4x1", plan(4, 1, 16), &truth),
            measured("1x4", plan(1, 4, 2), &truth),
            measured("8x1", plan(8, 1, 8), &truth),
        ];
        let fit = fit(&runs, &Options::default()).unwrap();
        assert_eq!(
            fit.sync_runs, 3,
            "the data-parallel runs measure a reduction"
        );
        let (got, want) = (fit.constants.to_vec(), truth.to_vec());
        for ((name, _, _), (g, w)) in CONSTANTS.iter().zip(got.iter().zip(want)) {
            assert!((g - w).abs() <= 1e-3 * w.max(1.0), "{name}: {g} vs {w}");
        }
        for s in fit.after.iter().chain(&fit.cross_validated) {
            assert!(s.time_error.abs() < 1e-3, "{}: {}", s.name, s.time_error);
            assert!(
                s.memory_error.abs() < 1e-3,
                "{}: {}",
                s.name,
                s.memory_error
            );
        }
        // Without measured reductions, iteration times fix the collective efficiency too.
        let blind: Vec<Measured> = runs
            .iter()
            .map(|r| Measured {
                grad_sync_ms: None,
                ..r.clone()
            })
            .collect();
        let fit = super::fit(&blind, &Options::default()).unwrap();
        assert_eq!(fit.sync_runs, 0);
        for s in &fit.after {
            assert!(s.time_error.abs() < 1e-3, "{}: {}", s.name, s.time_error);
        }
        // One-stage runs without data parallelism send nothing and all-reduce nothing: their
        // efficiencies are not fitted but kept, and named.
        let alone = vec![
            measured("1x1 m2", plan(1, 1, 2), &truth),
            measured("1x1 m6", plan(1, 1, 6), &truth),
        ];
        let fit = super::fit(&alone, &Options::default()).unwrap();
        assert_eq!(
            fit.unconstrained,
            ["p2p_efficiency", "collective_efficiency"]
        );
        assert_eq!(fit.constants.p2p_efficiency, 1.0);
        assert_eq!(fit.constants.collective_efficiency, 1.0);
        assert!((fit.constants.compute_factor - 0.9).abs() < 1e-3);
        assert!(fit.single_run.is_empty());
        let full = super::fit(&runs, &Options::default()).unwrap();
        assert!(full.unconstrained.is_empty() && full.single_run.is_empty());
        // One run sends between stages: the link's efficiency is that run's, and named with it.
        let one_pipeline = vec![
            alone[0].clone(),
            alone[1].clone(),
            measured("2x1 m4", plan(2, 1, 4), &truth),
        ];
        let fit = super::fit(&one_pipeline, &Options::default()).unwrap();
        assert_eq!(fit.unconstrained, ["collective_efficiency"]);
        assert_eq!(fit.single_run, [("p2p_efficiency", "2x1 m4".to_string())]);
        let e = super::fit(&runs, &Options { p2p_overlap: 1.5 })
            .unwrap_err()
            .to_string();
        assert!(e.contains("p2p_overlap") && e.contains("1.5"), "{e}");
    }
}
