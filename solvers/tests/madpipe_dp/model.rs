//! The paper's model (§4.2), written independently of the DP: the exact periods and memory of an
//! allocation, brute force over allocations, and the checks of the DP's claims and of its search
//! against them.

use super::*;

/// A stage of an allocation: layers `k..l` (half-open), on the special GPU or not.
pub(super) type Placed = (usize, usize, bool);

/// The exact model (no rounding) of an allocation at T^, stage by stage.
#[derive(Debug)]
pub(super) struct Exact {
    pub(super) period: f64,
    /// Per stage: memory charged (M(k,l,g), or M(k,l,g-1) on the special GPU), g, and the
    /// delay V below it.
    pub(super) memory: Vec<f64>,
    pub(super) group: Vec<u32>,
    pub(super) delay: Vec<f64>,
    pub(super) special_memory: f64,
    pub(super) special_load: f64,
}

/// `ceil(x / T^)`, up to rounding noise of 1e-12 T^.
pub(super) fn groups(x: f64, t_hat: f64) -> f64 {
    (x / t_hat - 1e-12).ceil().max(0.0)
}

pub(super) fn oplus(x: f64, y: f64, t_hat: f64) -> f64 {
    if groups(x, t_hat) == groups(x + y, t_hat) {
        x + y
    } else {
        t_hat * groups(x, t_hat) + y
    }
}

/// The model of §4.2: walking from the last stage with V = 0, a stage keeps
/// g = max(1, ceil((V + U)/T^)), a normal GPU needs M(k,l,g) <= M, the special GPU the sum of
/// M(k,l,g-1) <= M; V becomes (V (+) U) (+) C(cut before the stage). `None` when a memory
/// does not fit or the allocation is not one of the recurrence's (more than `normal` normal
/// stages, or, once they are used up, anything but one special stage for the rest).
pub(super) fn exact_model(
    mc: &MadChain,
    t_hat: f64,
    normal: usize,
    alloc: &[Placed],
) -> Option<Exact> {
    let limit = mc.memory * (1.0 + 1e-9);
    let n = alloc.len();
    let mut out = Exact {
        period: 0.0,
        memory: vec![0.0; n],
        group: vec![0; n],
        delay: vec![0.0; n],
        special_memory: 0.0,
        special_load: 0.0,
    };
    let mut left = normal;
    let mut v = 0.0;
    for i in (0..n).rev() {
        let (k, l, special) = alloc[i];
        if left == 0 && !(i == 0 && special) {
            return None;
        }
        let u = mc.u(k, l);
        let c = mc.c(k);
        let g = groups(v + u, t_hat).max(1.0);
        out.group[i] = g as u32;
        out.delay[i] = v;
        if special {
            out.memory[i] = mc.m(k, l, g - 1.0);
            out.special_memory += out.memory[i];
            out.special_load += u;
            if out.special_memory > limit {
                return None;
            }
        } else {
            out.memory[i] = mc.m(k, l, g);
            if out.memory[i] > limit {
                return None;
            }
            left -= 1;
            out.period = out.period.max(u);
        }
        out.period = out.period.max(c);
        v = oplus(oplus(v, u, t_hat), c, t_hat);
    }
    out.period = out.period.max(out.special_load);
    Some(out)
}

/// Every allocation of `layers` layers: every cut set, every stage on a normal GPU or not.
pub(super) fn allocations(layers: usize) -> Vec<Vec<Placed>> {
    let mut all = Vec::new();
    for cuts in 0u32..(1 << (layers - 1)) {
        let mut ranges = Vec::new();
        let mut first = 0;
        for i in 0..layers {
            if i == layers - 1 || cuts & (1 << i) != 0 {
                ranges.push((first, i + 1));
                first = i + 1;
            }
        }
        for labels in 0u32..(1 << ranges.len()) {
            all.push(
                ranges
                    .iter()
                    .enumerate()
                    .map(|(s, &(k, l))| (k, l, labels & (1 << s) != 0))
                    .collect(),
            );
        }
    }
    all
}

pub(super) fn brute_force(mc: &MadChain, t_hat: f64, normal: usize) -> Option<f64> {
    allocations(mc.len())
        .iter()
        .filter_map(|a| exact_model(mc, t_hat, normal, a))
        .map(|e| e.period)
        .min_by(f64::total_cmp)
}

