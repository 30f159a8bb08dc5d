//! Replays the reference engine's golden runs: `$PIPEPLAN_PEERS/galvatron/golden/*.json`, each
//! holding the `config` object the engine ran with (profile and hardware paths relative to
//! `$PIPEPLAN_PEERS/galvatron/`) and the engine's output. Every file is imported and solved with
//! `galvatron-base`; the plan and throughput must equal the engine's. Skips visibly when the
//! peers folder is absent.
//!
//! Golden schema assumed (the folder's README was not available when this was written; see
//! `docs/galvatron.md`): `result` holds the engine's saved config (`pp_deg`, `tp_sizes_enc`,
//! `tp_consecutive_flags`, `dp_types_enc`, `checkpoint` as comma-separated strings,
//! `global_bsz`, `chunks`, `pp_division`, `vtp`, `embed_sdp`) and `throughput` (samples/s);
//! optional `layer_costs[]` entries `{layer_type, strategy: [pp, tp, dp, {..}], bsz, mbsz,
//! min_tp, stage_idx, memory: {enc_total, model_states, activation}, time, time_no_comm}` are
//! compared to 1e-9. A file with none of these fields fails (it cannot pass silently).

use pipeplan_formulations::galvatron::cost::{layer_memory, layer_time, MemoryCall};
use pipeplan_formulations::galvatron::import::import;
use pipeplan_formulations::galvatron::{LayerTypes, Strategy};
use pipeplan_formulations::peers;
use pipeplan_solvers::{registry, SolveOptions};
use serde_json::Value;

fn rel_eq(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300)
}

fn csv(v: &Value) -> Option<Vec<i64>> {
    match v {
        Value::String(s) => s.split(',').map(|x| x.trim().parse().ok()).collect(),
        Value::Array(a) => a.iter().map(Value::as_i64).collect(),
        Value::Number(n) => n.as_i64().map(|x| vec![x]),
        _ => None,
    }
}

fn strategy(v: &Value) -> Option<Strategy> {
    let a = v.as_array()?;
    let d = a.get(3).and_then(Value::as_object);
    let flag = |k: &str| {
        d.and_then(|d| d.get(k))
            .and_then(Value::as_i64)
            .map(|x| x == 1)
    };
    Some(Strategy {
        pp: a[0].as_u64()? as u32,
        tp: a[1].as_u64()? as u32,
        dp: a[2].as_u64()? as u32,
        consec: flag("tp"),
        fsdp: flag("fsdp"),
        cpt: flag("cpt").unwrap_or(false),
    })
}

#[test]
fn golden_runs_replay_exactly() {
    let Some(dir) = peers::subdir("galvatron/golden", "galvatron golden replay") else {
        return;
    };
    let root = dir.parent().unwrap().to_path_buf();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no golden files in {}", dir.display());
    let algo = registry::by_name("galvatron-base").unwrap();
    for f in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let name = f.display().to_string();
        let inst = import(&doc, &root).unwrap_or_else(|e| panic!("{name}: {e}"));
        let lt = LayerTypes::from_instance(&inst).unwrap().unwrap();
        let mut checked = 0;
        for (i, c) in doc
            .get("layer_costs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let ty = c["layer_type"].as_u64().unwrap() as usize;
            let s = strategy(&c["strategy"])
                .unwrap_or_else(|| panic!("{name}: layer_costs[{i}].strategy"));
            let call = MemoryCall {
                bsz: c["bsz"].as_u64().unwrap(),
                mbsz: c["mbsz"].as_u64().unwrap(),
                min_tp: c["min_tp"].as_u64().unwrap_or(1) as u32,
                stage: c["stage_idx"].as_u64().unwrap_or(0) as usize,
                embed_sdp: c["embed_sdp"].as_i64().unwrap_or(0) == 1,
                pipeline: lt.settings.pipeline_type,
            };
            if let Some(m) = c.get("memory") {
                let got = layer_memory(&lt, ty, &s, &call).unwrap();
                for (k, v) in [
                    ("enc_total", got.total),
                    ("model_states", got.model_states),
                    ("activation", got.activation),
                ] {
                    if let Some(want) = m.get(k).and_then(Value::as_f64) {
                        assert!(
                            rel_eq(v, want),
                            "{name}: layer_costs[{i}] {k} {v} != {want}"
                        );
                        checked += 1;
                    }
                }
            }
            let tbsz = c
                .get("time_bsz")
                .and_then(Value::as_f64)
                .unwrap_or(call.bsz as f64);
            for (k, no_comm) in [("time", false), ("time_no_comm", true)] {
                if let Some(want) = c.get(k).and_then(Value::as_f64) {
                    let v = layer_time(&lt, ty, &s, tbsz, no_comm).unwrap();
                    assert!(
                        rel_eq(v, want),
                        "{name}: layer_costs[{i}] {k} {v} != {want}"
                    );
                    checked += 1;
                }
            }
        }
        let result = doc
            .get("result")
            .unwrap_or_else(|| panic!("{name}: no `result`"));
        let sol = algo.solve(
            &inst,
            &SolveOptions {
                time_limit: None,
                ..Default::default()
            },
        );
        let sol = sol.unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(t) = result
            .get("throughput")
            .or(doc.get("throughput"))
            .and_then(Value::as_f64)
        {
            let got = sol.claimed.throughput.unwrap();
            assert!(rel_eq(got, t), "{name}: throughput {got} != {t}");
            checked += 1;
        }
        // The plan, per layer, from the solution's stages.
        let mut tp = vec![0i64; inst.num_layers()];
        let mut sdp = vec![0i64; inst.num_layers()];
        let mut ckpt = vec![0i64; inst.num_layers()];
        for s in &sol.plan.stages {
            for l in s.first..=s.last {
                tp[l] = s.tp as i64;
                sdp[l] = s.sdp as i64;
                ckpt[l] = s.checkpoint.contains(&l) as i64;
            }
        }
        let pp = sol
            .plan
            .positions()
            .map(|p| p.iter().max().map_or(1, |m| m + 1))
            .unwrap_or(1) as i64;
        for (k, got) in [
            ("tp_sizes_enc", tp),
            ("dp_types_enc", sdp),
            ("checkpoint", ckpt),
            ("pp_deg", vec![pp]),
        ] {
            if let Some(want) = result.get(k).and_then(csv) {
                assert_eq!(got, want, "{name}: {k}");
                checked += 1;
            }
        }
        let note = &sol.notes[0];
        for (k, pat) in [
            ("global_bsz", "batch "),
            ("chunks", " in "),
            ("vtp", "vocab tp "),
        ] {
            if let Some(want) = result.get(k).and_then(Value::as_i64) {
                assert!(
                    note.contains(&format!("{pat}{want}")),
                    "{name}: {k} {want} vs {note}"
                );
                checked += 1;
            }
        }
        if let Some(want) = result.get("pp_division").and_then(csv) {
            let want = format!("{:?}", want);
            assert!(note.contains(&want), "{name}: pp_division {want} vs {note}");
            checked += 1;
        }
        assert!(
            checked > 0,
            "{name}: no field of the assumed golden schema found"
        );
    }
}
