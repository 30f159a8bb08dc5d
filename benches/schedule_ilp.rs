//! Schedule-ILP benchmarks (docs/design.md, performance targets: "the schedule ILP for N <= 10 stages: optimal in < 10 s"):
//! the least-memory ILP (`madpipe::schedule_ilp::least_memory`, both solves of
//! `MemoryObjective::MaxThenSum`) on `instances/resnet50-1000px-b8-8gpu-16gib.json`, for
//!
//! - `balanced-8`: balanced-time's contiguous partition (8 stages, 7 links: 15 resources) at
//!   1F1B*'s valid period (the least breakpoint at which 1F1B* fits 16 GiB);
//! - `shared-10`: a MadPipe-like allocation of 10 stages on 8 GPUs: GPU 7 (the special
//!   processor) holds stages 0, 4 and 8, sized by a min-max partition where their compute counts
//!   three times (so that the special GPU's load matches a normal GPU's); at its largest load,
//!   and at 1.5 x that load;
//! - `least-period shared-10`: the whole bisection on the period for that allocation under
//!   16 GiB.
//!
//! Every solve must end `Optimal` (asserted before timing). Run with
//! `cargo bench --bench schedule_ilp`.
//!
//! Medians on a 2-core AMD EPYC VM (rustc 1.95, HiGHS 1.15, one HiGHS thread), target < 10 s:
//!
//! | benchmark | N | T (ms) | median |
//! |---|---|---|---|
//! | least_memory balanced-8 (15 resources) | 8 | 269.2 | 23 ms |
//! | least_memory shared-10 at its load | 10 | 85.3 | 0.39 s |
//! | least_memory shared-10 at 1.5 x its load | 10 | 128.0 | 0.83 s |
//! | least_period shared-10 (13-15 MILPs) | 10 | 212.1 | 1.0 s |

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::plan::{Schedule, Stage};
use pipeplan_formulations::simulate::plan_operations;
use pipeplan_formulations::{Instance, Plan};
use pipeplan_solvers::baselines::BalancedTime;
use pipeplan_solvers::madpipe::schedule_ilp::{least_memory, least_period, IlpOptions};
use pipeplan_solvers::minmax::min_max_partition;
use pipeplan_solvers::{Algorithm, SolveOptions, Status};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

