//! The worked example of docs/evaluator.md (keep the two in sync).

use super::*;

const DOC_INSTANCE: &str = r#"{
  "format": "pipeplan/instance@1",
  "name": "doc-example",
  "model": {
    "batch": 8,
    "input": "10 MB",
    "layers": [
      {"name": "l0", "forward": 2, "backward": 4, "weights": "100 MB", "output": "20 MB"},
      {"name": "l1", "forward": 3, "backward": 6, "weights": "200 MB", "output": "10 MB",
       "saved": "60 MB"},
      {"name": "l2", "forward": 1, "backward": 2, "weights": "300 MB", "output": "10 MB"},
      {"name": "l3", "forward": 2, "backward": 3, "weights": "50 MB", "output": "1 MB"}
    ]
  },
  "cluster": {"gpus": 2, "memory": "1.4 GB", "bandwidth": {"intra_node": "10 GB/s"}},
  "training": {"micro_batches": 4, "optimizer_state_factor": 1}
}"#;

fn doc_plan(schedule: &str, checkpoint: bool) -> Plan {
    let ck = if checkpoint {
        r#", "checkpoint": [1]"#
    } else {
        ""
    };
    Plan::from_json(&format!(
        r#"{{"stages": [{{"first": 0, "last": 1, "gpus": [0]{ck}}},
                        {{"first": 2, "last": 3, "gpus": [1]}}],
            "schedule": {schedule}}}"#
    ))
    .unwrap()
}

#[test]
fn worked_example_of_the_docs() {
    let inst = Instance::from_json(DOC_INSTANCE).unwrap();
    let run = |schedule: &str, ck: bool| {
        let ev = evaluate(&inst, &doc_plan(schedule, ck)).unwrap();
        assert_sound(&ev);
        if std::env::var_os("PIPEPLAN_PRINT").is_some() {
            println!(
                "{schedule} ck={ck}\n{}",
                serde_json::to_string_pretty(&ev).unwrap()
            );
        }
        ev
    };
    let mb = 1e6;
    // Async, implied 1F1B* at the least period: loads 15 (stage 0), 2 (link), 8 (stage 1).
    let a = run(r#"{"kind": "async"}"#, false);
    assert_close(a.period_ms.unwrap(), 15.0);
    assert_eq!(a.in_flight, vec![2, 1]);
    // 4 W (2 versions + gradient + momentum) + g x saved + 2 x cut.
    assert_all_close(
        &a.peak_memory,
        &[
            (1200.0 + 2.0 * 70.0 + 20.0) * mb,
            (1400.0 + 20.0 + 20.0) * mb,
        ],
    );
    assert!(!a.fits && a.notes.len() == 1, "{:?}", a.notes);
    assert_close(a.throughput, 8.0 / 15.0 * 1e3);
    assert_close(a.bubble, 1.0 - 23.0 / 30.0);
    if std::env::var_os("PIPEPLAN_PRINT").is_some() {
        let p = one_f_one_b_star_pattern(&inst, &doc_plan(r#"{"kind": "async"}"#, false), None);
        println!("{}", serde_json::to_string_pretty(&p.unwrap()).unwrap());
    }
    // Async at T = 25: one group, one micro-batch each.
    let a25 = run(r#"{"kind": "async", "period": 25}"#, false);
    assert_eq!(a25.in_flight, vec![1, 1]);
    assert_close(a25.peak_memory[0], (1200.0 + 70.0 + 20.0) * mb);
    // Synchronous 1F1B, m = 4: (m - 1) x 15 + 25.
    let s = run(r#"{"kind": "1f1b"}"#, false);
    assert_close(s.iteration_ms.unwrap(), 70.0);
    assert_eq!(s.in_flight, vec![2, 1]);
    assert_all_close(
        &s.peak_memory,
        &[(900.0 + 140.0 + 20.0) * mb, (1050.0 + 20.0 + 20.0) * mb],
    );
    assert!(s.fits);
    assert_close(s.throughput, 32.0 / 70.0 * 1e3);
    assert_close(s.bubble, 1.0 - 92.0 / 140.0);
    // GPipe, m = 4: forwards 3 x 5 + 9, backwards 3 x 10 + 16.
    let g = run(r#"{"kind": "gpipe"}"#, false);
    assert_close(g.iteration_ms.unwrap(), 70.0);
    assert_eq!(g.in_flight, vec![4, 4]);
    assert_all_close(
        &g.peak_memory,
        &[(900.0 + 280.0 + 20.0) * mb, (1050.0 + 80.0 + 20.0) * mb],
    );
    // 1F1B with l1 checkpointed: stage 0 keeps 10 + 20 MB per micro-batch, re-materializes
    // 60 - 20 MB once, and its backward grows by l1's forward (3 ms).
    let c = run(r#"{"kind": "1f1b"}"#, true);
    assert_all_close(&c.stage_time, &[18.0, 8.0]);
    assert_close(c.iteration_ms.unwrap(), 3.0 * 18.0 + 28.0);
    assert_close(c.peak_memory[0], (900.0 + 2.0 * 30.0 + 40.0 + 20.0) * mb);
}
