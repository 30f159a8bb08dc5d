//! Random cases: the simulator against the brute-force reference on random chains, partitions,
//! periods and perturbed 1F1B* patterns; 1F1B*'s properties.

use super::brute::{close, compare};
use super::*;
use pipeplan_formulations::testing::proptest_config;

#[derive(Debug, Clone)]
struct Case {
    layers: Vec<L4>,
    input: f64,
    /// Last layer of each stage.
    ends: Vec<usize>,
    /// Period above the least one, in quarters of a ms.
    extra: u32,
}

impl Case {
    fn inst(&self) -> Instance {
        instance(&self.layers, self.input, self.ends.len() as u32, BW)
    }
    fn resources(&self) -> (Vec<Resource>, Vec<usize>) {
        resources(&self.layers, &self.ends, BW)
    }
    fn least(&self) -> f64 {
        self.resources()
            .0
            .iter()
            .map(Resource::load)
            .fold(0.0, f64::max)
    }
    fn period(&self) -> f64 {
        let t = self.least() + self.extra as f64 / 4.0;
        if t > 0.0 {
            t
        } else {
            1.0
        }
    }
}

/// Chains of 2..12 layers (times in quarters of a ms from `min_q`..=8, zeros allowed when
/// `min_q` = 0), contiguous partitions on 1..6 GPUs, periods from the least one up.
fn cases(min_q: u32) -> impl Strategy<Value = Case> {
    (2usize..=12)
        .prop_flat_map(move |l| {
            let layer = (min_q..=8u32, min_q..=8u32, 0u32..=64, 0u32..=8)
                .prop_map(|(f, b, w, o)| (f as f64 / 4.0, b as f64 / 4.0, w as f64, o as f64));
            (
                prop::collection::vec(layer, l),
                0u32..=8,
                prop::sample::subsequence((0..l - 1).collect::<Vec<_>>(), 0..=(l - 1).min(5)),
                prop_oneof![Just(0u32), 0u32..=16],
            )
        })
        .prop_map(|(layers, input, cuts, extra)| {
            let mut ends = cuts;
            ends.push(layers.len() - 1);
            Case {
                layers,
                input: input as f64,
                ends,
                extra,
            }
        })
}

/// Perturbations of a pattern: per operation (kind, amount), and a prefix of stages whose
/// backward (and the gradient sends before it) is delayed by one whole period.
type Perturb = (Vec<(u8, i32)>, Option<usize>);

fn perturbations() -> impl Strategy<Value = Perturb> {
    (
        prop::collection::vec((0u8..12, -4i32..=4), 22),
        prop::option::of(0usize..6),
    )
}

fn wrap_abs(abs: f64, t: f64) -> (f64, i64) {
    let k = (abs / t).floor();
    let mut s = abs - k * t;
    let mut k = k as i64;
    if s >= t {
        s -= t;
        k += 1;
    }
    if s < 0.0 {
        s += t;
        k -= 1;
    }
    (s, k)
}

fn perturb(p: &Pattern, (per_op, bump): &Perturb) -> Pattern {
    let t = p.period;
    let mut q = p.clone();
    for (o, &(kind, amount)) in q.ops.iter_mut().zip(per_op) {
        let d = amount as f64 / 4.0;
        match kind {
            // Move in time, keeping the micro-batch: absolute time changes by d.
            0 => {
                let (s, k) = wrap_abs(o.shift as f64 * t + o.start + d, t);
                o.start = s;
                o.shift = k;
            }
            // Move within the period only (the shift stays).
            1 => o.start = wrap_abs(o.start + d, t).0,
            // Another micro-batch.
            2 => o.shift += amount.signum() as i64,
            _ => {}
        }
    }
    if let Some(j) = bump {
        for o in &mut q.ops {
            let delayed = match o.op {
                OpKind::B => o.stage <= *j,
                OpKind::SendB => o.stage < *j,
                _ => false,
            };
            if delayed {
                o.shift += 1;
            }
        }
    }
    q
}

fn star(case: &Case, t: f64) -> Pattern {
    let plan = async_plan(&case.ends, Some(t), None);
    one_f_one_b_star_pattern(&case.inst(), &plan, Some(t)).expect("period above the loads")
}

