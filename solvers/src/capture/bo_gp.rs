//! mcap-bo's default engine (`engine=gp`): the Bayesian-optimization loop written here on
//! egobox-gp's Gaussian process, with expected improvement maximized over random integer points
//! as scikit-optimize's `acq_optimizer="sampling"` does in the public mCAP code.
//!
//! Same encoding ([`decode`]) and initial design as the Egor engine: egobox-ego's `Egor` is run
//! with no guided point, so the `initial` points are its seeded Latin-hypercube draws, the same
//! ones engine `egor` evaluates for that seed. Then, for each of `iterations` guided points:
//! fit a GP (egobox-gp's `Kriging`: constant mean, squared-exponential kernel, as Egor's) on
//! every evaluated point (egobox-gp standardizes inputs and outputs itself, so bytes are
//! harmless), score `candidates` points drawn uniformly from {1..100}^(P-1) by expected
//! improvement over the best value so far, and evaluate the best-scoring candidate not evaluated
//! before (ties: the first drawn). The hyperparameters are re-estimated by likelihood every
//! `refit` guided points, from the previous ones plus [`GP_STARTS`] seeded extra starts; in
//! between the GP is refitted on the new data with them fixed. The run stops early when no
//! candidate is new (small spaces) or the GP fails (the best point so far is then returned, with
//! the error).
//!
//! Deterministic: the candidates come from a Xoshiro256++ generator seeded from the seed, and
//! egobox-gp's multistart is seeded ([`GP_STARTS`] >= 2). The deadline is checked before every
//! guided point, so none is evaluated once it has passed.
//!
//! [`decode`]: crate::capture::bo::decode

use crate::algorithm::Stop;
use crate::capture::bo::{self, BoResult, BoSettings, Record, RunEnd, GP_STARTS};
use crate::capture::space::PlanSpace;
use crate::deadline::Deadline;
use egobox_gp::{Kriging, ThetaTuning};
use linfa::prelude::{Dataset, Fit};
use ndarray::{Array1, Array2};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashSet;

/// Default candidate count per guided point of the GP engine: a tenth of scikit-optimize's
/// `n_points` (10000), which gave no better plans at ten times the cost (`docs/capture.md`).
pub const DEFAULT_CANDIDATES: usize = 1000;
/// Default hyperparameter refit period of the GP engine, in guided points (1: at every point,
/// as scikit-optimize does).
pub const DEFAULT_REFIT: usize = 1;
/// Most likelihood evaluations per start of a hyperparameter fit (COBYLA; egobox-gp's default
/// is 1000, its least 25). 50 keeps a 100-point run on 32 layers x 16 GPUs under 2 s (1.63 s
/// criterion median, `benches/capture.rs`).
pub const GP_MAX_EVAL: usize = 50;

/// Runs the GP engine on a pipeline-only space; `refit` is the hyperparameter refit period
/// (0 counts as 1). Never fails: see the module documentation for how it stops.
pub fn optimize(space: &PlanSpace, s: BoSettings, refit: usize) -> BoResult {
    if space.gpus == 1 {
        return bo::single_partition(space);
    }
    // The initial design: Egor's own, for the same seed (no guided point, no deadline).
    let initial = BoSettings {
        iterations: 0,
        deadline: Deadline::none(),
        ..s.clone()
    };
    let (mut record, end) = bo::run_egor(space, &initial);
    if end.error.is_some() {
        return end.into_result(space, record);
    }
    let end = guide(space, &s, refit.max(1), &mut record);
    end.into_result(space, record)
}

