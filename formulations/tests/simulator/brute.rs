//! The brute-force reference: unrolls a pattern over many periods and checks it the slow,
//! obvious way.

use super::*;

#[derive(Debug)]
pub(super) struct Brute {
    pub(super) valid: bool,
    pub(super) why: String,
    pub(super) in_flight: Vec<u32>,
    pub(super) peak: Vec<f64>,
}

/// Unrolls `pattern` over many periods and checks it the slow, obvious way. Intervals are
/// half-open: an operation occupies [start, start + duration), a micro-batch's activations live on
/// its stage's GPUs from the start of its F to the end of its B.
pub(super) fn brute(inst: &Instance, plan: &Plan, pattern: &Pattern) -> Brute {
    let t = pattern.period;
    let tol = 1e-9 * t.max(1.0);
    let ops = timed_ops(inst, plan, pattern);
    let n = plan.stages.len();
    let hmin = ops.iter().map(|o| o.shift).min().unwrap();
    let hmax = ops.iter().map(|o| o.shift).max().unwrap();
    let dmax = ops.iter().map(|o| o.duration).fold(0.0, f64::max);
    let spread = (hmax - hmin) as usize + (dmax / t).ceil() as usize + 2;
    let periods = 4 * spread;
    let occ = unroll(&ops, t, periods);
    let res: HashMap<OpId, Vec<ResourceId>> =
        ops.iter().map(|o| (o.id, o.resources.clone())).collect();
    let mut at: HashMap<(OpId, i64), (f64, f64)> = HashMap::new();
    for o in &occ {
        assert!(at.insert((o.id, o.batch), (o.start, o.end)).is_none());
    }
    let mut out = Brute {
        valid: true,
        why: String::new(),
        in_flight: vec![0; n],
        peak: vec![0.0; inst.cluster.gpus as usize],
    };
    // Dependencies of every micro-batch present in the window.
    let mut edges = Vec::new();
    for s in 0..n.saturating_sub(1) {
        if res.contains_key(&op(OpKind::SendF, s)) {
            edges.push((op(OpKind::F, s), op(OpKind::SendF, s)));
            edges.push((op(OpKind::SendF, s), op(OpKind::F, s + 1)));
            edges.push((op(OpKind::B, s + 1), op(OpKind::SendB, s)));
            edges.push((op(OpKind::SendB, s), op(OpKind::B, s)));
        } else {
            edges.push((op(OpKind::F, s), op(OpKind::F, s + 1)));
            edges.push((op(OpKind::B, s + 1), op(OpKind::B, s)));
        }
    }
    edges.push((op(OpKind::F, n - 1), op(OpKind::B, n - 1)));
    for &(a, b) in &edges {
        for batch in -(periods as i64)..(2 * periods as i64) {
            if let (Some(x), Some(y)) = (at.get(&(a, batch)), at.get(&(b, batch))) {
                if x.1 > y.0 + tol {
                    out.valid = false;
                    out.why = format!("{a} -> {b} on micro-batch {batch}");
                    return out;
                }
            }
        }
    }
    // No two operations of one resource intersect on the timeline.
    let mut by_res: BTreeMap<ResourceId, Vec<(f64, f64, OpId)>> = BTreeMap::new();
    for o in &occ {
        for r in &res[&o.id] {
            by_res.entry(*r).or_default().push((o.start, o.end, o.id));
        }
    }
    for (r, v) in &by_res {
        for i in 0..v.len() {
            for j in i + 1..v.len() {
                let (a, b) = (v[i], v[j]);
                if a.0.max(b.0) < a.1.min(b.1) - tol {
                    out.valid = false;
                    out.why = format!("{} and {} overlap on {r} at {}", a.2, b.2, a.0.max(b.0));
                    return out;
                }
            }
        }
    }
    // Activations over the steady-state window [w0, w0 + T).
    let w0 = (2 * spread) as f64 * t;
    let chain = inst.chain();
    let life: Vec<Vec<(f64, f64)>> = (0..n)
        .map(|s| {
            at.iter()
                .filter(|((id, _), _)| *id == op(OpKind::F, s))
                .filter_map(|(&(_, batch), &(fs, _))| {
                    at.get(&(op(OpKind::B, s), batch)).map(|&(_, be)| (fs, be))
                })
                .collect()
        })
        .collect();
    let per_mb: Vec<f64> = plan
        .stages
        .iter()
        .map(|st| chain.saved(st.first, st.last + 1))
        .collect();
    let mut probes: Vec<f64> = occ
        .iter()
        .flat_map(|o| [o.start, o.end])
        .filter(|&x| x >= w0 - tol && x < w0 + t - tol)
        .collect();
    probes.push(w0);
    for &tau in &probes {
        let alive: Vec<u32> = (0..n)
            .map(|s| {
                life[s]
                    .iter()
                    .filter(|&&(a, b)| a <= tau + tol && b > tau + tol)
                    .count() as u32
            })
            .collect();
        for (k, a) in out.in_flight.iter_mut().zip(&alive) {
            *k = (*k).max(*a);
        }
        for g in 0..out.peak.len() {
            let bytes: f64 = (0..n)
                .filter(|&s| plan.stages[s].gpus.contains(&(g as u32)))
                .map(|s| alive[s] as f64 * per_mb[s])
                .sum();
            out.peak[g] = out.peak[g].max(bytes);
        }
    }
    out
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Runs both and compares verdicts, and on valid patterns in-flight counts, peaks and busy times.
pub(super) fn compare(
    inst: &Instance,
    plan: &Plan,
    pattern: &Pattern,
) -> Result<bool, TestCaseError> {
    let sim = simulate(inst, plan, pattern);
    let bf = brute(inst, plan, pattern);
    prop_assert_eq!(
        sim.is_ok(),
        bf.valid,
        "simulator {:?} vs brute force {:?} ({})\npattern {:?}",
        sim,
        bf.valid,
        bf.why,
        pattern
    );
    if let Ok(rep) = sim {
        prop_assert_eq!(
            &rep.in_flight,
            &bf.in_flight,
            "in flight; pattern {:?}",
            pattern
        );
        prop_assert_eq!(rep.peak_activations.len(), bf.peak.len());
        for (a, b) in rep.peak_activations.iter().zip(&bf.peak) {
            prop_assert!(
                close(*a, *b),
                "peak {:?} vs {:?}",
                rep.peak_activations,
                bf.peak
            );
        }
        let ops = plan_operations(inst, plan);
        let mut busy: BTreeMap<ResourceId, f64> = BTreeMap::new();
        for (d, rs) in ops.values() {
            for r in rs {
                *busy.entry(*r).or_default() += d;
            }
        }
        for (r, b) in &busy {
            prop_assert!(close(rep.busy[r], *b), "busy of {}", r);
        }
        return Ok(true);
    }
    Ok(false)
}