fn resnet50() -> Instance {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("instances")
        .join("resnet50-1000px-b8-8gpu-16gib.json");
    Instance::from_path(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn async_plan(stages: &[Stage], period: Option<f64>) -> Plan {
    Plan {
        order: None,
        stages: stages.to_vec(),
        schedule: Schedule::one_f_one_b_star(period),
    }
}

/// Busy time of every resource (GPU or link) of an allocation.
fn loads(inst: &Instance, stages: &[Stage]) -> BTreeMap<String, f64> {
    let mut by: BTreeMap<String, f64> = BTreeMap::new();
    for (d, res) in plan_operations(inst, &async_plan(stages, None)).values() {
        for r in res {
            *by.entry(r.to_string()).or_default() += d;
        }
    }
    by
}

/// 1F1B*'s valid period of a contiguous allocation: the least breakpoint (sum of consecutive
/// resource loads, at least the largest load) at which the evaluator says it fits.
fn valid_period(inst: &Instance, stages: &[Stage]) -> f64 {
    let plan = async_plan(stages, None);
    let mut chain = Vec::new();
    let ops = plan_operations(inst, &plan);
    for (id, (d, _)) in &ops {
        chain.push((id.stage, id.op, *d));
    }
    // Resource loads in chain order: stage s, then its cut.
    let mut res = Vec::new();
    for s in 0..stages.len() {
        let l: f64 = chain
            .iter()
            .filter(|c| {
                c.0 == s
                    && matches!(
                        c.1,
                        pipeplan_formulations::plan::OpKind::F
                            | pipeplan_formulations::plan::OpKind::B
                    )
            })
            .map(|c| c.2)
            .sum();
        res.push(l);
        let cut: f64 = chain
            .iter()
            .filter(|c| {
                c.0 == s
                    && matches!(
                        c.1,
                        pipeplan_formulations::plan::OpKind::SendF
                            | pipeplan_formulations::plan::OpKind::SendB
                    )
            })
            .map(|c| c.2)
            .sum();
        if cut > 0.0 {
            res.push(cut);
        }
    }
    let max = res.iter().copied().fold(0.0, f64::max);
    let mut periods = vec![max];
    for i in 0..res.len() {
        let mut sum = 0.0;
        for l in &res[i..] {
            sum += l;
            if sum > max {
                periods.push(sum);
            }
        }
    }
    periods.sort_by(f64::total_cmp);
    periods
        .into_iter()
        .find(|&t| evaluate(inst, &async_plan(stages, Some(t))).unwrap().fits)
        .expect("1F1B* fits at the latency")
}

/// 10 stages on 8 GPUs, GPU 7 holding stages 0, 4 and 8 (see the module docs).
fn shared_allocation(inst: &Instance) -> Vec<Stage> {
    let chain = inst.chain();
    let special = [0usize, 4, 8];
    let part = min_max_partition(inst.num_layers(), 10, |s, k, l| {
        let u = chain.compute(k, l);
        if special.contains(&s) {
            3.0 * u
        } else {
            u
        }
    });
    let mut first = 0;
    let mut normal = 0u32;
    part.ends
        .iter()
        .enumerate()
        .map(|(s, &last)| {
            let gpu = if special.contains(&s) {
                7
            } else {
                normal += 1;
                normal - 1
            };
            let st = Stage::single(first, last, gpu);
            first = last + 1;
            st
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let inst = resnet50();
    let opts = IlpOptions {
        time_limit: Some(Duration::from_secs(60)),
        ..IlpOptions::default()
    };
    let balanced = BalancedTime
        .solve(&inst, &SolveOptions::default())
        .expect("balanced-time solves")
        .plan
        .stages;
    let t_star = valid_period(&inst, &balanced);
    let shared = shared_allocation(&inst);
    let t_shared = loads(&inst, &shared).values().copied().fold(0.0, f64::max);
    let cases = [
        ("balanced-8", balanced.clone(), t_star),
        ("shared-10", shared.clone(), t_shared),
        ("shared-10 x1.5", shared.clone(), 1.5 * t_shared),
    ];
    let mut g = c.benchmark_group("schedule_ilp");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    for (name, stages, t) in &cases {
        let s = least_memory(&inst, stages, *t, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.status, Status::Optimal, "{name}");
        if *name == "balanced-8" {
            // Proposition 1: 1F1B*'s memory on every GPU.
            let star = evaluate(&inst, &async_plan(stages, Some(*t))).unwrap();
            for (a, b) in star.peak_memory.iter().zip(&s.memory) {
                assert!((a - b).abs() <= 1e-9 * a.max(1.0), "{a} vs {b}");
            }
        }
        eprintln!(
            "{name}: T = {t:.3} ms, max memory {:.3} GiB, in flight {:?}, {} solves, {:.0} ms",
            s.max_memory / 1024f64.powi(3),
            s.in_flight,
            s.ilp_solves,
            s.wall_ms
        );
        let id = format!("{name} N={} T={t:.1}", stages.len());
        g.bench_function(BenchmarkId::new("least_memory", id), |b| {
            b.iter(|| least_memory(black_box(&inst), black_box(stages), *t, &opts).unwrap())
        });
    }
    let lp = least_period(&inst, &shared, &opts).unwrap();
    eprintln!(
        "least-period shared-10: T = {:.3} ms, bracket {:?}, {:?}, {} solves, {:.0} ms",
        lp.period, lp.period_bracket, lp.status, lp.ilp_solves, lp.wall_ms
    );
    g.bench_function(BenchmarkId::new("least_period", "shared-10"), |b| {
        b.iter(|| least_period(black_box(&inst), black_box(&shared), &opts).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
