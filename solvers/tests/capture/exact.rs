//! capture-exact and enumeration against a naive enumerator written here, on small random instances
//! with negative M_a and many ties (proptest).

use super::*;
use pipeplan_formulations::testing::proptest_config;

/// The naive reference: every placement, ranked by sorted-descending memory then stage sequence.
/// A stage as (last layer, dp, tp).
type Shape = (usize, u32, u32);
/// The naive search's best: sorted memory, stages, memory in placement order.
type Best = Option<(Vec<f64>, Vec<(usize, usize)>, Vec<f64>)>;
/// What the naive search needs: predictor, configs, GPUs, per node, layers, correction.
type Ctx<'a> = (
    &'a Predictor,
    &'a [StageConfig],
    usize,
    usize,
    usize,
    Option<u32>,
);

fn naive(
    pred: &Predictor,
    configs: &[StageConfig],
    gpus: usize,
    per_node: usize,
    correction: Option<u32>,
) -> Option<(Vec<f64>, Vec<Shape>)> {
    let l = pred.layers();
    let mut best: Best = None;
    let mut stack: Vec<(usize, usize)> = Vec::new();
    fn rec(i: usize, g: usize, ctx: Ctx, stack: &mut Vec<(usize, usize)>, best: &mut Best) {
        let (pred, configs, gpus, per_node, l, correction) = ctx;
        if i == l || g == gpus {
            if i == l && g == gpus {
                let mut first = 0;
                let mut v = Vec::new();
                let p = stack.len();
                for (s, &(last, c)) in stack.iter().enumerate() {
                    let m = match correction {
                        None => pred.memory(first, last, configs[c]).unwrap(),
                        Some(mb) => pred.memory_1f1b(first, last, configs[c], s, p, mb).unwrap(),
                    };
                    v.extend(std::iter::repeat_n(m, configs[c].degree as usize));
                    first = last + 1;
                }
                let mut sorted = v.clone();
                sorted.sort_by(|a, b| b.total_cmp(a));
                let better = match best {
                    None => true,
                    Some((bs, bc, _)) => {
                        let o = sorted
                            .iter()
                            .zip(bs.iter())
                            .map(|(a, b)| a.total_cmp(b))
                            .find(|o| o.is_ne())
                            .unwrap_or(std::cmp::Ordering::Equal);
                        o.is_lt() || (o.is_eq() && stack.as_slice() < bc.as_slice())
                    }
                };
                if better {
                    *best = Some((sorted, stack.clone(), v));
                }
            }
            return;
        }
        for j in i..l {
            for (c, cfg) in configs.iter().enumerate() {
                let d = cfg.degree as usize;
                if g % per_node + d > per_node || g + d > gpus {
                    continue;
                }
                stack.push((j, c));
                rec(j + 1, g + d, ctx, stack, best);
                stack.pop();
            }
        }
    }
    rec(
        0,
        0,
        (pred, configs, gpus, per_node, l, correction),
        &mut stack,
        &mut best,
    );
    best.map(|(_, choices, v)| {
        let shape = choices
            .iter()
            .map(|&(last, c)| {
                let d = configs[c].degree;
                match configs[c].parallelism {
                    Parallelism::Pp => (last, 1, 1),
                    Parallelism::Dp => (last, d, 1),
                    Parallelism::Tp => (last, 1, d),
                }
            })
            .collect();
        (v, shape)
    })
}

fn small_values(n: usize, lo: i32, hi: i32) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((lo..=hi).prop_map(f64::from), n)
}

fn random_case() -> impl Strategy<Value = (u32, u32, usize, Vec<Vec<f64>>)> {
    (
        prop_oneof![Just(1u32), Just(2), Just(4)],
        1u32..=2,
        1usize..=6,
    )
        .prop_flat_map(|(per_node, nodes, layers)| {
            // Five tables (pp, dp2, tp2, dp4, tp4) x (m_i, m_a): small integers, many ties.
            let vals = prop::collection::vec(
                prop_oneof![small_values(layers, 1, 6), small_values(layers, -3, 3)],
                10,
            );
            (Just(per_node * nodes), Just(per_node), Just(layers), vals)
        })
        .prop_map(|(g, k, l, mut vals)| {
            for t in (0..10).step_by(2) {
                // M_i must be non-negative.
                vals[t].iter_mut().for_each(|x| *x = x.abs());
            }
            (g, k, l, vals)
        })
}

fn case_instance(g: u32, k: u32, l: usize, vals: &[Vec<f64>]) -> Instance {
    let names = [("pp", 1), ("dp", 2), ("tp", 2), ("dp", 4), ("tp", 4)];
    let tables: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(t, &(p, d))| (p, d, vals[2 * t].clone(), vals[2 * t + 1].clone()))
        .collect();
    instance(g, k, &tables, l)
}

