//! DawnPiper algorithms: the exhaustive DP against plain enumeration of every cut position,
//! BiPar never below the optimum, Theorem 4.1's interval, precise errors.

use pipeplan_formulations::dawnpiper::balance::{comp_mem_positions, Model};
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::{Algorithm, SolveError, SolveOptions};
use pipeplan_solvers::dawnpiper::bipar::{BiPar, Dawnpiper};
use pipeplan_solvers::dawnpiper::exhaustive::{optimum, Exhaustive};
use pipeplan_solvers::dawnpiper::options::DpOptions;
use pipeplan_solvers::dawnpiper::stages::StageCache;
use serde_json::json;

/// Deterministic pseudo-random layers (xorshift), `mem` GiB per GPU.
fn random(seed: u64, n: usize, gpus: u32, mem: f64, schedule: &str) -> Instance {
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
                    "bandwidth": {"intra_node": 1e11}, "pcie": 1.2e10},
        "training": {"schedule": schedule, "micro_batches": 4}
    });
    Instance::from_json(&doc.to_string()).unwrap()
}

fn opts(inst: &Instance) -> DpOptions {
    DpOptions::from(inst, &SolveOptions::default()).unwrap()
}

/// Every composition of nodes 0..n into p stages, by recursion.
fn brute(cache: &mut StageCache, p: usize) -> Option<f64> {
    fn go(cache: &mut StageCache, a: usize, s: usize, p: usize, acc: f64, best: &mut Option<f64>) {
        let n = cache.model.len();
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
            let dp = optimum(&mut cache, p, None).unwrap().map(|x| x.0);
            let bf = brute(&mut cache, p);
            match (dp, bf) {
                (Some(a), Some(b)) => {
                    assert!((a - b).abs() <= 1e-9 * b, "seed {seed} {sched}: {a} vs {b}");
                    feasible += 1;
                }
                (None, None) => {}
                other => panic!("seed {seed} {sched}: {other:?}"),
            }
        }
    }
    assert!(feasible > 20, "{feasible}");
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
            let Some((best, _)) = optimum(&mut cache, 2, None).unwrap() else {
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
    let big = random(1, 70, 2, 8.0, "1f1b");
    let e = Exhaustive
        .solve(&big, &SolveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("--set max_nodes"), "{e}");
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
        let mut c1 = StageCache::new(&m, opts(&inst));
        let mut full = BiPar::new(&mut c1, None);
        full.prune = false;
        let want = full.solve(0, n - 1, 0, p - 1);
        let mut c2 = StageCache::new(&m, opts(&inst));
        let mut fast = BiPar::new(&mut c2, None);
        let got = fast.solve(0, n - 1, 0, p - 1);
        assert_eq!(got, want, "seed {seed} ({n} nodes, {p} stages, {sched})");
        compared += 1;
        pruned += fast.pruned.min(1);
    }
    assert_eq!(compared, 60);
    assert!(pruned > 5, "the bound never pruned: {pruned}");
}
