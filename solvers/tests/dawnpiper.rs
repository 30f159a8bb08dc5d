//! DawnPiper algorithms: the exhaustive DP against plain enumeration of every cut position,
//! BiPar never below the optimum, Theorem 4.1's interval, precise errors.

use pipeplan_formulations::dawnpiper::balance::{comp_mem_positions, Model};
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, Context, SolveError, SolveOptions};
use pipeplan_solvers::dawnpiper::bipar::{BiPar, Dawnpiper};
use pipeplan_solvers::dawnpiper::exhaustive::{optimum, Exhaustive};
use pipeplan_solvers::dawnpiper::options::{Comm, DpOptions};
use pipeplan_solvers::dawnpiper::stages::StageCache;
use pipeplan_solvers::Deadline;
use serde_json::json;

mod dawnpiper_common;
use dawnpiper_common::{objective, with};

/// Deterministic pseudo-random layers (xorshift), `mem` GiB per GPU.
fn random(seed: u64, n: usize, gpus: u32, mem: f64, schedule: &str) -> Instance {
    random_bw(seed, n, gpus, mem, schedule, 1e11)
}

/// [`random`] with links of `bw` bytes/s.
fn random_bw(seed: u64, n: usize, gpus: u32, mem: f64, schedule: &str, bw: f64) -> Instance {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut r = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 1000) as f64 / 1000.0
    };
    let layers: Vec<_> = (0..n)
        .map(|i| {
            let f = 0.5 + 2.0 * r();
            json!({"name": format!("l{i}"), "forward": f, "backward": 2.0 * f,
                   "weights": 5e7 + 2e8 * r(), "output": 5e7 + 3e8 * r()})
        })
        .collect();
    let doc = json!({
        "format": "pipeplan/instance@1", "name": format!("r{seed}"),
        "model": {"batch": 4, "input": 1e8, "layers": layers},
        "cluster": {"gpus": gpus, "memory": mem * 1073741824.0,
                    "bandwidth": {"intra_node": bw}, "pcie": 1.2e10},
        "training": {"schedule": schedule, "micro_batches": 4}
    });
    Instance::from_json(&doc.to_string()).unwrap()
}

fn opts(inst: &Instance) -> DpOptions {
    settings(inst, &SolveOptions::default())
}

/// The DawnPiper settings of `opts`, checked as the harness checks them.
fn settings(inst: &Instance, opts: &SolveOptions) -> DpOptions {
    DpOptions::from(inst, &Context::of(&Exhaustive, opts).unwrap().settings)
}

/// Every composition of nodes 0..n into p stages, by recursion; with `comm=include` the links
/// between stages count too.
fn brute(cache: &mut StageCache, p: usize) -> Option<f64> {
    fn go(cache: &mut StageCache, a: usize, s: usize, p: usize, acc: f64, best: &mut Option<f64>) {
        let n = cache.model.len();
        let acc = if s > 0 && cache.comm() == Comm::Include {
            acc.max(cache.model.comm.link_ms(a - 1, s - 1))
        } else {
            acc
        };
        if s == p - 1 {
            let sp = cache.get(a, n - 1, s);
            if sp.fits {
                let v = acc.max(sp.time);
                if best.is_none_or(|b| v < b) {
                    *best = Some(v);
                }
            }
            return;
        }
        for e in a..=n - (p - s) {
            let sp = cache.get(a, e, s).clone();
            if sp.fits {
                go(cache, e + 1, s + 1, p, acc.max(sp.time), best);
            }
        }
    }
    let mut best = None;
    go(cache, 0, 0, p, 0.0, &mut best);
    best
}

#[test]
fn exhaustive_dp_equals_enumeration() {
    let mut feasible = 0;
    for seed in 0..40u64 {
        for (kind, sched) in [
            (ScheduleKind::OneFOneB, "1f1b"),
            (ScheduleKind::Gpipe, "gpipe"),
            (ScheduleKind::Async, "async"),
        ] {
            let n = 5 + (seed % 5) as usize;
            let p = 2 + (seed % 3) as usize;
            let mem = 1.5 + (seed % 7) as f64 * 0.5;
            let inst = random(seed, n, p as u32, mem, sched);
            let m = Model::new(&inst, kind, p).unwrap();
            let mut cache = StageCache::new(&m, opts(&inst));
            feasible += usize::from(dp_equals_brute(
                &mut cache,
                p,
                &format!("seed {seed} {sched}"),
            ));
        }
    }
    assert!(feasible > 20, "{feasible}");
}

