//! The valid period of a contiguous partition and `exact-contiguous`, against brute force and
//! the neutral evaluator, on random small chains (arbitrary float times and sizes, `saved` and
//! `cut` overrides, batch scaling, weight versions and optimizer states, one or several nodes, memory
//! from hopeless to roomy):
//!
//! - `valid_period` equals a brute-force scan of every breakpoint (sum of consecutive resource
//!   loads) with `evaluate()`: the evaluator fits at the period, not just below it (unless it is
//!   the largest load), and its memory and in-flight counts equal the claimed ones; when no period
//!   fits, the evaluator does not fit even at the sum of every load, on the GPU named;
//! - `exact-contiguous` equals the least valid period over every contiguous partition into at
//!   most P stages (and exactly P with `fewer=false`), or fails as infeasible exactly when no
//!   partition has a valid period; its plan's evaluation equals its claims;
//! - bad input (uncovered chains, periods below the load, impossible memory) gets precise errors.

use pipeplan_formulations::cost::{cut_costs, stage_costs};
use pipeplan_formulations::evaluate::{evaluate, pipeline_resources};
use pipeplan_formulations::instance::{Cluster, Instance, Layer, ScheduleKind, Training};
use pipeplan_formulations::one_f_one_b_star::Resource;
use pipeplan_formulations::testing::proptest_config;
use pipeplan_formulations::{Plan, Schedule};
use pipeplan_solvers::harness::run;
use pipeplan_solvers::madpipe::exact_contiguous::contiguous_optimum;
use pipeplan_solvers::madpipe::valid_period::{star_memory, valid_period, ValidPeriodError};
use pipeplan_solvers::{registry, SolveError, SolveOptions, Status};
use pipeplan_solvers::{Deadline, ObjectiveKind};
use proptest::prelude::*;
use std::time::Duration;

// ------------------------------------------------------------------------------------------------
// Instances

/// (forward, backward, weights, output, saved override, cut override).
type Spec = (f64, f64, f64, f64, Option<f64>, Option<f64>);

#[derive(Debug, Clone)]
struct Case {
    layers: Vec<Spec>,
    input: f64,
    gpus: u32,
    /// GPUs per node when the cluster has several nodes (slower links between them).
    per_node: Option<u32>,
    /// (model batch, micro-batch, weight versions, optimizer factor).
    training: (u32, Option<u32>, u32, f64),
    /// Memory as a fraction of the whole model's memory with one micro-batch in flight.
    memory_fraction: f64,
}

fn build(c: &Case) -> Instance {
    let (batch, micro_batch, weight_versions, optimizer_state_factor) = c.training;
    let layers = c.layers.iter().enumerate();
    let layers = layers.map(|(i, &(f, b, w, o, saved, cut))| Layer {
        saved,
        cut,
        ..Layer::new(format!("l{i}"), f, b, w, o)
    });
    let cluster = Cluster::single_node(c.gpus, 1.0, 3e9);
    let mut inst = Instance::new("random", batch, c.input, layers.collect(), cluster);
    inst.source = "solvers/tests/madpipe_contiguous.rs".into();
    inst.cluster.gpus_per_node = c.per_node;
    inst.cluster.bandwidth.inter_node = c.per_node.map(|_| 0.7e9);
    inst.training = Training {
        micro_batch,
        weight_versions,
        optimizer_state_factor,
        ..Training::default()
    };
    let ch = inst.chain();
    let copies = weight_versions as f64 + 1.0 + optimizer_state_factor;
    let whole = ch.weights(0, ch.len()) * copies + ch.saved(0, ch.len());
    inst.cluster.memory = (whole * c.memory_fraction).max(1.0);
    inst.validate().expect("generated instances are valid");
    inst
}

fn time() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 6 => 0.01f64..10.0]
}

fn size() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 6 => 1e3f64..5e7]
}

fn cases(max_layers: usize) -> impl Strategy<Value = Case> {
    let layer = (
        time(),
        time(),
        size(),
        size(),
        proptest::option::weighted(0.2, size()),
        proptest::option::weighted(0.2, size()),
    );
    (
        proptest::collection::vec(layer, 1..=max_layers),
        size(),
        1u32..=6,
        (any::<bool>(), 1u32..=3),
        (
            1u32..=4,
            proptest::option::of(1u32..=4),
            1u32..=2,
            0.0f64..2.0,
        ),
        0.15f64..2.0,
    )
        .prop_map(
            |(layers, input, gpus, two, training, memory_fraction)| Case {
                layers,
                input,
                per_node: (two.0 && two.1 < gpus && gpus % two.1 == 0).then_some(two.1),
                gpus,
                training,
                memory_fraction,
            },
        )
}

