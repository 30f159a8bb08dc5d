//! MINPACK's `lmdif` (Levenberg-Marquardt with a forward-difference Jacobian) as scipy's
//! `leastsq` runs it for `curve_fit` (scipy/optimize/src/minpack.c; `docs/galvatron.md`,
//! "Profile modes"), operation for operation: the engine's fits are this iteration's last
//! iterate, not the exact least-squares solution, and its plans break ties between equal-cost
//! strategy assignments on the last bits of the costs built from them.
//!
//! A translation of MINPACK (Argonne National Laboratory, March 1980; B. S. Garbow,
//! K. E. Hillstrom, J. J. Moré), by way of scipy's C version (BSD-3-Clause). MINPACK's licence
//! asks for this acknowledgment: this product includes software developed by the University of
//! Chicago, as Operator of Argonne National Laboratory.

const EPSMCH: f64 = 2.220446049250313e-16;
const DWARF: f64 = 2.2250738585072014e-308;

/// The Euclidean norm, summed as MINPACK's `enorm` (small, intermediate and large components
/// apart).
fn enorm(x: &[f64]) -> f64 {
    let rgiant = 2f64.powf(63.5);
    let rdwarf = 0.5 / rgiant;
    let agiant = rgiant / x.len() as f64;
    let (mut s1, mut s2, mut s3, mut x1max, mut x3max) = (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for &v in x {
        let xabs = v.abs();
        if xabs <= rdwarf || xabs >= agiant {
            if xabs > rdwarf {
                if xabs > x1max {
                    s1 = 1.0 + s1 * sq(x1max / xabs);
                    x1max = xabs;
                } else {
                    s1 += sq(xabs / x1max);
                }
            } else if xabs > x3max {
                s3 = 1.0 + s3 * sq(x3max / xabs);
                x3max = xabs;
            } else if xabs != 0.0 {
                s3 += sq(xabs / x3max);
            }
        } else {
            s2 += xabs * xabs;
        }
    }
    if s1 != 0.0 {
        return x1max * (s1 + (s2 / x1max) / x1max).sqrt();
    }
    if s2 != 0.0 {
        return if s2 >= x3max {
            (s2 * (1.0 + (x3max / s2) * (x3max * s3))).sqrt()
        } else {
            (x3max * ((s2 / x3max) + (x3max * s3))).sqrt()
        };
    }
    x3max * s3.sqrt()
}

/// `pow(v, 2.0)`, which the C library rounds as the product.
fn sq(v: f64) -> f64 {
    v * v
}

/// Householder QR with column pivoting of the `m` x `n` column-major `a` (`qrfac`).
fn qrfac(
    m: usize,
    n: usize,
    a: &mut [f64],
    ipvt: &mut [usize],
    rdiag: &mut [f64],
    acnorm: &mut [f64],
    wa: &mut [f64],
) {
    for j in 0..n {
        acnorm[j] = enorm(&a[j * m..j * m + m]);
        rdiag[j] = acnorm[j];
        wa[j] = rdiag[j];
        ipvt[j] = j;
    }
    for j in 0..m.min(n) {
        let mut kmax = j;
        for k in j..n {
            if rdiag[k] > rdiag[kmax] {
                kmax = k;
            }
        }
        if kmax != j {
            for i in 0..m {
                a.swap(i + m * j, i + m * kmax);
            }
            rdiag[kmax] = rdiag[j];
            wa[kmax] = wa[j];
            ipvt.swap(j, kmax);
        }
        let mut ajnorm = enorm(&a[m * j + j..m * j + m]);
        if ajnorm == 0.0 {
            rdiag[j] = -ajnorm;
            continue;
        }
        if a[m * j + j] < 0.0 {
            ajnorm = -ajnorm;
        }
        for i in j..m {
            a[i + m * j] /= ajnorm;
        }
        a[j + m * j] += 1.0;
        for k in j + 1..n {
            let mut ssum = 0.0;
            for i in j..m {
                ssum += a[i + m * j] * a[i + m * k];
            }
            let temp = ssum / a[j + m * j];
            for i in j..m {
                a[i + m * k] -= temp * a[i + m * j];
            }
            if rdiag[k] != 0.0 {
                let temp = a[j + m * k] / rdiag[k];
                rdiag[k] *= (1.0 - temp * temp).max(0.0).sqrt();
                if 0.05 * sq(rdiag[k] / wa[k]) <= EPSMCH {
                    rdiag[k] = enorm(&a[(j + 1) + m * k..m * k + m]);
                    wa[k] = rdiag[k];
                }
            }
        }
        rdiag[j] = -ajnorm;
    }
}

/// Solves `a x = b, d x = 0` in the least-squares sense from the QR factors (`qrsolv`); `r` has
/// leading dimension `ldr`.
#[allow(clippy::too_many_arguments)]
fn qrsolv(
    n: usize,
    r: &mut [f64],
    ldr: usize,
    ipvt: &[usize],
    diag: &[f64],
    qtb: &[f64],
    x: &mut [f64],
    sdiag: &mut [f64],
    wa: &mut [f64],
) {
    for j in 0..n {
        for i in j..n {
            r[i + j * ldr] = r[j + i * ldr];
        }
        x[j] = r[j + j * ldr];
        wa[j] = qtb[j];
    }
    for j in 0..n {
        let l = ipvt[j];
        if diag[l] != 0.0 {
            for s in sdiag.iter_mut().take(n).skip(j) {
                *s = 0.0;
            }
            sdiag[j] = diag[l];
            let mut qtbpj = 0.0;
            for k in j..n {
                if sdiag[k] == 0.0 {
                    continue;
                }
                let (ccos, ssin);
                if r[ldr * k + k].abs() < sdiag[k].abs() {
                    let ccotan = r[ldr * k + k] / sdiag[k];
                    ssin = 0.5 / (0.25 + 0.25 * sq(ccotan)).sqrt();
                    ccos = ssin * ccotan;
                } else {
                    let ttan = sdiag[k] / r[ldr * k + k];
                    ccos = 0.5 / (0.25 + 0.25 * sq(ttan)).sqrt();
                    ssin = ccos * ttan;
                }
                r[ldr * k + k] *= ccos;
                r[ldr * k + k] += ssin * sdiag[k];
                let temp = ccos * wa[k] + ssin * qtbpj;
                qtbpj = -ssin * wa[k] + ccos * qtbpj;
                wa[k] = temp;
                for i in k + 1..n {
                    let temp = ccos * r[i + ldr * k] + ssin * sdiag[i];
                    sdiag[i] = -ssin * r[i + ldr * k] + ccos * sdiag[i];
                    r[i + ldr * k] = temp;
                }
            }
        }
        sdiag[j] = r[ldr * j + j];
        r[ldr * j + j] = x[j];
    }
    let mut nsing = n;
    for j in 0..n {
        if sdiag[j] == 0.0 && nsing == n {
            nsing = j;
        }
        if nsing < n {
            wa[j] = 0.0;
        }
    }
    for k in 1..=nsing {
        let j = nsing - k;
        let mut ssum = 0.0;
        for i in j + 1..nsing {
            ssum += r[i + j * ldr] * wa[i];
        }
        wa[j] = (wa[j] - ssum) / sdiag[j];
    }
    for j in 0..n {
        x[ipvt[j]] = wa[j];
    }
}

/// The Levenberg-Marquardt parameter for the step bound `delta` (`lmpar`).
#[allow(clippy::too_many_arguments)]
fn lmpar(
    n: usize,
    r: &mut [f64],
    ldr: usize,
    ipvt: &[usize],
    diag: &[f64],
    qtb: &[f64],
    delta: f64,
    par: &mut f64,
    x: &mut [f64],
    sdiag: &mut [f64],
    wa1: &mut [f64],
    wa2: &mut [f64],
) {
    let mut nsing = n;
    for j in 0..n {
        wa1[j] = qtb[j];
        if r[j + j * ldr] == 0.0 && nsing == n {
            nsing = j;
        }
        if nsing < n {
            wa1[j] = 0.0;
        }
    }
    for k in 1..=nsing {
        let j = nsing - k;
        wa1[j] /= r[j + j * ldr];
        let temp = wa1[j];
        for i in 0..j {
            wa1[i] -= r[i + j * ldr] * temp;
        }
    }
    for j in 0..n {
        x[ipvt[j]] = wa1[j];
    }
    let mut iter = 0;
    for j in 0..n {
        wa2[j] = diag[j] * x[j];
    }
    let mut dxnorm = enorm(&wa2[..n]);
    let mut fp = dxnorm - delta;
    if fp <= 0.1 * delta {
        *par = 0.0;
        return;
    }
    let mut parl = 0.0;
    if nsing == n {
        for j in 0..n {
            let l = ipvt[j];
            wa1[j] = diag[l] * (wa2[l] / dxnorm);
        }
        for j in 0..n {
            let mut ssum = 0.0;
            for i in 0..j {
                ssum += r[i + j * ldr] * wa1[i];
            }
            wa1[j] = (wa1[j] - ssum) / r[j + j * ldr];
        }
        let temp = enorm(&wa1[..n]);
        parl = ((fp / delta) / temp) / temp;
    }
    for j in 0..n {
        let mut ssum = 0.0;
        for i in 0..=j {
            ssum += r[i + j * ldr] * qtb[i];
        }
        wa1[j] = ssum / diag[ipvt[j]];
    }
    let gnorm = enorm(&wa1[..n]);
    let mut paru = gnorm / delta;
    if paru == 0.0 {
        paru = DWARF / delta.min(0.1);
    }
    *par = par.max(parl).min(paru);
    if *par == 0.0 {
        *par = gnorm / dxnorm;
    }
    loop {
        iter += 1;
        if *par == 0.0 {
            *par = DWARF.max(paru * 0.001);
        }
        let temp = par.sqrt();
        for j in 0..n {
            wa1[j] = temp * diag[j];
        }
        qrsolv(n, r, ldr, ipvt, &wa1[..n], qtb, x, sdiag, wa2);
        for j in 0..n {
            wa2[j] = diag[j] * x[j];
        }
        dxnorm = enorm(&wa2[..n]);
        let temp = fp;
        fp = dxnorm - delta;
        if fp.abs() <= 0.1 * delta || (parl == 0.0 && fp <= temp && temp < 0.0) || iter == 10 {
            return;
        }
        for j in 0..n {
            let l = ipvt[j];
            wa1[j] = diag[l] * (wa2[l] / dxnorm);
        }
        for j in 0..n {
            wa1[j] /= sdiag[j];
            let temp = wa1[j];
            for i in j + 1..n {
                wa1[i] -= r[i + j * ldr] * temp;
            }
        }
        let temp = enorm(&wa1[..n]);
        let parc = ((fp / delta) / temp) / temp;
        if fp > 0.0 {
            parl = parl.max(*par);
        }
        if fp < 0.0 {
            paru = paru.min(*par);
        }
        *par = parl.max(*par + parc);
    }
}

/// Minimises the sum of squares of `fcn(x)` (`m` values) from `x` with scipy's `leastsq`
/// defaults (`ftol = xtol = 1.49012e-8`, `gtol = 0`, `maxfev = 200 (n + 1)`, `epsfcn` the
/// machine epsilon, `factor = 100`, variables scaled internally); `None` where scipy reports
/// that no optimum was found (`ier` not 1 to 4), as `curve_fit` then raises.
pub fn lmdif(m: usize, x: &mut [f64], fcn: impl Fn(&[f64], &mut [f64])) -> Option<()> {
    let n = x.len();
    if n == 0 || m < n {
        return None;
    }
    let (ftol, xtol, gtol, factor) = (1.49012e-8, 1.49012e-8, 0.0, 100.0);
    let maxfev = 200 * (n + 1);
    // `fdjac2`'s step: `epsfcn` is the machine epsilon.
    let eps = EPSMCH.sqrt();
    let (mut fvec, mut fjac) = (vec![0.0; m], vec![0.0; m * n]);
    let (mut diag, mut qtf, mut ipvt) = (vec![0.0; n], vec![0.0; n], vec![0usize; n]);
    let (mut wa1, mut wa2, mut wa3, mut wa4) =
        (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; m]);
    fcn(x, &mut fvec);
    let mut nfev = 1;
    let mut fnorm = enorm(&fvec);
    let (mut par, mut iter, mut delta, mut xnorm) = (0.0f64, 1, 0.0f64, 0.0f64);
    loop {
        // The forward-difference Jacobian (`fdjac2`).
        for j in 0..n {
            let temp = x[j];
            let mut h = eps * temp.abs();
            if h == 0.0 {
                h = eps;
            }
            x[j] = temp + h;
            fcn(x, &mut wa4);
            x[j] = temp;
            for i in 0..m {
                fjac[i + m * j] = (wa4[i] - fvec[i]) / h;
            }
        }
        nfev += n;
        qrfac(m, n, &mut fjac, &mut ipvt, &mut wa1, &mut wa2, &mut wa3);
        if iter == 1 {
            for j in 0..n {
                diag[j] = if wa2[j] == 0.0 { 1.0 } else { wa2[j] };
            }
            for j in 0..n {
                wa3[j] = diag[j] * x[j];
            }
            xnorm = enorm(&wa3);
            delta = factor * xnorm;
            if delta == 0.0 {
                delta = factor;
            }
        }
        wa4.copy_from_slice(&fvec);
        for j in 0..n {
            if fjac[j + m * j] != 0.0 {
                let mut ssum = 0.0;
                for i in j..m {
                    ssum += fjac[i + m * j] * wa4[i];
                }
                let temp = -ssum / fjac[j + m * j];
                for i in j..m {
                    wa4[i] += fjac[i + m * j] * temp;
                }
            }
            fjac[j + m * j] = wa1[j];
            qtf[j] = wa4[j];
        }
        let mut gnorm = 0.0f64;
        if fnorm != 0.0 {
            for j in 0..n {
                let l = ipvt[j];
                if wa2[l] != 0.0 {
                    let mut ssum = 0.0;
                    for i in 0..=j {
                        ssum += fjac[i + m * j] * (qtf[i] / fnorm);
                    }
                    gnorm = gnorm.max((ssum / wa2[l]).abs());
                }
            }
        }
        if gnorm <= gtol {
            return Some(());
        }
        for j in 0..n {
            diag[j] = diag[j].max(wa2[j]);
        }
        loop {
            lmpar(
                n, &mut fjac, m, &ipvt, &diag, &qtf, delta, &mut par, &mut wa1, &mut wa2, &mut wa3,
                &mut wa4,
            );
            for j in 0..n {
                wa1[j] = -wa1[j];
                wa2[j] = x[j] + wa1[j];
                wa3[j] = diag[j] * wa1[j];
            }
            let pnorm = enorm(&wa3);
            if iter == 1 {
                delta = delta.min(pnorm);
            }
            fcn(&wa2, &mut wa4);
            nfev += 1;
            let fnorm1 = enorm(&wa4);
            let actred = if 0.1 * fnorm1 < fnorm {
                1.0 - sq(fnorm1 / fnorm)
            } else {
                -1.0
            };
            for j in 0..n {
                wa3[j] = 0.0;
                let temp = wa1[ipvt[j]];
                for i in 0..=j {
                    wa3[i] += fjac[i + m * j] * temp;
                }
            }
            let temp1 = enorm(&wa3) / fnorm;
            let temp2 = (par.sqrt() * pnorm) / fnorm;
            let prered = temp1 * temp1 + temp2 * temp2 / 0.5;
            let dirder = -(temp1 * temp1 + temp2 * temp2);
            let ratio = if prered != 0.0 { actred / prered } else { 0.0 };
            if ratio <= 0.25 {
                let mut temp = if actred < 0.0 {
                    (0.5 * dirder) / (dirder + 0.5 * actred)
                } else {
                    0.5
                };
                if 0.1 * fnorm1 >= fnorm || temp < 0.1 {
                    temp = 0.1;
                }
                delta = temp * delta.min(pnorm / 0.1);
                par /= temp;
            } else if par == 0.0 || ratio >= 0.75 {
                delta = pnorm / 0.5;
                par *= 0.5;
            }
            if ratio >= 0.0001 {
                for j in 0..n {
                    x[j] = wa2[j];
                    wa2[j] = diag[j] * x[j];
                }
                fvec.copy_from_slice(&wa4);
                xnorm = enorm(&wa2);
                fnorm = fnorm1;
                iter += 1;
            }
            let small = actred.abs() <= ftol && prered <= ftol && 0.5 * ratio <= 1.0;
            if small || delta <= xtol * xnorm {
                return Some(());
            }
            // MINPACK's info 5 to 8: scipy's `curve_fit` raises "Optimal parameters not found".
            if nfev >= maxfev
                || (actred.abs() <= EPSMCH && prered <= EPSMCH && 0.5 * ratio <= 1.0)
                || delta <= EPSMCH * xnorm
                || gnorm <= EPSMCH
            {
                return None;
            }
            if ratio >= 0.0001 {
                break;
            }
        }
    }
}
