//! max-batch: the result fits and the next size does not, both judged by the evaluator.

use pipeplan_formulations::evaluate::evaluate;
use pipeplan_formulations::Instance;
use pipeplan_solvers::algorithm::Algorithm;
use pipeplan_solvers::max_batch::{max_batch, MaxBatchOptions};
use pipeplan_solvers::registry;
use serde_json::json;

fn inst() -> Instance {
    let layers: Vec<_> = (0..8)
        .map(|i| {
            json!({"name": format!("l{i}"), "forward": 1.0 + i as f64 * 0.1, "backward": 2.0,
                        "weights": 1e8, "output": 5e7})
        })
        .collect();
    let doc = json!({
        "format": "pipeplan/instance@1", "name": "mb",
        "model": {"batch": 1, "input": 5e7, "layers": layers},
        "cluster": {"gpus": 4, "memory": 4e9, "bandwidth": {"intra_node": 1e10}, "pcie": 1.2e10},
        "training": {"schedule": "1f1b", "micro_batches": 4}
    });
    Instance::from_json(&doc.to_string()).unwrap()
}

fn fits(algo: &dyn Algorithm, inst: &Instance, b: u32, o: &MaxBatchOptions) -> bool {
    let i = inst.with_micro_batch(b);
    algo.solve(&i, &o.solve)
        .ok()
        .and_then(|s| evaluate(&i, &s.plan).ok())
        .is_some_and(|e| e.fits)
}

#[test]
fn largest_fitting_size_is_a_verified_boundary() {
    let inst = inst();
    let o = MaxBatchOptions::default();
    for name in ["balanced-time", "dawnpiper"] {
        let algo = registry::by_name(name).unwrap();
        let r = max_batch(algo.as_ref(), &inst, &o);
        let b = r.micro_batch.expect("size 1 fits");
        assert!(!r.capped);
        assert_eq!(r.batch, Some(b as u64 * 4));
        assert!(fits(algo.as_ref(), &inst, b, &o), "{name} {b}");
        assert!(!fits(algo.as_ref(), &inst, b + 1, &o), "{name} {}", b + 1);
    }
}

#[test]
fn memory_optimization_never_lowers_dawnpiper_max_batch_here() {
    let inst = inst();
    let algo = registry::by_name("dawnpiper").unwrap();
    let mut on = MaxBatchOptions::default();
    on.solve.params.insert("memopt".into(), "on".into());
    let mut off = MaxBatchOptions::default();
    off.solve.params.insert("memopt".into(), "off".into());
    let (a, b) = (
        max_batch(algo.as_ref(), &inst, &on),
        max_batch(algo.as_ref(), &inst, &off),
    );
    assert!(a.micro_batch >= b.micro_batch, "{a:?} {b:?}");
}

#[test]
fn nothing_fits_says_why() {
    let mut i = inst();
    i.cluster.memory = 1e6;
    let r = max_batch(
        registry::by_name("uniform").unwrap().as_ref(),
        &i,
        &MaxBatchOptions::default(),
    );
    assert_eq!(r.micro_batch, None);
    assert!(r.reason.is_some());
}