/// Every contiguous partition of `n` layers into `min..=max` stages, as last layers.
fn partitions(n: usize, min: usize, max: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for mask in 0u32..(1 << (n - 1)) {
        let mut ends: Vec<usize> = (0..n - 1).filter(|&i| mask & (1 << i) != 0).collect();
        ends.push(n - 1);
        if ends.len() >= min && ends.len() <= max {
            out.push(ends);
        }
    }
    out
}

/// The evaluator's resource loads for a contiguous partition.
fn loads(inst: &Instance, ends: &[usize]) -> Vec<f64> {
    let plan = Plan::contiguous(ends, Schedule::one_f_one_b_star(None));
    let chain = inst.chain();
    let (res, _) = pipeline_resources(
        &stage_costs(inst, &chain, &plan),
        &cut_costs(inst, &chain, &plan),
        ScheduleKind::Async,
    );
    res.iter().map(Resource::load).collect()
}

fn at(ends: &[usize], t: f64) -> Plan {
    Plan::contiguous(ends, Schedule::one_f_one_b_star(Some(t)))
}

/// Brute force: the least sum of consecutive loads (at least the largest load) at which the
/// evaluator says the plan fits, scanning them all in increasing order.
fn brute_valid_period(inst: &Instance, ends: &[usize]) -> Option<f64> {
    let l = loads(inst, ends);
    let max = l.iter().copied().fold(0.0, f64::max);
    let mut sums = Vec::new();
    for i in 0..l.len() {
        for j in i..l.len() {
            let s: f64 = l[i..=j].iter().sum();
            if s >= max && s > 0.0 {
                sums.push(s);
            }
        }
    }
    sums.sort_by(f64::total_cmp);
    sums.into_iter()
        .find(|&t| evaluate(inst, &at(ends, t)).unwrap().fits)
}

/// Whether a stage of the partition takes 0 ms. The simulator then measures a lifetime of 0 ms
/// for its micro-batches when the rest of its 1F1B* group takes 0 ms too, and counts one
/// micro-batch fewer than its group index (M(k, l, g) of the paper): the evaluator's memory can
/// be below the claim, and it may fit below the valid period.
fn zero_stage(inst: &Instance, ends: &[usize]) -> bool {
    let c = inst.chain();
    let mut first = 0;
    ends.iter().any(|&e| {
        let z = c.compute(first, e + 1) == 0.0;
        first = e + 1;
        z
    })
}

/// The instance with its GPU memory set between what the partition's worst GPU needs at the sum
/// of every load (every stage with 1 micro-batch in flight) and at the largest load (the most in
/// flight): `f = 0` and `f = 1` respectively, so that memory decides the period.
fn tighten(inst: &Instance, ends: &[usize], f: f64) -> Instance {
    let l = loads(inst, ends);
    let max = l.iter().copied().fold(0.0, f64::max);
    let total: f64 = l.iter().sum();
    if max <= 0.0 {
        return inst.clone();
    }
    let plan = Plan::contiguous(ends, Schedule::one_f_one_b_star(None));
    let worst = |t: f64| {
        star_memory(inst, &plan, t)
            .unwrap()
            .memory
            .into_iter()
            .fold(0.0, f64::max)
    };
    let (lo, hi) = (worst(total), worst(max));
    let mut out = inst.clone();
    out.cluster.memory = (lo + f * (hi - lo)).max(1.0);
    out
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
}

fn opts(params: &[(&str, &str)]) -> SolveOptions {
    SolveOptions {
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..SolveOptions::default()
    }
}

