//! Fitting the evaluator's constants to measured runs (`docs/calibration.md`).
//!
//! Peak memory depends only on `reserved_memory` and `activation_factor`, iteration time only on
//! `compute_factor`, `link_efficiency` and `p2p_overlap`; the two groups are fitted apart. Each
//! fit minimises a robust (soft-L1) loss of the relative errors, `sum 2 (sqrt(1 + (e / 5%)^2) -
//! 1)`, so that one anomalous run cannot drag the constants, with argmin's Nelder-Mead from a
//! fixed set of starts (the best result wins: deterministic). Leave-one-out cross-validation
//! refits without each run and scores that run, so a fit that only memorises shows.

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

/// The constants fitted to runs, with the scores they give.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The fitted constants.
    pub constants: Calibration,
    /// Every run under the identity calibration.
    pub before: Vec<Score>,
    /// Every run under the fitted constants (in-sample).
    pub after: Vec<Score>,
    /// Every run under constants fitted without it (leave-one-out).
    pub cross_validated: Vec<Score>,
}

/// Which constants a group fits, as (index in [`CONSTANTS`], scale of the fitted value).
struct Group {
    members: &'static [(usize, f64)],
    starts: &'static [&'static [f64]],
    time: bool,
}

const MEMORY: Group = Group {
    members: &[(0, GB), (1, 1.0)],
    starts: &[&[0.0, 1.0], &[4.0, 1.0]],
    time: false,
};

const TIME: Group = Group {
    members: &[(2, 1.0), (3, 1.0), (4, 1.0)],
    starts: &[&[1.0, 1.0, 1.0], &[1.0, 0.5, 0.0], &[1.0, 0.25, 0.5]],
    time: true,
};

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
            let p = run.predict(&cal)?;
            let (got, want) = if self.group.time {
                (p.iteration_ms, run.iteration_ms)
            } else {
                (p.peak_memory, run.peak_memory)
            };
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

/// Both groups fitted over `runs`; `starts` of each group (scaled values) in group order.
fn fit_all(runs: &[&Measured], starts: [&[Vec<f64>]; 2]) -> Result<Calibration, InputError> {
    let mem = fit_group(runs, Calibration::IDENTITY, &MEMORY, starts[0])?;
    fit_group(runs, mem, &TIME, starts[1])
}

fn group_values(cal: &Calibration, group: &Group) -> Vec<f64> {
    let v = cal.to_vec();
    group.members.iter().map(|&(i, s)| v[i] / s).collect()
}

fn default_starts(group: &Group) -> Vec<Vec<f64>> {
    group.starts.iter().map(|s| s.to_vec()).collect()
}

/// Fits the constants to `runs`, with scores before, after and cross-validated.
pub fn fit(runs: &[Measured]) -> Result<Fit, InputError> {
    if runs.len() < 2 {
        return Err(InputError::field(
            "calibrate",
            format!(
                "{} measured run(s): fitting and cross-validating needs at least 2",
                runs.len()
            ),
        ));
    }
    let all: Vec<&Measured> = runs.iter().collect();
    let mem_starts = default_starts(&MEMORY);
    let time_starts = default_starts(&TIME);
    let constants = fit_all(&all, [&mem_starts, &time_starts])?;
    let score = |cal: &Calibration| -> Result<Vec<Score>, InputError> {
        runs.iter().map(|r| r.score(cal)).collect()
    };
    let before = score(&Calibration::IDENTITY)?;
    let after = score(&constants)?;
    // Leave-one-out: refit from the full fit's constants and the first default start.
    let mut cross_validated = Vec::with_capacity(runs.len());
    for i in 0..runs.len() {
        let rest: Vec<&Measured> = runs
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, r)| r)
            .collect();
        let ms = [group_values(&constants, &MEMORY), mem_starts[0].clone()];
        let ts = [group_values(&constants, &TIME), time_starts[0].clone()];
        let cal = fit_all(&rest, [&ms, &ts])?;
        cross_validated.push(runs[i].score(&cal)?);
    }
    Ok(Fit {
        constants,
        before,
        after,
        cross_validated,
    })
}