/// The exhaustive DP's optimum equals plain enumeration's (both infeasible, or equal within
/// 1e-9); true when a plan exists.
fn dp_equals_brute(cache: &mut StageCache, p: usize, what: &str) -> bool {
    let dp = optimum(cache, p, &Deadline::none()).unwrap().map(|x| x.0);
    let bf = brute(cache, p);
    match (dp, bf) {
        (Some(a), Some(b)) => {
            assert!((a - b).abs() <= 1e-9 * b, "{what}: {a} vs {b}");
            true
        }
        (None, None) => false,
        other => panic!("{what}: {other:?}"),
    }
}

#[test]
fn bipar_is_never_below_the_exhaustive_optimum() {
    let mut gaps = Vec::new();
    for seed in 0..30u64 {
        let inst = random(seed, 12, 4, 2.0 + (seed % 4) as f64, "1f1b");
        let o = SolveOptions {
            stages: Some(4),
            ..SolveOptions::default()
        };
        let (Ok(b), Ok(e)) = (Dawnpiper.solve(&inst, &o), Exhaustive.solve(&inst, &o)) else {
            continue;
        };
        let (vb, ve) = (
            b.claimed.objective.unwrap().value,
            e.claimed.objective.unwrap().value,
        );
        assert!(
            vb >= ve * (1.0 - 1e-9),
            "seed {seed}: bipar {vb} < optimum {ve}"
        );
        gaps.push(vb / ve - 1.0);
    }
    assert!(gaps.len() > 10, "{}", gaps.len());
}

