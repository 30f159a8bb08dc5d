//! MadPipe-DP and its T^ search against an independent implementation of the paper's model
//! (§4.2) and against the neutral evaluator, on random small chains (1-7 layers, 1-4 GPUs,
//! random times, sizes, bandwidth and memory) and on shipped instances:
//!
//! - with exact values (no grid), the DP's period at a fixed T^ equals the brute-force minimum
//!   over every allocation of the recurrence's model (contiguous stages, each on a normal GPU or
//!   on the special one; at most P - 1 normal stages; once they are used up, the rest is one
//!   special stage), and its allocation achieves it;
//! - hence no contiguous partition (all normal, or one stage on the special GPU) beats it;
//! - with grids (the paper's and coarse ones), rounding never under-estimates: the DP's
//!   allocation fits in the exact model, and its claimed period, delays, groups, stage memories,
//!   special load and memory are at least the exact model's for that allocation;
//! - on a contiguous allocation the model's memory is the evaluator's under 1F1B* at T^;
//! - the search follows Algorithm 1 round by round and returns the least max(T, T^);
//! - one thread or four give the same result;
//! - bad input gets a precise error (GPU count, options, memory that never fits, deadline).

use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::instance::{Cluster, Instance, Layer};
use pipeplan_formulations::madpipe::MadChain;
use pipeplan_formulations::testing::shipped;
use pipeplan_formulations::{Plan, Schedule};
use pipeplan_solvers::madpipe::dp::{
    madpipe_dp, madpipe_dp_at, DpAllocation, DpOptions, DpResult, RoundOutcome,
};
use pipeplan_solvers::{Deadline, SolveError};
use proptest::prelude::*;

// ------------------------------------------------------------------------------------------------
// Instances

/// (forward ms, backward ms, weight bytes, output bytes).
type LayerSpec = (f64, f64, f64, f64);

fn build(layers: &[LayerSpec], input: f64, gpus: u32, memory: f64, bandwidth: f64) -> Instance {
    let layers = layers.iter().enumerate();
    let layers = layers.map(|(i, &(f, b, w, o))| Layer::new(format!("l{i}"), f, b, w, o));
    let cluster = Cluster::single_node(gpus, memory, bandwidth);
    let mut inst = Instance::new("random", 1, input, layers.collect(), cluster);
    inst.source = "solvers/tests/madpipe_dp.rs".into();
    inst.validate().expect("generated test instance is valid");
    inst
}

/// A random chain with a memory between "almost nothing fits" and "everything fits", and a T^
/// between a twentieth and twice the total compute.
fn case() -> impl Strategy<Value = (Instance, usize, f64)> {
    (
        prop::collection::vec((0.1f64..5.0, 0.1f64..10.0, 0.0f64..4e7, 1e5f64..3e7), 1..=7),
        1e5f64..3e7,
        1usize..=4,
        0.05f64..1.5,
        1e9f64..1e11,
        0.05f64..2.0,
    )
        .prop_map(|(layers, input, gpus, mem_frac, bw, t_frac)| {
            // Memory relative to what the whole chain needs on one GPU with 2 in flight.
            let states: f64 = layers.iter().map(|l| 3.0 * l.2).sum();
            let acts: f64 = input + layers.iter().map(|l| l.3).sum::<f64>();
            let memory = (mem_frac * (states + 2.0 * acts)).max(1e6);
            let inst = build(&layers, input, gpus as u32, memory, bw);
            let total: f64 = layers.iter().map(|l| l.0 + l.1).sum();
            (inst, gpus, t_frac * total)
        })
}

// ------------------------------------------------------------------------------------------------
// The paper's model, written independently of the DP

/// A stage of an allocation: layers `k..l` (half-open), on the special GPU or not.
type Placed = (usize, usize, bool);

/// The exact model (no rounding) of an allocation at T^, stage by stage.
#[derive(Debug)]
struct Exact {
    period: f64,
    /// Per stage: memory charged (M(k,l,g), or M(k,l,g-1) on the special GPU), g, and the
    /// delay V below it.
    memory: Vec<f64>,
    group: Vec<u32>,
    delay: Vec<f64>,
    special_memory: f64,
    special_load: f64,
}

