//! `pipeplan trace`: every trace is checked against the trace-event format and against the
//! simulator's numbers (memory counters peak at the evaluated peak of every GPU).

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use support::{ok, ok_json, pipeplan, shipped_str, stderr, stdout};

/// Checks the trace-event format; returns the largest counter value per GPU track.
fn check_format(trace: &Value) -> BTreeMap<u64, f64> {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    assert_eq!(trace["displayTimeUnit"], "ms");
    let mut peaks = BTreeMap::new();
    let mut complete = 0;
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(e["name"].is_string() && e["pid"].is_u64(), "{e}");
        match ph {
            "M" => assert!(e["args"]["name"].is_string(), "{e}"),
            "X" => {
                complete += 1;
                let ts = e["ts"].as_f64().expect("ts in µs");
                let dur = e["dur"].as_f64().expect("complete events have dur");
                assert!(ts >= 0.0 && dur >= 0.0 && e["tid"].is_u64(), "{e}");
                assert!(e["args"]["stage"].is_u64(), "{e}");
                assert!(e["cat"].is_string(), "{e}");
            }
            "C" => {
                let v = e["args"]["bytes"].as_f64().expect("counter value");
                let g = e["tid"].as_u64().unwrap();
                let p = peaks.entry(g).or_insert(0.0f64);
                *p = p.max(v);
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    assert!(complete > 0);
    peaks
}

fn trace(instance: &str, algo: &str, extra: &[&str]) -> Option<Value> {
    let dir = tempfile::tempdir().unwrap();
    let sol = dir.path().join("sol.json");
    let out = pipeplan(&[
        "solve",
        instance,
        "--algo",
        algo,
        "--time-limit",
        "20",
        "-o",
        sol.to_str().unwrap(),
    ]);
    if out.status.code() != Some(0) {
        return None; // no plan for this pair: nothing to trace
    }
    let mut args = vec!["trace", sol.to_str().unwrap(), instance];
    args.extend_from_slice(extra);
    let out = pipeplan(&args);
    assert_eq!(out.status.code(), Some(0), "{algo}: {}", stderr(&out));
    Some(serde_json::from_str(&stdout(&out)).unwrap())
}

#[test]
fn traces_follow_the_format_and_the_simulator() {
    let cases = [
        ("resnet50-1000px-b8-4gpu-8gib.json", "madpipe"),
        ("resnet50-1000px-b8-4gpu-8gib.json", "dawnpiper"),
        ("resnet50-1000px-b8-4gpu-8gib.json", "balanced-time"),
        ("gpt3-2.6b-s2048-b1-8gpu-40gib.json", "galvatron-base"),
        ("bert-large-s512-b8-8gpu-8gib.json", "pipedream"),
        ("bert-large-s512-b8-8gpu-8gib.json", "galvatron-bmw"),
    ];
    let mut traced = 0;
    for (inst, algo) in cases {
        let Some(t) = trace(&shipped_str(inst), algo, &[]) else {
            continue;
        };
        traced += 1;
        let peaks = check_format(&t);
        let meta = &t["otherData"];
        let evaluated = meta["evaluated_peak_memory"].as_array().unwrap();
        assert!(!peaks.is_empty());
        for (g, p) in &peaks {
            let want = evaluated[*g as usize].as_f64().unwrap();
            assert!(
                (p - want).abs() <= 1e-9 * want.max(1.0),
                "{inst} {algo} GPU {g}: counter peak {p} vs evaluated {want}"
            );
        }
        // A synchronous iteration ends after the evaluator's closed form only by waiting for
        // transfers, which the closed form counts once (docs/evaluator.md, "Timelines").
        if let Some(it) = meta["evaluated_iteration_ms"].as_f64() {
            let end = meta["simulated_end_ms"].as_f64().unwrap();
            let transfers: f64 = t["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == "X" && e["cat"].as_str().unwrap().starts_with("send "))
                .map(|e| e["dur"].as_f64().unwrap() / 1e3)
                .sum();
            assert!(
                end <= (it + transfers) * (1.0 + 1e-9),
                "{inst} {algo}: {end} > {it} + {transfers}"
            );
        }
        // An asynchronous trace repeats every period after the warm-up.
        if let Some(period) = meta["period_ms"].as_f64() {
            let steady = meta["steady_from_ms"].as_f64().unwrap();
            let starts: Vec<f64> = t["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == "X" && e["name"].as_str().unwrap().starts_with("F s0 "))
                .map(|e| e["ts"].as_f64().unwrap() / 1e3)
                .collect();
            for w in starts.windows(2) {
                assert!((w[1] - w[0] - period).abs() < 1e-6 * period, "{starts:?}");
            }
            assert!(steady >= 0.0);
        }
    }
    assert!(traced >= 4, "too few plans traced: {traced}");
}

#[test]
fn swap_recompute_and_links_have_their_own_events() {
    let Some(t) = trace(
        &shipped_str("resnet50-1000px-b8-4gpu-8gib.json"),
        "dawnpiper",
        &["--periods", "2"],
    ) else {
        panic!("dawnpiper plans resnet50 on 4 GPUs");
    };
    let cats: std::collections::BTreeSet<&str> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["cat"].as_str())
        .collect();
    for want in [
        "forward",
        "backward",
        "swap out",
        "swap in",
        "recompute",
        "send activation",
        "send gradient",
    ] {
        assert!(cats.contains(want), "{want} missing: {cats:?}");
    }
}

#[test]
fn trace_errors_name_the_file() {
    let out = pipeplan(&[
        "trace",
        "no-such-plan.json",
        &shipped_str("resnet50-1000px-b8-4gpu-8gib.json"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no-such-plan.json"),
        "{}",
        stderr(&out)
    );
}

/// A solution file edited by hand: what `plot` and `trace` cannot show is refused with the field
/// and file, never a panic or a run out of memory.
#[test]
fn timelines_too_large_to_unroll_and_absurd_claims_are_refused_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let inst = shipped_str("t5-512-4-s512-b8-8gpu-8gib.json");
    let sol = dir.path().join("sol.json");
    ok(&[
        "solve",
        &inst,
        "--algo",
        "madpipe",
        "-o",
        sol.to_str().unwrap(),
    ]);
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (madpipe, uniform) = (read(&sol), dir.path().join("uniform.json"));
    ok(&[
        "solve",
        &inst,
        "--algo",
        "uniform",
        "-o",
        uniform.to_str().unwrap(),
    ]);
    let uniform = read(&uniform);
    let edited = |solution: &Value, edit: &dyn Fn(&mut Value)| {
        let mut s = solution.clone();
        edit(&mut s);
        let path = dir.path().join("edited.json");
        std::fs::write(&path, s.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let refused = |args: &[&str], want: &str| {
        let out = pipeplan(args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(want), "{want}: {}", stderr(&out));
    };
    let svg = dir.path().join("plan.svg");
    let svg = svg.to_str().unwrap();
    // A shift of 2^32 - 1 periods: a warm-up that would take terabytes.
    let shifted = edited(&madpipe, &|s| {
        s["plan"]["schedule"]["pattern"]["ops"][3]["shift"] = 4294967295u64.into()
    });
    let field = "edited.json: plan.schedule.pattern.ops[3].shift: the timeline would unroll";
    refused(&["trace", &shifted, &inst], field);
    refused(&["plot", &shifted, &inst, "-o", svg], field);
    // Steady periods past the bound name the option, in no file.
    let sol = sol.to_str().unwrap();
    refused(
        &["trace", sol, &inst, "--periods", "100000"],
        "error: --periods: the timeline",
    );
    ok(&["trace", sol, &inst, "--periods", "1000"]);
    // A synchronous plan of millions of micro-batches.
    let sync = edited(&uniform, &|s| {
        s["plan"]["schedule"] = serde_json::json!({"kind": "1f1b", "micro_batches": 4_000_000})
    });
    refused(
        &["trace", &sync, &inst],
        "edited.json: plan.schedule.micro_batches: the timeline would unroll",
    );
    // A claimed peak that is no size: named, where it broke the chart's axis before.
    let negative = edited(&madpipe, &|s| {
        s["claimed"]["peak_memory"][2] = (-1e308).into()
    });
    refused(
        &["plot", &negative, &inst, "-o", svg],
        "edited.json: claimed.peak_memory[2]: ",
    );
    let text = edited(&madpipe, &|s| s["claimed"]["peak_memory"] = "8 GiB".into());
    refused(
        &["plot", &text, &inst, "-o", svg],
        "edited.json: claimed.peak_memory: not a list",
    );
}

#[test]
fn plot_draws_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let inst = shipped_str("resnet50-1000px-b8-4gpu-8gib.json");
    let sol = dir.path().join("sol.json");
    ok(&[
        "solve",
        &inst,
        "--algo",
        "dawnpiper",
        "-o",
        sol.to_str().unwrap(),
    ]);
    let svg = dir.path().join("plan.svg");
    ok(&[
        "plot",
        sol.to_str().unwrap(),
        &inst,
        "-o",
        svg.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") || text.contains("<svg"), "not SVG");
    for label in [
        "GPU 0",
        "link 0-1",
        "time (ms)",
        "activations x in flight",
        "swap out",
        "swap in",
    ] {
        assert!(text.contains(label), "{label} missing from the chart");
    }
    legend_beside_the_data(&text);
    let png = dir.path().join("plan.png");
    ok(&[
        "plot",
        sol.to_str().unwrap(),
        &inst,
        "-o",
        png.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    ok(&[
        "plot",
        sol.to_str().unwrap(),
        &inst,
        "-o",
        dir.path().join("x.bin").to_str().unwrap(),
        "--format",
        "png",
    ]);
}

/// The attribute `name` of an SVG element's text (`<rect x="1" ...`).
fn attr<'a>(element: &'a str, name: &str) -> &'a str {
    let start = element.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    &element[start..start + element[start..].find('"').unwrap()]
}

/// The plot's legends sit in a column of their own, right of every box of data, and each
/// entry's swatch has its own color.
fn legend_beside_the_data(svg: &str) {
    let rects: Vec<&str> = svg
        .split("<rect")
        .skip(1)
        .map(|r| &r[..r.find("/>").unwrap()])
        .filter(|r| attr(r, "fill") != "#FFFFFF")
        .collect();
    // A legend swatch is the last rectangle before its label's text.
    let swatch = |label: &str| {
        let at = svg.find(&format!(">\n{label}\n</text>")).unwrap();
        let r = &svg[svg[..at].rfind("<rect").unwrap()..at];
        (attr(r, "x").parse::<f64>().unwrap(), attr(r, "fill"))
    };
    let (column, swap_out) = swatch("swap out");
    assert_ne!(
        swap_out,
        swatch("swap in").1,
        "swap out and swap in look alike"
    );
    assert_eq!(swatch("weights").0, column);
    for r in rects {
        let x: f64 = attr(r, "x").parse().unwrap();
        let right = x + attr(r, "width").parse::<f64>().unwrap();
        assert!(
            x >= column || right < column,
            "a box reaches the legend: {r}"
        );
    }
}

#[test]
fn explain_names_the_binding_constraint_of_every_stage() {
    let dir = tempfile::tempdir().unwrap();
    let inst = shipped_str("resnet50-1000px-b8-4gpu-8gib.json");
    let sol = dir.path().join("sol.json");
    ok(&[
        "solve",
        &inst,
        "--algo",
        "exact-contiguous",
        "-o",
        sol.to_str().unwrap(),
    ]);
    let v: Value = ok_json(&["explain", sol.to_str().unwrap(), &inst, "--json"]);
    let stages = v["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 4);
    let bindings: Vec<&str> = stages
        .iter()
        .map(|s| s["binding"].as_str().unwrap())
        .collect();
    assert!(bindings
        .iter()
        .all(|b| ["time", "memory", "none"].contains(b)));
    // exact-contiguous's least period is set by memory or by the bottleneck: something binds.
    assert!(bindings.iter().any(|b| *b != "none"), "{bindings:?}");
    for s in stages {
        let m = &s["memory"];
        let parts: f64 = [
            "weights",
            "gradients",
            "optimizer",
            "activations",
            "buffers",
            "transient",
            "reserved",
        ]
        .iter()
        .map(|k| m[k].as_f64().unwrap())
        .sum();
        assert!(parts > 0.0);
        assert!(
            s["load_ms"].as_f64().unwrap() <= s["bottleneck_ms"].as_f64().unwrap() * (1.0 + 1e-9)
        );
    }
    assert!(v["why"][0].as_str().unwrap().starts_with("period"));
    let text = stdout(&pipeplan(&["explain", sol.to_str().unwrap(), &inst]));
    assert!(
        text.contains("binding:") && text.contains(" in flight x "),
        "{text}"
    );
    // Every stage states its compute, with overheads or without.
    assert_eq!(
        text.matches("time: compute ").count(),
        stages.len(),
        "{text}"
    );
}

#[test]
fn infeasible_solves_carry_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    std::fs::write(
        &cal,
        r#"{"format": "pipeplan/calibration@1", "constants": {"reserved_memory": "7.9 GiB"}}"#,
    )
    .unwrap();
    let inst = shipped_str("bert-large-s512-b8-8gpu-8gib.json");
    let out = pipeplan(&[
        "solve",
        &inst,
        "--algo",
        "exact-contiguous",
        "--calibration",
        cal.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let e = stderr(&out);
    assert!(
        e.contains("certificate: the busiest GPU needs at least"),
        "{e}"
    );
    assert!(e.contains("GPUs of this size"), "{e}");
}