/// Theorem 4.1: with monotone compute and memory, negligible communication and evenly
/// distributed optimization opportunities (identical layers), some optimal 2-stage cut lies
/// between the compute-balanced and the memory-balanced positions.
#[test]
fn theorem_4_1_interval_contains_an_optimum() {
    let mut checked = 0;
    for n in [6usize, 9, 12, 16] {
        for mem in [1.0, 1.5, 2.0, 3.0, 5.0, 8.0] {
            let layers: Vec<_> = (0..n)
                .map(|i| {
                    json!({"name": format!("l{i}"), "forward": 1.0, "backward": 2.0,
                                "weights": 1e8, "output": 1e8})
                })
                .collect();
            let doc = json!({
                "format": "pipeplan/instance@1", "name": "uniform",
                "model": {"batch": 4, "input": 1e8, "layers": layers},
                "cluster": {"gpus": 2, "memory": mem * 1073741824.0,
                            "bandwidth": {"intra_node": 1e12}, "pcie": 1.2e10},
                "training": {"schedule": "1f1b", "micro_batches": 4}
            });
            let inst = Instance::from_json(&doc.to_string()).unwrap();
            let m = Model::new(&inst, ScheduleKind::OneFOneB, 2).unwrap();
            let mut cache = StageCache::new(&m, opts(&inst));
            let Some((best, _)) = optimum(&mut cache, 2, &Deadline::none()).unwrap() else {
                continue;
            };
            let (cb, mb) = comp_mem_positions(&m, 0, n - 1, 0, 1, 0);
            let (lo, hi) = (cb.min(mb), cb.max(mb));
            let inside = (lo..=hi)
                .filter_map(|p| {
                    let (l, r) = (
                        cache.get(0, p, 0).clone(),
                        cache.get(p + 1, n - 1, 1).clone(),
                    );
                    (l.fits && r.fits).then(|| l.time.max(r.time))
                })
                .fold(f64::INFINITY, f64::min);
            assert!(
                (inside - best).abs() <= 1e-9 * best,
                "n {n} mem {mem}: interval {lo}..={hi} best {inside} vs optimum {best}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 12, "{checked}");
}

#[test]
fn errors_are_precise() {
    let inst = random(1, 5, 8, 8.0, "1f1b");
    let o = SolveOptions {
        stages: Some(6),
        ..SolveOptions::default()
    };
    let e = Dawnpiper.solve(&inst, &o).unwrap_err().to_string();
    assert!(e.contains("6 stages but the chain has 5 layers"), "{e}");
    let mut o = SolveOptions::default();
    o.params.insert("memopt".into(), "maybe".into());
    let e = Dawnpiper.solve(&inst, &o).unwrap_err().to_string();
    assert!(e.starts_with("--set memopt"), "{e}");
    let mut o = SolveOptions::default();
    o.params.insert("grid".into(), "1".into());
    assert!(matches!(
        Dawnpiper.solve(&inst, &o),
        Err(SolveError::Input(_))
    ));
    let tiny = random(1, 5, 2, 0.01, "1f1b");
    let e = Dawnpiper
        .solve(&tiny, &SolveOptions::default())
        .unwrap_err();
    assert!(matches!(e, SolveError::Infeasible(_)), "{e}");
}

/// Above `max_nodes` the exhaustive reference declines the graph up front, naming its size, the
/// limit and the setting that lifts it; raised, it solves.
#[test]
fn exhaustive_declines_graphs_above_its_limit() {
    let big = random(1, 70, 2, 8.0, "1f1b");
    let e = Exhaustive.supports(&big).unwrap_err().0;
    assert!(
        e.contains("70 nodes")
            && e.contains("limit of 64 nodes")
            && e.contains("--set max_nodes=70"),
        "{e}"
    );
    let e = Exhaustive
        .solve(&big, &SolveOptions::default())
        .unwrap_err();
    assert!(matches!(e, SolveError::Unsupported(_)), "{e}");
    let raised = with(&[("max_nodes", "70")], None);
    assert!(pipeplan_solvers::harness::support(&Exhaustive, &big, &raised).is_ok());
    assert!(!matches!(
        Exhaustive.solve(&big, &raised),
        Err(SolveError::Unsupported(_))
    ));
    let small = random(1, 64, 2, 8.0, "1f1b");
    assert!(Exhaustive.supports(&small).is_ok());
}

#[test]
fn memopt_off_never_beats_memopt_on_in_fitting() {
    for seed in 0..10u64 {
        let inst = random(seed, 10, 4, 2.0, "gpipe");
        let mut off = SolveOptions::default();
        off.params.insert("memopt".into(), "off".into());
        if Exhaustive.solve(&inst, &off).is_ok() {
            assert!(
                Exhaustive.solve(&inst, &SolveOptions::default()).is_ok(),
                "seed {seed}"
            );
        }
    }
}

/// The compute lower bound only stops walks where no later position can win: the pruned BiPar
/// returns exactly the partition (cuts, time) of the full walk.
#[test]
fn pruned_bipar_equals_the_full_walk() {
    let (mut compared, mut pruned) = (0, 0);
    for seed in 0..60u64 {
        let sched = ["1f1b", "gpipe", "async"][(seed % 3) as usize];
        let kind = [
            ScheduleKind::OneFOneB,
            ScheduleKind::Gpipe,
            ScheduleKind::Async,
        ][(seed % 3) as usize];
        let n = 10 + (seed % 23) as usize;
        let p = 2 + (seed % 6) as usize;
        let inst = random(seed, n, p as u32, 2.0 + (seed % 9) as f64, sched);
        let m = Model::new(&inst, kind, p).unwrap();
        let none = Deadline::none();
        let mut c1 = StageCache::new(&m, opts(&inst));
        let mut full = BiPar::new(&mut c1, &none);
        full.prune = false;
        let want = full.solve(0, n - 1, 0, p - 1);
        let mut c2 = StageCache::new(&m, opts(&inst));
        let mut fast = BiPar::new(&mut c2, &none);
        let got = fast.solve(0, n - 1, 0, p - 1);
        assert_eq!(got, want, "seed {seed} ({n} nodes, {p} stages, {sched})");
        compared += 1;
        pruned += fast.pruned.min(1);
    }
    assert_eq!(compared, 60);
    assert!(pruned > 5, "the bound never pruned: {pruned}");
}

/// With links in the objective (`comm=include`), the exhaustive DP is still exact: equal to
/// plain enumeration that adds every link between stages.
#[test]
fn exhaustive_dp_with_links_equals_enumeration() {
    let mut feasible = 0;
    for seed in 0..30u64 {
        let (kind, sched) = [
            (ScheduleKind::OneFOneB, "1f1b"),
            (ScheduleKind::Gpipe, "gpipe"),
            (ScheduleKind::Async, "async"),
        ][(seed % 3) as usize];
        let n = 5 + (seed % 5) as usize;
        let p = 2 + (seed % 3) as usize;
        let inst = random_bw(seed, n, p as u32, 2.0 + (seed % 5) as f64, sched, 2e10);
        let o = settings(&inst, &with(&[("comm", "include")], None));
        let m = Model::new(&inst, kind, p).unwrap();
        let mut cache = StageCache::new(&m, o);
        feasible += usize::from(dp_equals_brute(
            &mut cache,
            p,
            &format!("seed {seed} {sched}"),
        ));
    }
    assert!(feasible > 15, "{feasible}");
}

/// `comm=include` plans for the evaluator's period: on asynchronous pipelines (no data
/// parallelism) the claimed objective is the evaluated period, for BiPar and the exhaustive
/// reference; BiPar is never below that reference. With the default objective, slow links make
/// the evaluated period exceed the claim (the gap the option closes).
#[test]
fn comm_include_claims_the_evaluated_period() {
    let (mut checked, mut ignored_links) = (0, 0);
    for seed in 0..24u64 {
        let inst = random_bw(seed, 10, 4, 3.0 + (seed % 4) as f64, "async", 3e9);
        let inc = with(&[("comm", "include")], Some(4));
        let (Ok(b), Ok(e)) = (Dawnpiper.solve(&inst, &inc), Exhaustive.solve(&inst, &inc)) else {
            continue;
        };
        for sol in [&b, &e] {
            let ev = pipeplan_formulations::evaluate(&inst, &sol.plan).unwrap();
            let (claim, period) = (objective(sol), ev.period_ms.unwrap());
            assert!(
                (claim - period).abs() <= 1e-9 * period,
                "seed {seed} {}: claimed {claim} vs evaluated {period}",
                sol.algorithm
            );
            assert!(ev.fits && ev.valid_schedule != Some(false), "seed {seed}");
        }
        assert!(
            objective(&b) >= objective(&e) * (1.0 - 1e-9),
            "seed {seed}: bipar {} below the optimum {}",
            objective(&b),
            objective(&e)
        );
        let plain = Dawnpiper.solve(&inst, &with(&[], Some(4))).unwrap();
        let ev = pipeplan_formulations::evaluate(&inst, &plain.plan).unwrap();
        if ev.period_ms.unwrap() > objective(&plain) * (1.0 + 1e-9) {
            ignored_links += 1;
        }
        checked += 1;
    }
    assert!(checked > 10, "{checked}");
    assert!(ignored_links > 0, "no instance where links mattered");
}

/// Six equal nodes on 2 async stages, links of 10 GB/s, node outputs `outputs`; with
/// `residual`, l0 is also read by l5 (its output crosses every cut).
fn b2_instance(outputs: [f64; 6], residual: bool) -> Instance {
    let layers: Vec<_> = (0..6)
        .map(|i| {
            let carried = if residual && (1..5).contains(&i) {
                outputs[0]
            } else {
                0.0
            };
            let cut = outputs[i] + carried;
            json!({"name": format!("l{i}"), "forward": 1.0, "backward": 2.0, "weights": 0.0,
                   "output": outputs[i], "cut": cut, "saved": 1e9})
        })
        .collect();
    let last = if residual {
        json!({"name": "l5", "inputs": ["l0", "l4"]})
    } else {
        json!({"name": "l5"})
    };
    let nodes = json!([{"name": "l0"}, {"name": "l1"}, {"name": "l2"}, {"name": "l3"},
                       {"name": "l4"}, last]);
    let doc = json!({
        "format": "pipeplan/instance@1", "name": "b2",
        "model": {"batch": 4, "input": 1e6, "layers": layers},
        "cluster": {"gpus": 2, "memory": 512.0 * 1073741824.0,
                    "bandwidth": {"intra_node": 1e10}},
        "training": {"schedule": "async"},
        "extensions": {"graph": {"nodes": nodes}}
    });
    Instance::from_json(&doc.to_string()).unwrap()
}

/// Appendix B.2 (`comm=avoid`): l0 is read by l5 too (5 GB crossing every cut, inevitable)
/// and l2 sends 10 GB to l3. The walk from the compute-balanced cut (after l2) skips it, since
/// its 10 GB beyond the window's inevitable bytes take longer over the link than either stage
/// computes, and takes the next position (after l1), whose only large tensor is the inevitable
/// residual; the evaluated period drops accordingly. When every position of the window is too
/// costly, the walk is redone without the filter (same plan as the default).
#[test]
fn comm_avoid_skips_avoidable_traffic_and_disregards_inevitable() {
    let inst = b2_instance([5e9, 1e6, 1e10, 1e6, 1e6, 1e6], true);
    let m = Model::new(&inst, ScheduleKind::Async, 2).unwrap();
    assert_eq!(
        comp_mem_positions(&m, 0, 5, 0, 1, 0),
        (2, 1),
        "window 1..=2"
    );
    let plain = Dawnpiper.solve(&inst, &with(&[], Some(2))).unwrap();
    let avoid = Dawnpiper
        .solve(&inst, &with(&[("comm", "avoid")], Some(2)))
        .unwrap();
    assert_eq!(plain.plan.stages[0].last, 2);
    assert_eq!(avoid.plan.stages[0].last, 1);
    assert_eq!(
        avoid.stats.counters["positions avoided (communication)"],
        1.0
    );
    assert_eq!(
        avoid.stats.counters["walks without the communication filter"],
        0.0
    );
    // The paper's objective gets worse (stages 2 + 4 nodes), the evaluated period better.
    assert!(objective(&avoid) > objective(&plain));
    let period = |sol: &pipeplan_solvers::algorithm::Solution| {
        pipeplan_formulations::evaluate(&inst, &sol.plan)
            .unwrap()
            .period_ms
            .unwrap()
    };
    assert!((period(&plain) - 2.0 * 1.5e10 / 1e10 * 1e3).abs() < 1e-6);
    assert!((period(&avoid) - 2.0 * (5e9 + 1e6) / 1e10 * 1e3).abs() < 1e-6);
    // Every node sends 10 GB to the next and nothing crosses the whole window: both positions
    // are avoided and the walk falls back to the default one.
    let heavy = b2_instance([1e10; 6], false);
    let mh = Model::new(&heavy, ScheduleKind::Async, 2).unwrap();
    assert_eq!(comp_mem_positions(&mh, 0, 5, 0, 1, 0), (2, 1));
    let plain = Dawnpiper.solve(&heavy, &with(&[], Some(2))).unwrap();
    let avoid = Dawnpiper
        .solve(&heavy, &with(&[("comm", "avoid")], Some(2)))
        .unwrap();
    assert_eq!(
        avoid.stats.counters["walks without the communication filter"],
        1.0
    );
    assert_eq!(avoid.plan.stages, plain.plan.stages);
    // The objective of comm=avoid is the default one: the exhaustive reference is unchanged.
    let e1 = Exhaustive.solve(&inst, &with(&[], Some(2))).unwrap();
    let e2 = Exhaustive
        .solve(&inst, &with(&[("comm", "avoid")], Some(2)))
        .unwrap();
    assert_eq!(e1.plan.stages, e2.plan.stages);
    assert!(objective(&avoid) >= objective(&e2));
    let e = Dawnpiper
        .solve(&inst, &with(&[("comm", "sometimes")], Some(2)))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--set comm") && e.contains("ignore, avoid or include"),
        "{e}"
    );
}
