//! Dolan–Moré performance profiles: for each solver s and problem p, the ratio
//! r(p, s) = t(p, s) / min over solvers of t(p, s'), infinite when s did not solve p; the profile
//! of s is rho_s(tau) = |{p : r(p, s) <= tau}| / |P| (Dolan and Moré, "Benchmarking optimization
//! software with performance profiles", Math. Program. 91, 2002).

use serde::Serialize;

/// The tau at which reports print a profile's value.
pub const TAUS: [f64; 6] = [1.0, 1.1, 1.5, 2.0, 5.0, 10.0];

/// One solver's profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve {
    /// The solver (configuration) label.
    pub configuration: String,
    /// The step function: at each distinct finite ratio tau, the share of problems within tau.
    pub steps: Vec<(f64, f64)>,
    /// The profile at each of [`TAUS`].
    pub at: Vec<(f64, f64)>,
    /// The share of problems solved at all (rho at tau = infinity).
    pub solved: f64,
}

/// A performance profile of several solvers over one set of problems.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// What is compared (smaller is better after the transformation the metric names).
    pub metric: String,
    /// Number of problems |P|.
    pub problems: usize,
    /// One curve per solver, in solver order.
    pub curves: Vec<Curve>,
}

/// The ratio of `v` to the best `best` (both >= 0): 1 when both are 0, infinite when only the
/// best is.
fn ratio(v: f64, best: f64) -> f64 {
    if best > 0.0 {
        v / best
    } else if v > 0.0 {
        f64::INFINITY
    } else {
        1.0
    }
}

/// The ratios r(p, s) of `values[s][p]` (smaller is better; `None` = not solved).
pub fn ratios(values: &[Vec<Option<f64>>]) -> Vec<Vec<f64>> {
    let problems = values.first().map_or(0, Vec::len);
    let best: Vec<Option<f64>> = (0..problems)
        .map(|p| {
            values
                .iter()
                .filter_map(|v| v[p])
                .min_by(|a, b| a.total_cmp(b))
        })
        .collect();
    values
        .iter()
        .map(|v| {
            (0..problems)
                .map(|p| match (v[p], best[p]) {
                    (Some(x), Some(b)) => ratio(x, b),
                    _ => f64::INFINITY,
                })
                .collect()
        })
        .collect()
}

/// The profile of `values[s][p]` for solvers `labels[s]`.
pub fn profile(metric: &str, labels: &[String], values: &[Vec<Option<f64>>]) -> Profile {
    let problems = values.first().map_or(0, Vec::len);
    let share = |count: usize| {
        if problems == 0 {
            0.0
        } else {
            count as f64 / problems as f64
        }
    };
    let curves = ratios(values)
        .into_iter()
        .zip(labels)
        .map(|(mut r, label)| {
            r.sort_by(|a, b| a.total_cmp(b));
            let finite: Vec<f64> = r.iter().copied().filter(|x| x.is_finite()).collect();
            let mut steps: Vec<(f64, f64)> = Vec::new();
            for (i, &tau) in finite.iter().enumerate() {
                let within = i + 1;
                match steps.last_mut() {
                    Some(last) if last.0 == tau => last.1 = share(within),
                    _ => steps.push((tau, share(within))),
                }
            }
            let at = TAUS
                .iter()
                .map(|&tau| (tau, share(finite.iter().filter(|&&x| x <= tau).count())))
                .collect();
            Curve {
                configuration: label.clone(),
                steps,
                at,
                solved: share(finite.len()),
            }
        })
        .collect();
    Profile {
        metric: metric.to_string(),
        problems,
        curves,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_profile() {
        // Three problems; solver A: 1, 4, -; solver B: 2, 2, 3.
        // Best: 1, 2, 3. Ratios A: 1, 2, inf; B: 2, 1, 1.
        let values = vec![
            vec![Some(1.0), Some(4.0), None],
            vec![Some(2.0), Some(2.0), Some(3.0)],
        ];
        let p = profile("t", &["A".into(), "B".into()], &values);
        assert_eq!(p.problems, 3);
        let a = &p.curves[0];
        assert_eq!(a.steps, vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0)]);
        assert_eq!(a.solved, 2.0 / 3.0);
        let b = &p.curves[1];
        assert_eq!(b.steps, vec![(1.0, 2.0 / 3.0), (2.0, 1.0)]);
        assert_eq!(b.at[0], (1.0, 2.0 / 3.0));
        assert_eq!(b.at[2], (1.5, 2.0 / 3.0));
        assert_eq!(b.at[3], (2.0, 1.0));
    }

    #[test]
    fn zero_best() {
        let r = ratios(&[vec![Some(0.0)], vec![Some(1.0)]]);
        assert_eq!(r, vec![vec![1.0], vec![f64::INFINITY]]);
    }
}