/// `ceil(x / T^)`, up to rounding noise of 1e-12 T^.
fn groups(x: f64, t_hat: f64) -> f64 {
    (x / t_hat - 1e-12).ceil().max(0.0)
}

fn oplus(x: f64, y: f64, t_hat: f64) -> f64 {
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
fn exact_model(mc: &MadChain, t_hat: f64, normal: usize, alloc: &[Placed]) -> Option<Exact> {
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
fn allocations(layers: usize) -> Vec<Vec<Placed>> {
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

fn brute_force(mc: &MadChain, t_hat: f64, normal: usize) -> Option<f64> {
    allocations(mc.len())
        .iter()
        .filter_map(|a| exact_model(mc, t_hat, normal, a))
        .map(|e| e.period)
        .min_by(f64::total_cmp)
}

fn placed(a: &DpAllocation) -> Vec<Placed> {
    a.stages
        .iter()
        .map(|s| (s.first, s.last + 1, s.special))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// At least `b`, up to float noise.
fn at_least(a: f64, b: f64) -> bool {
    a >= b - 1e-9 * b.abs().max(1.0)
}

fn coarse() -> DpOptions {
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
fn check_claims(mc: &MadChain, t_hat: f64, normal: usize, a: &DpAllocation, exact: bool) {
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

// ------------------------------------------------------------------------------------------------
// Fixed T^: the DP against brute force

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn exact_dp_equals_brute_force((inst, gpus, t_hat) in case()) {
        let mc = MadChain::new(&inst);
        let run = madpipe_dp_at(&inst, gpus, t_hat, &DpOptions::exact(), &Deadline::none()).unwrap();
        let brute = brute_force(&mc, t_hat, gpus - 1);
        match (&run.allocation, brute) {
            (None, None) => {}
            (Some(a), Some(b)) => {
                prop_assert!(close(a.period, b), "DP {} vs brute force {}", a.period, b);
                check_claims(&mc, t_hat, gpus - 1, a, true);
            }
            (a, b) => prop_assert!(false, "DP {:?} vs brute force {:?}", a.as_ref().map(|a| a.period), b),
        }
    }

    #[test]
    fn no_contiguous_partition_beats_the_dp((inst, gpus, t_hat) in case()) {
        // Contiguous partitions into at most P stages: all on normal GPUs (at most P - 1), or
        // exactly one of them on the special GPU.
        let mc = MadChain::new(&inst);
        let run = madpipe_dp_at(&inst, gpus, t_hat, &DpOptions::exact(), &Deadline::none()).unwrap();
        for alloc in allocations(mc.len()) {
            let special = alloc.iter().filter(|s| s.2).count();
            if alloc.len() > gpus || special > 1 || (special == 0 && alloc.len() == gpus) {
                continue;
            }
            if let Some(e) = exact_model(&mc, t_hat, gpus - 1, &alloc) {
                let dp = run.allocation.as_ref().map(|a| a.period);
                prop_assert!(dp.is_some_and(|d| d <= e.period * (1.0 + 1e-9)),
                    "DP {:?} worse than contiguous {:?} at {}", dp, alloc, e.period);
            }
        }
    }

    #[test]
    fn rounding_never_under_estimates((inst, gpus, t_hat) in case()) {
        let mc = MadChain::new(&inst);
        let exact = brute_force(&mc, t_hat, gpus - 1);
        for opts in [DpOptions::default(), coarse()] {
            let run = madpipe_dp_at(&inst, gpus, t_hat, &opts, &Deadline::none()).unwrap();
            if let Some(a) = &run.allocation {
                check_claims(&mc, t_hat, gpus - 1, a, false);
                // What fits on the grid fits exactly, and no better than the exact optimum.
                let e = exact.expect("a gridded allocation fits the exact model");
                prop_assert!(at_least(a.period, e));
            }
        }
    }

    #[test]
    fn the_search_follows_algorithm_1((inst, gpus, _t) in case()) {
        for opts in [DpOptions::exact(), DpOptions::default()] {
            match madpipe_dp(&inst, gpus, &opts, None, &Deadline::none()) {
                Ok(r) => check_search(&inst, &r, &opts),
                Err(SolveError::Infeasible(msg)) => {
                    // Then even the most permissive T^ has no allocation.
                    prop_assert!(msg.contains("no allocation"), "{msg}");
                }
                Err(e) => prop_assert!(false, "{e}"),
            }
        }
    }
}

/// Replays Algorithm 1 from the recorded rounds and checks the result against them.
fn check_search(inst: &Instance, r: &DpResult, opts: &DpOptions) {
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

// ------------------------------------------------------------------------------------------------
// The model's memory is the evaluator's

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn contiguous_memory_is_the_evaluators((inst, gpus, t_hat) in case()) {
        // Every contiguous partition on normal GPUs whose loads fit in T^: under 1F1B* at period
        // T^ the evaluator measures exactly the model's M(k, l, g) on every GPU.
        let mc = MadChain::new(&inst);
        for alloc in allocations(mc.len()) {
            if alloc.iter().any(|s| s.2) || alloc.len() > gpus {
                continue;
            }
            let fits_period = alloc.iter().all(|&(k, l, _)| mc.u(k, l) <= t_hat && mc.c(k) <= t_hat);
            if !fits_period {
                continue;
            }
            let Some(e) = exact_model(&mc, t_hat, alloc.len(), &alloc) else { continue };
            let ends: Vec<usize> = alloc.iter().map(|s| s.1 - 1).collect();
            let plan = Plan::contiguous(&ends, Schedule::Async { period: Some(t_hat), pattern: None });
            let ev = evaluate(&inst, &plan).unwrap();
            prop_assert_eq!(ev.valid_schedule, Some(true));
            for (s, m) in e.memory.iter().enumerate() {
                prop_assert!(close(ev.peak_memory[s], *m), "GPU {}: evaluator {} vs model {}", s, ev.peak_memory[s], m);
                prop_assert_eq!(ev.in_flight[s], e.group[s]);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn contiguous_dp_claims_bound_the_evaluator((inst, gpus, t_hat) in case()) {
        // When the DP's allocation leaves the special GPU empty and fits its loads in T^, the
        // plan runs under 1F1B* at T^: the evaluator's memory is at most the claimed one on
        // every GPU (equal with exact values). Both for a fixed T^ and after the search.
        for opts in [DpOptions::default(), DpOptions::exact()] {
            let mut cases: Vec<(f64, Vec<(usize, f64)>)> = Vec::new();
            if let Some(a) = madpipe_dp_at(&inst, gpus, t_hat, &opts, &Deadline::none()).unwrap().allocation {
                if !a.stages.iter().any(|s| s.special) && a.period <= t_hat {
                    cases.push((t_hat, a.stages.iter().map(|s| (s.last, s.memory)).collect()));
                }
            }
            if let Ok(r) = madpipe_dp(&inst, gpus, &opts, None, &Deadline::none()) {
                if !r.detail.iter().any(|s| s.special) && r.dp_period <= r.t_hat {
                    let claims = r.stages.iter().map(|s| (s.last, r.memory[s.gpus[0] as usize]));
                    cases.push((r.t_hat, claims.collect()));
                }
            }
            for (t, stages) in cases {
                let ends: Vec<usize> = stages.iter().map(|s| s.0).collect();
                let plan = Plan::contiguous(&ends, Schedule::Async { period: Some(t), pattern: None });
                let ev = evaluate(&inst, &plan).unwrap();
                prop_assert!(ev.fits, "{:?}", ev.notes);
                for (g, &(_, claimed)) in stages.iter().enumerate() {
                    if opts == DpOptions::exact() {
                        prop_assert!(close(ev.peak_memory[g], claimed));
                    } else {
                        prop_assert!(ev.peak_memory[g] <= claimed * (1.0 + 1e-9));
                    }
                }
            }
        }
    }
}

#[test]
fn shipped_instances_claims_hold() {
    // Every GPU count on the small shipped CNNs: Algorithm 1 replayed, claims >= exact model.
    for name in [
        "resnet50-1000px-b8-4gpu-8gib",
        "resnet50-1000px-b8-8gpu-16gib",
        "inception-v3-1000px-b8-4gpu-6gib",
        "inception-v3-1000px-b8-8gpu-3gib",
    ] {
        let inst = shipped(name);
        for gpus in 1..=inst.cluster.gpus as usize {
            match madpipe_dp(&inst, gpus, &DpOptions::default(), None, &Deadline::none()) {
                Ok(r) => check_search(&inst, &r, &DpOptions::default()),
                Err(SolveError::Infeasible(msg)) => assert!(msg.contains("no allocation"), "{msg}"),
                Err(e) => panic!("{name} P={gpus}: {e}"),
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Determinism

#[test]
fn one_thread_or_four_give_the_same_result() {
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let (one, four) = (pool(1), pool(4));
    // ResNet-101 on 8 GPUs has levels large enough to run on the threads.
    for name in [
        "resnet101-1000px-b8-8gpu-8gib",
        "resnet50-1000px-b8-8gpu-16gib",
        "inception-v3-1000px-b8-8gpu-3gib",
    ] {
        let inst = shipped(name);
        let p = inst.cluster.gpus as usize;
        for opts in [DpOptions::default(), coarse()] {
            let a = one
                .install(|| madpipe_dp(&inst, p, &opts, None, &Deadline::none()))
                .unwrap();
            let b = four
                .install(|| madpipe_dp(&inst, p, &opts, None, &Deadline::none()))
                .unwrap();
            assert_eq!(a, b, "{name}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(30))]

    #[test]
    fn determinism_on_random_chains((inst, gpus, _t) in case()) {
        let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        let a = pool(1).install(|| madpipe_dp(&inst, gpus, &DpOptions::default(), None, &Deadline::none()));
        let b = pool(3).install(|| madpipe_dp(&inst, gpus, &DpOptions::default(), None, &Deadline::none()));
        prop_assert_eq!(a, b);
    }
}

// ------------------------------------------------------------------------------------------------
// Bad input

fn small() -> Instance {
    build(
        &[
            (1.0, 2.0, 1e6, 1e6),
            (2.0, 3.0, 2e6, 1e6),
            (1.0, 1.0, 1e6, 1e6),
        ],
        1e6,
        3,
        1e9,
        1e10,
    )
}

#[test]
fn gpu_count_and_options_are_checked() {
    let inst = small();
    let field = |e: SolveError| match e {
        SolveError::Input(e) => e.field_path().unwrap_or_default().to_string(),
        e => panic!("not an input error: {e}"),
    };
    let d = DpOptions::default();
    assert_eq!(
        field(madpipe_dp(&inst, 0, &d, None, &Deadline::none()).unwrap_err()),
        "gpus"
    );
    let e = madpipe_dp(&inst, 4, &d, None, &Deadline::none()).unwrap_err();
    assert!(e.to_string().contains("cluster has 3"), "{e}");
    let bad = DpOptions { k_rounds: 0, ..d };
    assert_eq!(
        field(madpipe_dp(&inst, 3, &bad, None, &Deadline::none()).unwrap_err()),
        "--set rounds"
    );
    let bad = DpOptions { grid_v: 1, ..d };
    assert_eq!(
        field(madpipe_dp(&inst, 3, &bad, None, &Deadline::none()).unwrap_err()),
        "--set grid_v"
    );
    let e = madpipe_dp_at(&inst, 3, 0.0, &d, &Deadline::none()).unwrap_err();
    assert_eq!(field(e), "t_hat");
    // One GPU: everything on the special GPU, as one stage (the paper's base case).
    let r = madpipe_dp(&inst, 1, &d, None, &Deadline::none()).unwrap();
    assert_eq!(r.detail.len(), 1);
    assert!(r.detail[0].special && r.detail[0].gpu == 0);
}

#[test]
fn memory_that_never_fits_names_the_binding_constraint() {
    // Layer 1's model states alone (3 x 400 MB) exceed 1 GB.
    let inst = build(
        &[
            (1.0, 2.0, 1e6, 1e6),
            (2.0, 3.0, 4e8, 1e6),
            (1.0, 1.0, 1e6, 1e6),
        ],
        1e6,
        3,
        1e9,
        1e10,
    );
    let msg = madpipe_dp(&inst, 3, &DpOptions::default(), None, &Deadline::none())
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with("no feasible plan"), "{msg}");
    assert!(
        msg.contains("layer 1 (l1)") && msg.contains("model states alone"),
        "{msg}"
    );
    // Each layer's states (600 MB) fit, but no two do on one GPU, and a stage on the normal GPU
    // needs its 600 MB input too (the special GPU, charged g - 1 = 0 micro-batches at the
    // largest T^, cannot take two layers nor one with its 1.2 GB of buffers).
    let inst = build(
        &[
            (1.0, 2.0, 2e8, 6e8),
            (2.0, 3.0, 2e8, 6e8),
            (1.0, 1.0, 2e8, 6e8),
        ],
        6e8,
        2,
        1e9,
        1e10,
    );
    let msg = madpipe_dp(&inst, 2, &DpOptions::default(), None, &Deadline::none())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("no allocation of the 3 layers on 2 GPUs"),
        "{msg}"
    );
    assert!(msg.contains("needs") && msg.contains("GPUs have"), "{msg}");
}

#[test]
fn a_passed_deadline_is_a_time_limit() {
    let inst = shipped("resnet50-1000px-b8-8gpu-16gib");
    let e = madpipe_dp(
        &inst,
        8,
        &DpOptions::default(),
        None,
        &Deadline::after(Some(std::time::Duration::ZERO)),
    )
    .unwrap_err();
    assert!(matches!(e, SolveError::TimeLimit(_)), "{e}");
    let e = madpipe_dp_at(
        &inst,
        8,
        100.0,
        &DpOptions::default(),
        &Deadline::after(Some(std::time::Duration::ZERO)),
    );
    assert!(matches!(e, Err(SolveError::TimeLimit(_))));
}

// ------------------------------------------------------------------------------------------------
// Long chains: the DP on merged blocks, below a ceiling

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// With `blocks` below the chain's length the DP runs on at most that many blocks; its
    /// stages still tile the layers in order with the layers' own loads. A ceiling bounds T^.
    #[test]
    fn merged_blocks_map_back_to_layers((inst, gpus, _t) in case(), blocks in 2usize..5) {
        let n = inst.num_layers();
        let opts = DpOptions { blocks, ..DpOptions::default() };
        let Ok(r) = madpipe_dp(&inst, gpus, &opts, None, &Deadline::none()) else {
            return Ok(());
        };
        prop_assert_eq!(r.blocks.is_some(), n > blocks);
        if let Some(b) = r.blocks {
            prop_assert!(b <= blocks, "{} blocks for at most {}", b, blocks);
        }
        let mut order: Vec<_> = r.detail.iter().collect();
        order.sort_by_key(|s| s.first);
        let mut next = 0;
        for s in &order {
            prop_assert_eq!(s.first, next);
            prop_assert!(s.last >= s.first);
            next = s.last + 1;
        }
        prop_assert_eq!(next, n);
        let stages = r.detail.len();
        prop_assert!(r.blocks.is_none_or(|b| stages <= b));
        // Every stage's load is the layers' own: merging changes no sum.
        let mc = MadChain::new(&inst);
        for s in &r.detail {
            prop_assert!((s.load - mc.u(s.first, s.last + 1)).abs() <= 1e-9 * s.load.max(1.0));
        }
        // A ceiling at the found period: T^ never exceeds it.
        let c = r.period;
        if let Ok(below) = madpipe_dp(&inst, gpus, &opts, Some(c), &Deadline::none()) {
            for round in &below.rounds[..opts.k_rounds.min(below.rounds.len())] {
                prop_assert!(round.t_hat <= c, "T^ {} above the ceiling {}", round.t_hat, c);
            }
        }
    }
}