pub(super) fn placed(a: &DpAllocation) -> Vec<Placed> {
    a.stages
        .iter()
        .map(|s| (s.first, s.last + 1, s.special))
        .collect()
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// At least `b`, up to float noise.
pub(super) fn at_least(a: f64, b: f64) -> bool {
    a >= b - 1e-9 * b.abs().max(1.0)
}

pub(super) fn coarse() -> DpOptions {
    DpOptions {
        grid_t: 5,
        grid_m: 3,
        grid_v: 4,
        k_rounds: 10,
        blocks: 128,
    }
}

/// Checks the claims of an allocation the DP made with `opts` against the exact model: it fits,
/// and nothing is under-estimated (equal with exact values).
pub(super) fn check_claims(
    mc: &MadChain,
    t_hat: f64,
    normal: usize,
    a: &DpAllocation,
    exact: bool,
) {
    let alloc = placed(a);
    let e = exact_model(mc, t_hat, normal, &alloc)
        .unwrap_or_else(|| panic!("the DP's allocation {alloc:?} does not fit the exact model"));
    let cmp = |claimed: f64, truth: f64, what: &str| {
        if exact {
            assert!(close(claimed, truth), "{what}: {claimed} vs exact {truth}");
        } else {
            assert!(
                at_least(claimed, truth),
                "{what}: {claimed} < exact {truth}"
            );
        }
    };
    cmp(a.period, e.period, "period");
    cmp(a.special_load, e.special_load, "special load");
    cmp(a.special_memory, e.special_memory, "special memory");
    for (i, s) in a.stages.iter().enumerate() {
        cmp(s.memory, e.memory[i], "stage memory");
        cmp(s.delay, e.delay[i], "delay");
        if exact {
            assert_eq!(s.group, e.group[i]);
        } else {
            assert!(s.group >= e.group[i]);
        }
        assert!(s.memory <= mc.memory * (1.0 + 1e-9));
    }
    assert!(a.special_memory <= mc.memory * (1.0 + 1e-9));
    // Contiguous stages covering the chain.
    assert_eq!(alloc.first().map(|s| s.0), Some(0));
    assert_eq!(alloc.last().map(|s| s.1), Some(mc.len()));
    assert!(alloc
        .windows(2)
        .all(|w| w[0].1 == w[1].0 && w[0].0 < w[0].1));
    assert!(alloc.iter().filter(|s| !s.2).count() <= normal);
}

/// Replays Algorithm 1 from the recorded rounds and checks the result against them.
pub(super) fn check_search(inst: &Instance, r: &DpResult, opts: &DpOptions) {
    let mc = MadChain::new(inst);
    let n = mc.len();
    let total = mc.u(0, n);
    let comm: f64 = (1..n).map(|k| mc.c(k)).sum();
    let (mut lb, mut ub) = (total / r.gpus as f64, total + comm);
    let mut t_hat = lb;
    assert!(
        r.rounds.len() == opts.k_rounds || (r.extra_round && r.rounds.len() == opts.k_rounds + 1)
    );
    let mut best = f64::INFINITY;
    for (i, round) in r.rounds.iter().enumerate() {
        let t = match round.outcome {
            RoundOutcome::Period(t) => t,
            RoundOutcome::Infeasible => f64::INFINITY,
            RoundOutcome::TimedOut => panic!("no deadline"),
        };
        if i < opts.k_rounds {
            assert_eq!(round.t_hat, t_hat, "round {i}");
            lb = lb.max(t.min(t_hat));
            ub = ub.min(t.max(t_hat));
            t_hat = (lb + ub) / 2.0;
        }
        best = best.min(t.max(round.t_hat));
    }
    assert_eq!(r.period, best);
    assert_eq!(r.period, r.dp_period.max(r.t_hat));
    assert!(!r.timed_out);
    // The allocation: claims hold at its T^ under the exact model.
    let a = DpAllocation {
        period: r.dp_period,
        stages: r.detail.clone(),
        special_load: r.special_load,
        special_memory: if r.detail.iter().any(|s| s.special) {
            r.memory[r.special_gpu as usize]
        } else {
            0.0
        },
    };
    let exact = opts.grid_t == 0 && opts.grid_m == 0 && opts.grid_v == 0;
    check_claims(&mc, r.t_hat, r.gpus - 1, &a, exact);
    // GPU ids: normal stages 0, 1, ... in chain order, special stages on P - 1.
    let mut next = 0;
    for (s, d) in r.stages.iter().zip(&r.detail) {
        assert_eq!(
            (s.first, s.last, s.gpus.clone()),
            (d.first, d.last, vec![d.gpu])
        );
        if d.special {
            assert_eq!(d.gpu, r.special_gpu);
        } else {
            assert_eq!(d.gpu, next);
            assert_eq!(r.memory[d.gpu as usize], d.memory);
            next += 1;
        }
    }
    assert_eq!(r.special_gpu as usize, r.gpus - 1);
    assert_eq!(r.memory.len(), r.gpus);
}
