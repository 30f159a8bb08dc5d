//! The engine's profile modes that fit curves instead of reading one profiled value
//! (`time_profile_mode` / `memory_profile_mode` `sequence`, `docs/galvatron.md`, "Profile
//! modes"), and its fitted collective times: `scipy.optimize.curve_fit` of a line or a
//! quadratic in the sequence length (or message size) from all-ones starting parameters, run as
//! scipy runs it (the module `lmdif`), so the fitted values are the engine's to the last bit.

use super::lmdif::lmdif;

/// The engine's fitted curves, evaluated as its Python functions are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    /// `m * x + c`, parameters `[m, c]`.
    Line,
    /// `a * x * x + b * x + c`, parameters `[a, b, c]`.
    Quadratic,
}

impl Curve {
    /// The number of parameters.
    pub fn params(self) -> usize {
        match self {
            Curve::Line => 2,
            Curve::Quadratic => 3,
        }
    }

    /// The curve's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Curve::Line => "line",
            Curve::Quadratic => "quadratic",
        }
    }

    /// The curve with parameters `p` at `x`, in the engine's order of operations.
    pub fn at(self, p: &[f64], x: f64) -> f64 {
        match self {
            Curve::Line => p[0] * x + p[1],
            Curve::Quadratic => p[0] * x * x + p[1] * x + p[2],
        }
    }
}

/// How many distinct values `x` holds: a curve needs at least as many as it has parameters.
pub fn distinct(x: &[f64]) -> usize {
    let mut d = x.to_vec();
    d.sort_by(f64::total_cmp);
    d.dedup();
    d.len()
}

/// `curve_fit(curve, x, y)`'s parameters; `None` with fewer distinct points than parameters,
/// or where scipy finds no optimum (and the engine stops with its error).
pub fn curve_fit(curve: Curve, x: &[f64], y: &[f64]) -> Option<Vec<f64>> {
    if x.len() != y.len() || distinct(x) < curve.params() {
        return None;
    }
    let mut p = vec![1.0; curve.params()];
    lmdif(x.len(), &mut p, |p, out| {
        for ((o, &xi), &yi) in out.iter_mut().zip(x).zip(y) {
            *o = curve.at(p, xi) - yi;
        }
    })?;
    Some(p)
}

/// How the engine's curves (the `sequence` time mode's, the collective-time lines) are fitted
/// and evaluated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FitMethod {
    /// As the engine: `curve_fit`'s iterate, evaluated as its Python expression.
    #[default]
    Engine,
    /// The exact least-squares polynomial, evaluated by Horner's rule: how pipeplan fitted
    /// until 2026-11-29, about 1e-10 from the engine's; kept so that the published suite v1
    /// regenerates byte for byte (`docs/suite.md`, "Versions").
    LeastSquares,
}

impl FitMethod {
    /// `curve`'s parameters through the points (highest power first); `None` as [`curve_fit`].
    pub fn params(self, curve: Curve, x: &[f64], y: &[f64]) -> Option<Vec<f64>> {
        match self {
            FitMethod::Engine => curve_fit(curve, x, y),
            FitMethod::LeastSquares => polyfit(x, y, curve.params() - 1),
        }
    }

    /// `curve` with parameters `p` at `at`.
    pub fn at(self, curve: Curve, p: &[f64], at: f64) -> f64 {
        match self {
            FitMethod::Engine => curve.at(p, at),
            FitMethod::LeastSquares => p.iter().fold(0.0, |acc, v| acc * at + v),
        }
    }
}