/// The guided phase: up to `s.iterations` points chosen by expected improvement.
fn guide(space: &PlanSpace, s: &BoSettings, refit: usize, record: &mut Record) -> RunEnd {
    let dim = space.gpus - 1;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(s.seed);
    let mut seen: HashSet<Vec<i64>> = record.points.iter().cloned().collect();
    let mut theta: Option<Array1<f64>> = None;
    let mut end = RunEnd {
        history: None,
        timed_out: false,
        termination: Some(Stop::EvaluationBudget),
        error: None,
    };
    for it in 0..s.iterations {
        if s.deadline.passed() {
            end.timed_out = true;
            end.termination = Some(s.deadline.stop());
            break;
        }
        let tuning = match &theta {
            Some(t) if it % refit != 0 => ThetaTuning::Fixed(t.clone()),
            Some(t) => ThetaTuning::Full {
                init: t.clone(),
                bounds: Array1::from_elem(dim, ThetaTuning::<f64>::DEFAULT_BOUNDS),
            },
            None => ThetaTuning::Full {
                init: Array1::from_elem(dim, ThetaTuning::<f64>::DEFAULT_INIT),
                bounds: Array1::from_elem(dim, ThetaTuning::<f64>::DEFAULT_BOUNDS),
            },
        };
        let n = record.points.len();
        let xt = Array2::from_shape_fn((n, dim), |(i, j)| record.points[i][j] as f64);
        let yt = Array1::from(record.peaks.clone());
        let gp = match Kriging::<f64>::params()
            .theta_tuning(tuning)
            .n_start(GP_STARTS)
            .max_eval(GP_MAX_EVAL)
            .fit(&Dataset::new(xt, yt))
        {
            Ok(gp) => gp,
            Err(e) => {
                end.termination = None;
                end.error = Some(format!("egobox-gp: {e}"));
                break;
            }
        };
        theta = Some(gp.theta().clone());
        let cands: Vec<Vec<i64>> = (0..s.candidates.max(1))
            .map(|_| (0..dim).map(|_| percent(&mut rng)).collect())
            .collect();
        let xc = Array2::from_shape_fn((cands.len(), dim), |(i, j)| cands[i][j] as f64);
        let (mu, var) = match gp.predict_valvar(&xc) {
            Ok(mv) => mv,
            Err(e) => {
                end.termination = None;
                end.error = Some(format!("egobox-gp: {e}"));
                break;
            }
        };
        let fmin = record.peaks.iter().copied().fold(f64::INFINITY, f64::min);
        let mut best: Option<(usize, f64)> = None;
        for (i, x) in cands.iter().enumerate() {
            if seen.contains(x) {
                continue;
            }
            let e = expected_improvement(fmin, mu[i], var[i]);
            // NaN never wins; on ties the first drawn does.
            if best.is_none_or(|(_, b)| e > b) {
                best = Some((i, if e.is_nan() { f64::NEG_INFINITY } else { e }));
            }
        }
        let Some((i, _)) = best else {
            end.termination = Some(Stop::Exhausted);
            break;
        };
        let x = cands[i].clone();
        seen.insert(x.clone());
        record.eval(space, &x);
    }
    end
}

/// Expected improvement below `fmin` of a normal prediction (mean `mu`, variance `var`), for
/// minimization: `s (z Phi(z) + phi(z))` with `z = (fmin - mu) / s`. Far in the lower tail the
/// bracket is evaluated by its asymptotic series, which the direct form loses to cancellation.
pub fn expected_improvement(fmin: f64, mu: f64, var: f64) -> f64 {
    let s = var.max(0.0).sqrt();
    if s < 1e-12 * (1.0 + fmin.abs()) {
        return (fmin - mu).max(0.0);
    }
    let z = (fmin - mu) / s;
    let pdf = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let bracket = if z < -8.0 {
        // z Phi(z) + phi(z) = phi(z) / z^2 (1 - 3 / z^2 + 15 / z^4 - 105 / z^6 + ...); from
        // z = -8 on, five terms err by less (1e-5) than the direct form's cancellation.
        let r = 1.0 / (z * z);
        pdf * r * (1.0 + r * (-3.0 + r * (15.0 + r * (-105.0 + r * 945.0))))
    } else {
        z * normal_cdf(z) + pdf
    };
    s * bracket
}

/// The standard normal distribution function.
fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

