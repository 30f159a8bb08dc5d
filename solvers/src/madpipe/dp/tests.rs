//! Unit checks of the DP on a three-layer chain.

use super::*;
use pipeplan_formulations::instance::{Cluster, Layer};
use pipeplan_formulations::madpipe::MadChain;
use pipeplan_formulations::Instance;
use std::collections::BTreeMap;

/// Batch 4, input 3 MiB, layers a, b, c; two GPUs of 1 GiB at 1 GB/s.
fn inst() -> Instance {
    let mib = 1024.0 * 1024.0;
    let layers = vec![
        Layer::new("a", 1.0, 2.0, 10.0 * mib, 2.0 * mib),
        Layer::new("b", 2.0, 3.0, 20.0 * mib, mib),
        Layer::new("c", 1.0, 1.0, 5.0 * mib, 4.0 * mib),
    ];
    let cluster = Cluster::single_node(2, 1024.0 * mib, 1e9);
    let inst = Instance::new("", 4, 3.0 * mib, layers, cluster);
    inst.validate().unwrap();
    inst
}

#[test]
fn fast_ceil_is_ceil() {
    for x in [
        0.0,
        0.5,
        1.0,
        1.000_000_1,
        2.999_999,
        7.0,
        1e15 + 0.5,
        4.5e15,
        1e300,
        -1.5,
        -0.0,
    ] {
        assert_eq!(ceil(x), x.ceil(), "{x}");
    }
}

#[test]
fn snap_is_the_least_grid_point_at_or_above() {
    let g = Grid::new(11, 1.0);
    for i in 0..=3000 {
        let x = i as f64 * 0.000_37;
        let (k, v) = g.snap(x);
        assert!(v >= x, "{x} -> {v}");
        assert!(k == 0 || (k - 1) as f64 * g.step < x, "{x} -> {k}");
        assert_eq!(g.value(k), v);
    }
    // Grid points map to themselves, and the grid continues above its range.
    assert_eq!(g.snap(0.3).0, 3);
    assert_eq!(g.snap(1.25).0, 13);
    // Exact mode: keys are the bits, values unchanged.
    let e = Grid::new(0, 1.0);
    assert_eq!(e.snap(0.123), (0.123f64.to_bits(), 0.123));
    assert_eq!(e.snap(-0.0), (0, 0.0));
}

#[test]
fn groups_and_oplus_follow_the_paper() {
    let inst = inst();
    let mc = MadChain::new(&inst);
    let dp = Dp::new(&mc, 10.0, &DpOptions::exact(), Ranges::paper(&mc));
    assert_eq!(dp.groups(0.0), 0.0);
    assert_eq!(dp.groups(10.0), 1.0);
    assert_eq!(
        dp.groups(10.0 + 1e-12),
        1.0,
        "rounding noise stays in the group"
    );
    assert_eq!(dp.groups(10.1), 2.0);
    // Same group: x + y; else the next group starts at T^ ceil(x / T^).
    assert_eq!(dp.oplus(3.0, 4.0), 7.0);
    assert_eq!(dp.oplus(7.0, 3.0), 10.0);
    assert_eq!(dp.oplus(8.0, 4.0), 14.0);
    assert_eq!(dp.oplus(0.0, 4.0), 4.0);
    assert_eq!(dp.oplus(10.0, 0.0), 10.0);
    assert_eq!(dp.oplus(15.0, 6.0), 26.0);
    // step = (V (+) U) (+) C with g = ceil((V + U) / T^): the last stage of a chain.
    let s = dp.step(1, 3, 0.0, 0.0);
    assert_eq!(s.u, 7.0);
    assert_eq!(s.g, 1);
    assert_eq!(s.v, dp.oplus(7.0, mc.c(1)));
}

#[test]
fn the_pareto_front_keeps_only_undominated_states() {
    let key = |p, t, m, v| Key { p, t, m, v };
    let mut level = Level::default();
    level.offer(key(2, 1, 1, 1), 5.0);
    level.offer(key(2, 1, 1, 2), 5.0); // dominated: more delay
    level.offer(key(1, 1, 1, 1), 5.0); // dominated: fewer GPUs
    level.offer(key(2, 1, 1, 3), 4.0); // kept: smaller bottleneck
    level.offer(key(2, 0, 2, 1), 9.0); // kept: less load
    level.offer(key(2, 1, 1, 2), 3.0); // same state again: its bottleneck drops to 3
    assert_eq!(level.keep_front(), 2);
    let mut kept: Vec<_> = level.recs.iter().map(|r| (r.key, r.a)).collect();
    kept.sort_by(|a, b| a.1.total_cmp(&b.1));
    assert_eq!(
        kept,
        vec![
            (key(2, 1, 1, 2), 3.0),
            (key(2, 1, 1, 1), 5.0),
            (key(2, 0, 2, 1), 9.0)
        ]
    );
    for (i, r) in level.recs.iter().enumerate() {
        assert_eq!(level.map[&r.key], i as u32);
    }
}

#[test]
fn options_from_settings() {
    let p = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    let from_params = |given: &BTreeMap<String, String>| {
        crate::settings::Settings::parse("madpipe", &DpOptions::PARAMS, given)
            .map(|s| DpOptions::from_settings(&s))
    };
    assert_eq!(from_params(&p(&[])).unwrap(), DpOptions::default());
    let o = from_params(&p(&[
        ("grid_t", "201"),
        ("grid_m", "exact"),
        ("grid_v", "0"),
        ("rounds", "3"),
    ]))
    .unwrap();
    assert_eq!(
        o,
        DpOptions {
            grid_t: 201,
            grid_m: 0,
            grid_v: 0,
            k_rounds: 3,
            blocks: 128,
        }
    );
    for (key, bad) in [
        ("grid_t", "1"),
        ("grid_m", "-3"),
        ("grid_v", "fine"),
        ("rounds", "0"),
        ("rounds", "2.5"),
    ] {
        let e = from_params(&p(&[(key, bad)])).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(&format!("--set {key}")), "{msg}");
        assert!(msg.contains(bad), "{msg}");
    }
}