// ------------------------------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(proptest_config(500))]

    #[test]
    fn valid_period_equals_brute_force_and_the_evaluator(
        case in cases(7),
        pick in any::<u32>(),
        tight in proptest::option::weighted(0.6, 0.0f64..1.0),
    ) {
        let inst = build(&case);
        let n = inst.num_layers();
        let p = n.min(case.gpus as usize);
        let all = partitions(n, 1, p);
        let ends = &all[pick as usize % all.len()];
        let inst = match tight {
            Some(f) => tighten(&inst, ends, f),
            None => inst,
        };
        let brute = brute_valid_period(&inst, ends);
        let l = loads(&inst, ends);
        if l.iter().all(|&x| x == 0.0) {
            // No positive least period: a precise error (memory first), no panic.
            match valid_period(&inst, ends) {
                Err(ValidPeriodError::Memory(_)) => {}
                Err(e) => prop_assert!(e.to_string().contains("0 ms"), "{}", e),
                Ok(v) => prop_assert!(false, "{:?}", v),
            }
            return Ok(());
        }
        let degenerate = zero_stage(&inst, ends);
        match valid_period(&inst, ends) {
            Ok(v) => {
                let b = brute.expect("brute force finds a period when valid_period does");
                if degenerate {
                    prop_assert!(b <= v.period * (1.0 + 1e-12), "{} vs brute {}", v.period, b);
                } else {
                    prop_assert!(close(v.period, b, 1e-12), "{} vs brute {}", v.period, b);
                }
                let ev = evaluate(&inst, &at(ends, v.period)).unwrap();
                prop_assert!(ev.fits && ev.valid_schedule == Some(true), "{:?}", ev.notes);
                for (g, (&a, &b)) in ev.peak_memory.iter().zip(&v.peak_memory).enumerate() {
                    if degenerate {
                        prop_assert!(a <= b * (1.0 + 1e-12), "GPU {}: evaluator {} vs {}", g, a, b);
                    } else {
                        prop_assert!(close(a, b, 1e-12), "GPU {}: evaluator {} vs {}", g, a, b);
                    }
                }
                if degenerate {
                    return Ok(());
                }
                prop_assert_eq!(&ev.in_flight, &v.groups);
                // Below the evaluator's own rounding slack (1e-12 relative + 1e-12 ms).
                let below = v.period - (1e-9 * v.period + 1e-11);
                if below >= v.max_load {
                    let ev = evaluate(&inst, &at(ends, below)).unwrap();
                    prop_assert!(!ev.fits, "fits below the valid period {}", v.period);
                } else {
                    prop_assert!(v.period - v.max_load <= 1e-9 * v.period + 1e-11);
                }
            }
            Err(ValidPeriodError::Memory(m)) => {
                prop_assert!(degenerate || brute.is_none(), "brute force found {:?}", brute);
                if degenerate {
                    return Ok(());
                }
                // At the sum of every load (every group 1) the named GPU still does not fit,
                // with the memory stated.
                let total: f64 = l.iter().sum();
                let ev = evaluate(&inst, &at(ends, total)).unwrap();
                prop_assert!(!ev.fits);
                prop_assert!(ev.in_flight.iter().all(|&g| g == 1));
                prop_assert!(close(ev.peak_memory[m.gpu as usize], m.needed, 1e-12));
                prop_assert!(m.needed > m.limit);
                let msg = m.to_string();
                prop_assert!(msg.starts_with(&format!("GPU {} needs at least", m.gpu)), "{}", msg);
                prop_assert!(msg.contains("with 1 micro-batch in flight"), "{}", msg);
            }
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }

    #[test]
    fn exact_contiguous_equals_brute_force(
        case in cases(7),
        fewer in any::<bool>(),
        pick in any::<u32>(),
        tight in proptest::option::weighted(0.6, 0.0f64..1.0),
    ) {
        let inst = build(&case);
        let n = inst.num_layers();
        let p = n.min(case.gpus as usize);
        let inst = match tight {
            Some(f) => {
                let all = partitions(n, p, p);
                tighten(&inst, &all[pick as usize % all.len()], f)
            }
            None => inst,
        };
        let min = if fewer { 1 } else { p };
        let brute = partitions(n, min, p)
            .into_iter()
            .filter_map(|ends| valid_period(&inst, &ends).ok().map(|v| (v.period, ends)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let algo = registry::by_name("exact-contiguous").unwrap();
        let o = opts(&[("fewer", if fewer { "true" } else { "false" })]);
        match run(algo.as_ref(), &inst, &o) {
            Ok(sol) => {
                let (b, _) = brute.clone().expect("brute force finds a partition");
                let t = sol.claimed.period_ms.unwrap();
                prop_assert!(close(t, b, 1e-12), "exact {} vs brute {:?}", t, brute);
                prop_assert_eq!(sol.stats.status, Status::Optimal);
                let obj = sol.claimed.objective.as_ref().unwrap();
                prop_assert_eq!(obj.kind, ObjectiveKind::AsyncPeriod);
                prop_assert_eq!(obj.unit(), "ms");
                prop_assert_eq!(obj.value, t);
                prop_assert!(sol.plan.stages.len() >= min && sol.plan.stages.len() <= p);
                let ev = sol.evaluated.as_ref().unwrap();
                prop_assert!(ev.fits && ev.valid_schedule == Some(true), "{:?}", ev.notes);
                prop_assert_eq!(ev.period_ms, Some(t));
                let ends: Vec<usize> = sol.plan.stages.iter().map(|s| s.last).collect();
                let degenerate = zero_stage(&inst, &ends);
                let claimed = sol.claimed.peak_memory.as_ref().unwrap();
                for (&a, &c) in ev.peak_memory.iter().zip(claimed) {
                    if degenerate {
                        prop_assert!(a <= c * (1.0 + 1e-12), "evaluator {} vs claimed {}", a, c);
                    } else {
                        prop_assert!(close(a, c, 1e-12), "evaluator {} vs claimed {}", a, c);
                    }
                }
                // The period is the plan's own valid period.
                prop_assert_eq!(valid_period(&inst, &ends).unwrap().period, t);
                // Deterministic.
                let again = run(algo.as_ref(), &inst, &o).unwrap();
                prop_assert_eq!(again.plan, sol.plan);
            }
            Err(SolveError::Infeasible(msg)) => {
                prop_assert!(brute.is_none(), "infeasible ({}) but brute force found {:?}", msg, brute);
            }
            Err(SolveError::Input(e)) => {
                // Only when every operation takes 0 ms.
                prop_assert!(e.to_string().contains("0 ms"), "{}", e);
            }
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }

    #[test]
    fn star_memory_is_monotone_in_the_period(case in cases(6), pick in any::<u32>(), a in 1.0f64..3.0, b in 1.0f64..3.0) {
        let inst = build(&case);
        let n = inst.num_layers();
        let all = partitions(n, 1, n.min(case.gpus as usize));
        let ends = &all[pick as usize % all.len()];
        let l = loads(&inst, ends);
        let max = l.iter().copied().fold(0.0, f64::max);
        prop_assume!(max > 0.0);
        let (lo, hi) = (max * a.min(b), max * a.max(b));
        let plan = Plan::contiguous(ends, Schedule::one_f_one_b_star(None));
        let m_lo = star_memory(&inst, &plan, lo).unwrap();
        let m_hi = star_memory(&inst, &plan, hi).unwrap();
        for s in 0..ends.len() {
            prop_assert!(m_hi.groups[s] <= m_lo.groups[s]);
            prop_assert!(m_hi.memory[s] <= m_lo.memory[s]);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Hand-made cases

fn chain(layers: &[(f64, f64, &str, &str)], gpus: u32, memory: &str) -> Instance {
    let body: Vec<String> = layers
        .iter()
        .enumerate()
        .map(|(i, (f, b, w, o))| {
            format!(
                r#"{{"name": "l{i}", "forward": {f}, "backward": {b}, "weights": "{w}", "output": "{o}"}}"#
            )
        })
        .collect();
    Instance::from_json(&format!(
        r#"{{"format": "pipeplan/instance@1", "name": "hand",
          "model": {{"batch": 1, "input": "1 MiB", "layers": [{}]}},
          "cluster": {{"gpus": {gpus}, "memory": "{memory}", "bandwidth": {{"intra_node": "10 GB/s"}}}}}}"#,
        body.join(",")
    ))
    .unwrap()
}

#[test]
fn a_layer_that_fits_nowhere_is_named() {
    // Layer 1 has 4 GiB of weights: 12 GiB of model states on any GPU holding it.
    let inst = chain(
        &[
            (1.0, 2.0, "1 MiB", "1 MiB"),
            (1.0, 2.0, "4 GiB", "1 MiB"),
            (1.0, 2.0, "1 MiB", "1 MiB"),
        ],
        3,
        "8 GiB",
    );
    let algo = registry::by_name("exact-contiguous").unwrap();
    match algo.solve(&inst, &SolveOptions::default()) {
        Err(SolveError::Infeasible(msg)) => {
            assert!(msg.starts_with("layer 1 (l1) fits on no GPU"), "{msg}");
            assert!(msg.contains("GPUs have 8.00 GiB"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn too_few_gpus_is_named() {
    // Each layer needs 3 GiB of states (+ activations and buffers), 4 GiB GPUs: one layer per GPU,
    // 4 layers, 3 GPUs.
    let inst = chain(&[(1.0, 2.0, "1 GiB", "1 MiB"); 4], 3, "4 GiB");
    let algo = registry::by_name("exact-contiguous").unwrap();
    match algo.solve(&inst, &SolveOptions::default()) {
        Err(SolveError::Infeasible(msg)) => {
            assert!(msg.contains("needs at least 4 stages"), "{msg}");
            assert!(msg.contains("at most 3 stages"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_settings_are_refused() {
    let inst = chain(&[(1.0, 2.0, "1 MiB", "1 MiB"); 3], 2, "8 GiB");
    let algo = registry::by_name("exact-contiguous").unwrap();
    let e = algo.solve(&inst, &opts(&[("fewer", "maybe")])).unwrap_err();
    assert!(e.to_string().contains("--set fewer"), "{e}");
    let e = algo.solve(&inst, &opts(&[("grid", "3")])).unwrap_err();
    assert!(e.to_string().contains("known: fewer"), "{e}");
    let o = SolveOptions {
        stages: Some(3),
        ..SolveOptions::default()
    };
    let e = algo.solve(&inst, &o).unwrap_err();
    assert!(e.to_string().contains("the cluster has 2"), "{e}");
    let e = contiguous_optimum(&inst, 2, 1, &Deadline::none()).unwrap_err();
    assert!(e.to_string().contains("stage counts 2..=1"), "{e}");
}

#[test]
fn fewer_stages_can_be_better() {
    // Two light layers, a huge activation between them: splitting adds a 2 x 1 GiB / 10 GB/s link
    // (215 ms) to the pipeline; one GPU runs both at 6 ms.
    let inst = chain(
        &[(1.0, 2.0, "1 MiB", "1 GiB"), (1.0, 2.0, "1 MiB", "1 MiB")],
        2,
        "16 GiB",
    );
    let algo = registry::by_name("exact-contiguous").unwrap();
    let sol = run(algo.as_ref(), &inst, &SolveOptions::default()).unwrap();
    assert_eq!(sol.plan.stages.len(), 1);
    assert_eq!(sol.claimed.period_ms, Some(6.0));
    let forced = run(algo.as_ref(), &inst, &opts(&[("fewer", "false")])).unwrap();
    assert_eq!(forced.plan.stages.len(), 2);
    assert!(forced.claimed.period_ms.unwrap() > 200.0);
}

#[test]
fn time_limit_reports_a_bound() {
    let inst = chain(
        &[
            (1.0, 2.0, "1 MiB", "100 MiB"),
            (3.0, 2.0, "1 MiB", "10 MiB"),
            (1.0, 1.0, "1 MiB", "1 MiB"),
        ],
        3,
        "16 GiB",
    );
    let o = SolveOptions {
        time_limit: Some(Duration::ZERO),
        ..SolveOptions::default()
    };
    let sol = run(
        registry::by_name("exact-contiguous").unwrap().as_ref(),
        &inst,
        &o,
    )
    .unwrap();
    assert_eq!(sol.stats.status, Status::Feasible);
    let bound = sol.stats.bound.unwrap();
    assert!(bound <= sol.claimed.period_ms.unwrap());
    assert!(sol.evaluated.unwrap().fits);
    assert!(sol.notes.iter().any(|n| n.contains("time limit reached")));
}

#[test]
fn uncovered_chains_and_low_periods_get_precise_errors() {
    let inst = chain(&[(1.0, 2.0, "1 MiB", "1 MiB"); 3], 3, "8 GiB");
    let e = valid_period(&inst, &[0, 1]).unwrap_err().to_string();
    assert_eq!(
        e,
        "ends: layers 2..2 are in no stage: the last stage must end at layer 2"
    );
    let e = valid_period(&inst, &[1, 0, 2]).unwrap_err().to_string();
    assert!(e.starts_with("ends[1]: stage 1 would be empty"), "{e}");
    let plan = Plan::contiguous(&[0, 2], Schedule::one_f_one_b_star(None));
    let e = star_memory(&inst, &plan, 4.0).unwrap_err().to_string();
    assert!(
        e.contains("4 ms is below the load 6.000000 ms of stage 1"),
        "{e}"
    );
    // Shared GPUs are not contiguous.
    let mut shared = Plan::contiguous(&[0, 1, 2], Schedule::default_for(&inst));
    shared.stages[2].gpus = vec![0];
    let e = star_memory(&inst, &shared, 10.0).unwrap_err().to_string();
    assert!(e.contains("stages share GPUs"), "{e}");
}