proptest! {
    #![proptest_config(proptest_config(300))]

    /// Hybrid space: capture-exact = capture (enumeration with pruning) = naive enumeration,
    /// plan and per-GPU memory, ties broken identically.
    #[test]
    fn capture_exact_equals_enumeration_hybrid((g, k, l, vals) in random_case()) {
        let inst = case_instance(g, k, l, &vals);
        let prof = MemoryProfile::of_instance(&inst, k).unwrap();
        let pred = Predictor::new(&prof, 4.0);
        let configs = pred.configs(k);
        let reference = naive(&pred, &configs, g as usize, k as usize, None);
        let exact = harness::run(&CAPTURE_EXACT, &inst, &SolveOptions::default());
        let enumerated = harness::run(&CAPTURE, &inst, &SolveOptions::default());
        match reference {
            None => {
                prop_assert!(exact.is_err() && enumerated.is_err());
            }
            Some((v, shape_ref)) => {
                let (exact, enumerated) = (exact.unwrap(), enumerated.unwrap());
                prop_assert_eq!(exact.stats.status, Status::Optimal);
                prop_assert_eq!(enumerated.stats.status, Status::Optimal);
                prop_assert_eq!(&shape(&exact), &shape_ref);
                prop_assert_eq!(&shape(&enumerated), &shape_ref);
                let claimed = exact.claimed.peak_memory.clone().unwrap();
                prop_assert_eq!(&claimed[..v.len()], &v[..]);
                prop_assert_eq!(&enumerated.claimed.peak_memory, &exact.claimed.peak_memory);
            }
        }
    }

    /// Pipeline space: capture-exact (space=pipeline) = mcap-bf = naive, and capslog never beats
    /// them.
    #[test]
    fn capture_exact_equals_enumeration_pipeline((g, k, l, vals) in random_case()) {
        let inst = case_instance(g, k, l, &vals);
        let prof = MemoryProfile::of_instance(&inst, 1).unwrap();
        let pred = Predictor::new(&prof, 4.0);
        let p = (g as usize).min(l);
        let (v, shape_ref) = naive(&pred, &[StageConfig::PIPELINE], p, p, None).unwrap();
        let exact = solve(&CAPTURE_EXACT, &inst, &[("space", "pipeline")]);
        let bf = solve(&MCAP_BF, &inst, &[]);
        prop_assert_eq!(&shape(&exact), &shape_ref);
        prop_assert_eq!(&shape(&bf), &shape_ref);
        prop_assert_eq!(&exact.claimed.peak_memory.clone().unwrap()[..p], &v[..]);
        let best = exact.claimed.max_memory.unwrap();
        for algo in [&CAPSLOG_BS as &dyn Algorithm, &CAPSLOG_BS_TB] {
            let s = solve(algo, &inst, &[]);
            prop_assert!(s.claimed.max_memory.unwrap() >= best);
            prop_assert_eq!(s.stats.status, Status::Heuristic);
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(150))]

    /// With the 1F1B correction (memory depends on the stage's position among P stages), in
    /// both spaces: capture-exact = enumeration = naive.
    #[test]
    fn capture_exact_equals_enumeration_with_1f1b_correction((g, k, l, vals) in random_case()) {
        let inst = case_instance(g, k, l, &vals);
        let corr = [("correct_1f1b", "true")];
        let prof = MemoryProfile::of_instance(&inst, k).unwrap();
        let pred = Predictor::new(&prof, 4.0);
        let configs = pred.configs(k);
        let reference = naive(&pred, &configs, g as usize, k as usize, Some(3));
        let mut opts = SolveOptions::default();
        opts.params.insert("correct_1f1b".into(), "true".into());
        let exact = harness::run(&CAPTURE_EXACT, &inst, &opts);
        let enumerated = harness::run(&CAPTURE, &inst, &opts);
        match reference {
            None => prop_assert!(exact.is_err() && enumerated.is_err()),
            Some((v, shape_ref)) => {
                let (exact, enumerated) = (exact.unwrap(), enumerated.unwrap());
                prop_assert_eq!(&shape(&exact), &shape_ref);
                prop_assert_eq!(&shape(&enumerated), &shape_ref);
                prop_assert_eq!(&exact.claimed.peak_memory.clone().unwrap()[..v.len()], &v[..]);
            }
        }
        let p = (g as usize).min(l);
        let (v, shape_ref) = naive(&pred, &[StageConfig::PIPELINE], p, p, Some(3)).unwrap();
        let exact = solve(&CAPTURE_EXACT, &inst, &[("space", "pipeline"), corr[0]]);
        let bf = solve(&MCAP_BF, &inst, &corr);
        prop_assert_eq!(&shape(&exact), &shape_ref);
        prop_assert_eq!(&shape(&bf), &shape_ref);
        prop_assert_eq!(&exact.claimed.peak_memory.clone().unwrap()[..p], &v[..]);
        for algo in [&CAPSLOG_BS as &dyn Algorithm, &CAPSLOG_BS_TB, &MCAP_BO] {
            // mcap-bo (default engine gp) on a small budget: GP fits are slow in a debug build.
            let bo = [("initial", "4"), ("iterations", "1"), ("candidates", "2")];
            let params: Vec<_> = std::iter::once(corr[0])
                .chain(bo.into_iter().filter(|_| algo.name() == "mcap-bo"))
                .collect();
            let s = solve(algo, &inst, &params);
            prop_assert!(s.claimed.max_memory.unwrap() >= v.iter().copied().fold(f64::MIN, f64::max));
        }
    }
}
