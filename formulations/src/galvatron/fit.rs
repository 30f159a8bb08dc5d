//! The engine's profile modes that fit curves instead of reading one profiled value
//! (`time_profile_mode` / `memory_profile_mode` `sequence`, `docs/galvatron.md`, "Profile
//! modes"): a least-squares polynomial in the sequence length, as its `scipy.optimize.curve_fit`
//! computes for these models (linear in their coefficients, so the least-squares solution is
//! unique and the fit is that solution).

/// Least-squares coefficients `[c_degree, ..., c_1, c_0]` (highest power first, as the
/// engine's `a x^2 + b x + c`) of a polynomial of `degree` through the points; `None` with
/// fewer distinct points than coefficients.
pub fn polyfit(x: &[f64], y: &[f64], degree: usize) -> Option<Vec<f64>> {
    let n = degree + 1;
    let mut distinct = x.to_vec();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if x.len() != y.len() || distinct.len() < n {
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

/// The polynomial `[c_degree, ..., c_0]` at `x` (Horner).
pub fn polyval(c: &[f64], x: f64) -> f64 {
    c.iter().fold(0.0, |acc, v| acc * x + v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_engines_bert_fit() {
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
        let c = polyfit(&x, &y, 2).unwrap();
        let popt = [
            5.671135137053085e-07,
            -0.0005604338386262508,
            1.9811568073632781,
        ];
        for (a, b) in c.iter().zip(popt) {
            assert!((a - b).abs() <= 1e-7 * b.abs(), "{c:?} vs {popt:?}");
        }
        assert!((polyval(&c, 512.0) - 1.842880086923402).abs() < 1e-9);
    }

    #[test]
    fn too_few_points() {
        assert_eq!(polyfit(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0], 2), None);
        assert_eq!(polyfit(&[1.0], &[1.0], 1), None);
    }

    proptest! {
        /// Exact polynomials are recovered; the residual of any fit is orthogonal to the
        /// Vandermonde columns (the normal equations hold).
        #[test]
        fn fits_are_least_squares(
            c in proptest::collection::vec(-2.0f64..2.0, 3),
            noise in proptest::collection::vec(-0.1f64..0.1, 6),
        ) {
            let x: Vec<f64> = (1..=6).map(|i| 128.0 * i as f64).collect();
            let exact: Vec<f64> = x.iter().map(|&v| polyval(&[c[0] * 1e-6, c[1] * 1e-3, c[2]], v)).collect();
            let got = polyfit(&x, &exact, 2).unwrap();
            for (&v, e) in x.iter().zip(&exact) {
                prop_assert!((polyval(&got, v) - e).abs() <= 1e-9 * (1.0 + e.abs()));
            }
            let y: Vec<f64> = exact.iter().zip(&noise).map(|(a, b)| a + b).collect();
            let f = polyfit(&x, &y, 2).unwrap();
            for p in 0..3 {
                let dot: f64 = x.iter().zip(&y).map(|(&v, &t)| (t - polyval(&f, v)) * (v / 768.0).powi(p)).sum();
                prop_assert!(dot.abs() < 1e-9, "power {}: {}", p, dot);
            }
        }
    }
}