/// Least-squares coefficients `[c_degree, ..., c_1, c_0]` (highest power first, as the
/// engine's `a x^2 + b x + c`) of a polynomial of `degree` through the points; `None` with
/// fewer distinct points than coefficients.
fn polyfit(x: &[f64], y: &[f64], degree: usize) -> Option<Vec<f64>> {
    let n = degree + 1;
    if x.len() != y.len() || distinct(x) < n {
        return None;
    }
    // Householder QR on the Vandermonde matrix of x / max |x| (for conditioning), by columns.
    let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1.0);
    let m = x.len();
    let mut cols: Vec<Vec<f64>> = (0..n)
        .map(|p| {
            x.iter()
                .map(|&v| (v / scale).powi((degree - p) as i32))
                .collect()
        })
        .collect();
    let mut b = y.to_vec();
    let reflect = |v: &[f64], vv: f64, k: usize, col: &mut [f64]| {
        let dot: f64 = v.iter().zip(&col[k..]).map(|(a, c)| a * c).sum();
        for (c, a) in col[k..].iter_mut().zip(v) {
            *c -= 2.0 * a * dot / vv;
        }
    };
    for k in 0..n {
        let norm = cols[k][k..].iter().map(|t| t * t).sum::<f64>().sqrt();
        if norm == 0.0 {
            return None;
        }
        let alpha = if cols[k][k] > 0.0 { -norm } else { norm };
        let mut v = cols[k][k..m].to_vec();
        v[0] -= alpha;
        let vv: f64 = v.iter().map(|t| t * t).sum();
        if vv == 0.0 {
            continue;
        }
        for col in cols[k..].iter_mut() {
            reflect(&v, vv, k, col);
        }
        reflect(&v, vv, k, &mut b);
    }
    // Back-substitution on R (row k of R is cols[j][k] for j >= k).
    let mut c = vec![0.0; n];
    for k in (0..n).rev() {
        let s: f64 = (k + 1..n).map(|j| cols[j][k] * c[j]).sum();
        c[k] = (b[k] - s) / cols[k][k];
    }
    // Undo the scaling: coefficient of x^(degree - p) was for (x / scale)^(degree - p).
    Some(
        c.iter()
            .enumerate()
            .map(|(p, v)| v / scale.powi((degree - p) as i32))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The least-squares polynomial `c` at `x`, as pipeplan evaluated it before (Horner).
    fn polyval(c: &[f64], x: f64) -> f64 {
        FitMethod::LeastSquares.at(Curve::Quadratic, c, x)
    }

    #[test]
    fn the_engines_bert_fit_to_the_last_bit() {
        // The engine's recorded fit (golden g_bert1024, `engine_inputs.curve_fits[0]`).
        let x = [128.0, 256.0, 384.0, 512.0, 640.0, 768.0, 896.0, 1024.0];
        let y = [
            1.8672864913940437,
            1.9399904251098627,
            1.8912927150726322,
            1.773727989196777,
            1.8756639480590822,
            1.9231648445129386,
            1.8329344272613515,
            2.058198404312134,
        ];
        let popt = [
            5.671135137053085e-07,
            -0.0005604338386262508,
            1.9811568073632781,
        ];
        assert_eq!(curve_fit(Curve::Quadratic, &x, &y).unwrap(), popt);
        // The exact least-squares solution is 1e-10 away: not what the engine plans with.
        let exact = polyfit(&x, &y, 2).unwrap();
        assert_ne!(exact, popt);
        assert!((polyval(&exact, 512.0) - Curve::Quadratic.at(&popt, 512.0)).abs() < 1e-9);
    }

    #[test]
    fn too_few_points() {
        assert_eq!(
            curve_fit(Curve::Quadratic, &[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]),
            None
        );
        assert_eq!(curve_fit(Curve::Line, &[1.0], &[1.0]), None);
        assert_eq!(curve_fit(Curve::Line, &[1.0, 2.0], &[1.0]), None);
    }

    proptest! {
        /// The fit reaches the least-squares optimum (the exact solution, by QR) to the
        /// tolerance scipy stops at: its sum of squares is no larger than the optimum's by more
        /// than a relative 1e-6, and exact curves are recovered.
        #[test]
        fn fits_reach_the_least_squares_optimum(
            c in proptest::collection::vec(-2.0f64..2.0, 3),
            noise in proptest::collection::vec(-0.1f64..0.1, 6),
        ) {
            let x: Vec<f64> = (1..=6).map(|i| 128.0 * i as f64).collect();
            let truth = [c[0] * 1e-6, c[1] * 1e-3, c[2]];
            let exact: Vec<f64> = x.iter().map(|&v| Curve::Quadratic.at(&truth, v)).collect();
            let got = curve_fit(Curve::Quadratic, &x, &exact).unwrap();
            for (&v, e) in x.iter().zip(&exact) {
                prop_assert!((Curve::Quadratic.at(&got, v) - e).abs() <= 1e-6 * (1.0 + e.abs()));
            }
            let y: Vec<f64> = exact.iter().zip(&noise).map(|(a, b)| a + b).collect();
            let ssq = |f: &dyn Fn(f64) -> f64| -> f64 {
                x.iter().zip(&y).map(|(&v, &t)| (t - f(v)).powi(2)).sum()
            };
            let best = polyfit(&x, &y, 2).unwrap();
            let fit = curve_fit(Curve::Quadratic, &x, &y).unwrap();
            let (opt, ours) = (ssq(&|v| polyval(&best, v)), ssq(&|v| Curve::Quadratic.at(&fit, v)));
            prop_assert!(ours <= opt * (1.0 + 1e-6) + 1e-15, "{} against {}", ours, opt);
        }
    }
}