/// A uniform integer in [1, 100] (Lemire's multiply-shift; its bias, under 1e-17, is immaterial
/// here).
fn percent(rng: &mut Xoshiro256PlusPlus) -> i64 {
    1 + ((u128::from(rng.next_u64()) * 100) >> 64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::SolveOptions;
    use pipeplan_formulations::Instance;

    fn space(stages: usize) -> PlanSpace {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../instances/resnet50-1000px-b8-8gpu-16gib.json");
        let inst = Instance::from_path(&p).unwrap();
        let opts = SolveOptions {
            stages: Some(stages),
            ..SolveOptions::default()
        };
        let ctx = crate::algorithm::Context::of(&crate::capture::MCAP_BO, &opts).unwrap();
        PlanSpace::pipeline(&inst, &ctx).unwrap()
    }

    #[test]
    fn the_initial_design_is_egors_and_guided_points_are_new() {
        let space = space(6);
        let s = BoSettings {
            initial: 10,
            iterations: 5,
            seed: 3,
            candidates: 100,
            deadline: Deadline::none(),
        };
        // Egor's design does not depend on its guided budget: engine egor evaluates these
        // points first too.
        let (with_guided, _) = bo::run_egor(&space, &s);
        let (mut record, _) = bo::run_egor(
            &space,
            &BoSettings {
                iterations: 0,
                ..s.clone()
            },
        );
        assert_eq!(record.points.len(), 10);
        assert_eq!(&with_guided.points[..10], &record.points[..]);
        let initial = record.points.clone();
        let end = guide(&space, &s, 1, &mut record);
        assert_eq!(end.error, None);
        assert_eq!(record.points.len(), 15);
        assert_eq!(&record.points[..10], &initial[..]);
        let distinct: HashSet<_> = record.points.iter().collect();
        assert_eq!(distinct.len(), 15, "guided points repeat none");
        assert!(record
            .points
            .iter()
            .flatten()
            .all(|v| (1..=100).contains(v)));
    }

    #[test]
    fn percentages_cover_one_to_a_hundred() {
        let mut g = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut hit = [false; 101];
        for _ in 0..10_000 {
            let v = percent(&mut g);
            assert!((1..=100).contains(&v));
            hit[v as usize] = true;
        }
        assert!(hit[1..].iter().all(|&h| h));
    }

    #[test]
    fn normal_cdf_matches_known_values() {
        for (z, want) in [
            (0.0, 0.5),
            (1.0, 0.841_344_746_068_542_9),
            (-1.0, 0.158_655_253_931_457_05),
            (-3.0, 1.349_898_031_630_094_6e-3),
            (-8.0, 6.220_960_574_271_785e-16),
        ] {
            let got = normal_cdf(z);
            assert!((got - want).abs() <= 2e-7 * want, "{z}: {got} vs {want}");
        }
    }

    #[test]
    fn expected_improvement_is_positive_monotone_and_continuous() {
        // Zero variance: the plain improvement.
        assert_eq!(expected_improvement(10.0, 7.0, 0.0), 3.0);
        assert_eq!(expected_improvement(10.0, 12.0, 0.0), 0.0);
        // At the incumbent: s phi(0).
        let at = expected_improvement(0.0, 0.0, 4.0);
        assert!((at - 2.0 * 0.398_942_280_401_432_7).abs() < 1e-6);
        // Decreasing in the mean, positive deep in the tail, continuous at the series switch.
        let mut prev = f64::INFINITY;
        for k in 0..240 {
            let mu = -2.0 + 0.05 * k as f64;
            let e = expected_improvement(0.0, mu, 1.0);
            assert!(e > 0.0 && e < prev, "mu {mu}: {e} after {prev}");
            prev = e;
        }
        let left = expected_improvement(0.0, 8.0 - 1e-9, 1.0);
        let right = expected_improvement(0.0, 8.0 + 1e-9, 1.0);
        assert!((left - right).abs() < 1e-4 * left, "{left} vs {right}");
    }
}