proptest! {
    #![proptest_config(proptest_config(300))]

    /// The simulator agrees with the brute force on 1F1B* patterns and perturbations of them.
    #[test]
    fn simulator_matches_brute_force(case in cases(0), pert in perturbations()) {
        let inst = case.inst();
        let t = case.period();
        let base = star(&case, t);
        let plan = async_plan(&case.ends, None, None);
        prop_assert!(compare(&inst, &plan, &base)?, "1F1B* must be valid");
        let q = perturb(&base, &pert);
        compare(&inst, &plan, &q)?;
    }

    /// Random patterns: random starts in [0, T) and shifts in a small range, mostly invalid.
    #[test]
    fn simulator_matches_brute_force_on_random_patterns(
        case in cases(0),
        raw in prop::collection::vec((0u32..64, 0i64..4), 22),
    ) {
        let inst = case.inst();
        let t = case.period();
        let plan = async_plan(&case.ends, None, None);
        let mut q = star(&case, t);
        for (o, &(x, h)) in q.ops.iter_mut().zip(&raw) {
            o.start = wrap_abs(x as f64 / 4.0, t).0;
            o.shift = h;
        }
        compare(&inst, &plan, &q)?;
    }

    /// 1F1B* is valid at every period >= the largest load, each stage keeps its group index in
    /// flight, and the groups are those of the paper.
    #[test]
    fn star_is_valid_and_keeps_its_group(case in cases(0)) {
        let inst = case.inst();
        let t = case.period();
        let (res, of_stage) = case.resources();
        let loads: Vec<f64> = res.iter().map(Resource::load).collect();
        let g = my_groups(&loads, t);
        let sp = one_f_one_b_star(&res, t).unwrap();
        prop_assert_eq!(&sp.group, &g);
        prop_assert_eq!(groups(&loads, t).unwrap(), g.clone());
        let plan = async_plan(&case.ends, None, None);
        let rep = simulate(&inst, &plan, &star(&case, t));
        prop_assert!(rep.is_ok(), "{:?}", rep);
        let rep = rep.unwrap();
        for (s, &r) in of_stage.iter().enumerate() {
            // The micro-batch entering r at F waits for the rest of its group's work; a stage
            // whose F, B and the rest of its group take no time at all holds it for no time.
            let rest: f64 = (r..res.len()).take_while(|&q| g[q] == g[r]).map(|q| loads[q]).sum();
            let expect = if rest > 0.0 { g[r] } else { g[r] - 1 };
            prop_assert_eq!(rep.in_flight[s], expect, "stage {} resource {}", s, r);
        }
    }

    /// Same on arbitrary (non-dyadic) positive times and periods: rounding never breaks 1F1B*.
    #[test]
    fn star_is_valid_on_arbitrary_floats(
        layers in prop::collection::vec((0.001f64..10.0, 0.001f64..10.0, 0u32..8), 2..=12),
        cut_mask in prop::collection::vec(any::<bool>(), 11),
        stretch in prop_oneof![Just(1.0f64), 1.0f64..3.0],
        bw in 100.0f64..5000.0,
    ) {
        let layers: Vec<L4> = layers.iter().map(|&(f, b, o)| (f, b, 1.0, o as f64)).collect();
        let l = layers.len();
        let mut ends: Vec<usize> =
            (0..l - 1).filter(|&i| cut_mask[i]).take(5).collect();
        ends.push(l - 1);
        let inst = instance(&layers, 3.0, ends.len() as u32, bw);
        let (res, of_stage) = resources(&layers, &ends, bw);
        let least = res.iter().map(Resource::load).fold(0.0, f64::max);
        let t = least * stretch;
        let plan = async_plan(&ends, Some(t), None);
        let p = one_f_one_b_star_pattern(&inst, &plan, Some(t)).unwrap();
        let rep = simulate(&inst, &plan, &p);
        prop_assert!(rep.is_ok(), "{:?}", rep);
        let sp = one_f_one_b_star(&res, t).unwrap();
        for (s, &r) in of_stage.iter().enumerate() {
            prop_assert_eq!(rep.as_ref().unwrap().in_flight[s], sp.group[r]);
        }
        let ev = evaluate(&inst, &plan).unwrap();
        prop_assert!(ev.fits && ev.valid_schedule == Some(true), "{:?}", ev.notes);
    }

    /// The evaluator's peak memory of each GPU is MadPipe's M(k, l, g) on plain instances
    /// (optimizer factor 0, two weight versions, dp = tp = 1, no saved/cut overrides).
    #[test]
    fn evaluator_memory_is_madpipe_formula(case in cases(1)) {
        let inst = case.inst();
        let t = case.period();
        let (res, of_stage) = case.resources();
        let loads: Vec<f64> = res.iter().map(Resource::load).collect();
        let g = my_groups(&loads, t);
        let plan = async_plan(&case.ends, Some(t), None);
        let ev = evaluate(&inst, &plan).unwrap();
        prop_assert_eq!(ev.valid_schedule, Some(true));
        let n = case.ends.len();
        let a = |i: usize| if i == 0 { case.input } else { case.layers[i - 1].3 };
        let mut first = 0;
        for (s, &last) in case.ends.iter().enumerate() {
            let gs = g[of_stage[s]] as f64;
            // 1-based layers k..=l are 0-based first..=last; a_{i-1} is the input of layer i.
            let mut m: f64 = (first..=last).map(|i| 3.0 * case.layers[i].2 + gs * a(i)).sum();
            if s > 0 {
                m += 2.0 * a(first);
            }
            if s + 1 < n {
                m += 2.0 * a(last + 1);
            }
            prop_assert!(close(ev.peak_memory[s], m), "GPU {}: {} vs M = {}", s, ev.peak_memory[s], m);
            prop_assert_eq!(ev.in_flight[s], g[of_stage[s]]);
            first = last + 1;
        }
    }

    /// Decreasing the period never decreases a group index.
    #[test]
    fn groups_are_monotone_in_the_period(
        loads in prop::collection::vec(prop_oneof![Just(0.0f64), 0.0f64..10.0], 1..=12),
        a in 0.0f64..20.0,
        b in 0.0f64..20.0,
    ) {
        let least = loads.iter().copied().fold(0.0, f64::max).max(1e-3);
        let (t_small, t_big) = (least + a.min(b), least + a.max(b));
        let gs = groups(&loads, t_small).unwrap();
        let gb = groups(&loads, t_big).unwrap();
        for r in 0..loads.len() {
            prop_assert!(gs[r] >= gb[r], "resource {}: {:?} at {} vs {:?} at {}", r, gs, t_small, gb, t_big);
        }
        prop_assert_eq!(gs, my_groups(&loads, t_small));
    }
}
