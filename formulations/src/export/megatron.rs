//! Megatron-LM: the command-line arguments of `pretrain_gpt.py` that fix the parallel layout,
//! the pipeline split, activation recomputation and the batch. Megatron runs one tp and one dp
//! degree everywhere (ranks: tp fastest, then dp, then pp), embeds on the first stage and
//! computes the output layer and loss on the last; replicated stages at ZeRO-1 run its
//! distributed optimizer (`--use-distributed-optimizer`); uneven splits are given by the first
//! and last stages' layer counts (`--decoder-first/last-pipeline-num-layers`, the middle stages
//! even) or, for any other split, by `--pipeline-model-parallel-layout` (`E` embedding, `t`
//! transformer layer, `L` output layer and loss, `|` between stages).

use super::layout::{self, Layout, Role};
use super::RuntimePlan;
use crate::error::InputError;
use crate::instance::Instance;
use crate::plan::{Plan, Schedule, Stage};

/// Why Megatron-LM cannot run the plan as it is (empty: it can).
pub fn limits(inst: &Instance, rp: &RuntimePlan) -> Vec<String> {
    let plan = &rp.plan;
    let mut why = Vec::new();
    match plan.schedule {
        Schedule::Async { .. } => why.push(
            "the schedule is asynchronous; Megatron-LM trains synchronously (1F1B)".to_string(),
        ),
        Schedule::Gpipe { .. } => {
            why.push("the schedule is GPipe; Megatron-LM pipelines with 1F1B".to_string())
        }
        Schedule::OneFOneB { .. } => {}
    }
    match layout::standard(plan) {
        Ok(_) => {
            let tp: Vec<u32> = plan.stages.iter().map(|s| s.tp).collect();
            if tp.iter().any(|&t| t != tp[0]) {
                why.push(format!(
                    "tensor-parallel degrees differ between layers ({}); Megatron-LM uses one \
                     --tensor-model-parallel-size",
                    super::distinct(&tp)
                ));
            }
            if plan
                .stages
                .iter()
                .any(|s| layout::consecutive(s) != Some(true))
            {
                why.push("a stage's tp groups are strided; Megatron-LM's are consecutive".into());
            }
            if let Some(dp) = plan.stages.first().map(|s| s.dp) {
                let (micro, _) = layout::batch(inst, plan);
                if micro % dp != 0 {
                    why.push(format!(
                        "micro-batches of {micro} samples do not split over {dp} data-parallel \
                         replicas (--micro-batch-size is per replica)"
                    ));
                }
            }
        }
        Err(e) => why.push(e),
    }
    // A stage on one replica divides nothing, whatever its flags say (`layout::zero_stages`).
    if let Some(s) = plan.stages.iter().position(Stage::shards) {
        why.push(format!(
            "stage {s} shards parameters (ZeRO-3); pipeplan exports Megatron-LM's replicated \
             data parallelism and its distributed optimizer (ZeRO-1) only"
        ));
    }
    if let Some(s) = plan
        .stages
        .iter()
        .position(|s| s.zero == 2 && s.divides_part_of_states())
    {
        why.push(format!(
            "stage {s} divides its gradients (ZeRO-2); Megatron-LM's distributed optimizer \
             divides the optimizer states only (ZeRO-1) and keeps the gradient buffer whole"
        ));
    }
    if layout::zero_stages(plan).iter().filter(|&&z| z < 3).count() > 1 {
        why.push(
            "some replicated stages divide their optimizer states and others do not; \
             --use-distributed-optimizer applies to the whole model"
                .into(),
        );
    }
    if recompute(inst, plan).is_err() {
        why.push(
            "the checkpointed layers are not every transformer layer, nor the same number of \
             first transformer layers in every stage (--recompute-method uniform / block)"
                .into(),
        );
    }
    why.extend(layout::memory_actions(plan, "Megatron-LM"));
    why
}

/// The nearest plan Megatron-LM runs: [`layout::nearest`] with one tp and one ZeRO stage (as most
/// layers), at most ZeRO-1, 1F1B, micro-batches rounded to a multiple of dp, and every stage
/// recomputing as many of its first transformer layers as the stage that recomputed the most.
pub fn nearest(inst: &Instance, plan: &Plan) -> Plan {
    let mut p = layout::nearest(plan, false, true);
    for st in &mut p.stages {
        let zero = st.zero_stage().min(1);
        st.set_zero_stage(zero);
    }
    let dp = p.stages[0].dp;
    let (micro, m) = layout::batch(inst, &p);
    let micro = layout::micro_for_dp(micro, dp);
    p.schedule = Schedule::OneFOneB {
        micro_batches: Some(m),
        micro_batch: Some(micro),
    };
    let roles = layout::roles(inst);
    if let Ok(lay) = layout::standard(&p) {
        let k = lay
            .positions
            .iter()
            .map(|ss| {
                ss.iter()
                    .flat_map(|&s| p.stages[s].checkpoint.iter())
                    .filter(|&&l| roles[l] == Role::Block)
                    .count()
            })
            .max()
            .unwrap_or(0);
        for ss in &lay.positions {
            let blocks: Vec<usize> = ss
                .iter()
                .flat_map(|&s| p.stages[s].first..=p.stages[s].last)
                .filter(|&l| roles[l] == Role::Block)
                .take(k)
                .collect();
            for &s in ss {
                let st = &mut p.stages[s];
                st.checkpoint = blocks
                    .iter()
                    .copied()
                    .filter(|l| (st.first..=st.last).contains(l))
                    .collect();
            }
        }
    }
    p
}

/// Megatron's recompute arguments: `None` for no recomputation, `Some(("uniform", 1))` for every
/// transformer layer, `Some(("block", k))` for the first `k` of every stage.
fn recompute(inst: &Instance, plan: &Plan) -> Result<Option<(&'static str, usize)>, ()> {
    let roles = layout::roles(inst);
    let ck: Vec<bool> = {
        let mut v = vec![false; inst.num_layers()];
        for st in &plan.stages {
            for &l in &st.checkpoint {
                v[l] = true;
            }
        }
        v
    };
    if ck.iter().zip(&roles).any(|(&c, &r)| c && r != Role::Block) {
        return Err(());
    }
    if !ck.contains(&true) {
        return Ok(None);
    }
    let blocks = roles.iter().filter(|&&r| r == Role::Block).count();
    if ck.iter().filter(|&&c| c).count() == blocks {
        return Ok(Some(("uniform", 1)));
    }
    let lay = layout::standard(plan).map_err(|_| ())?;
    let mut k = None;
    for ss in &lay.positions {
        let first = plan.stages[ss[0]].first;
        let last = plan.stages[*ss.last().expect("a position has a stage")].last;
        let stage: Vec<bool> = (first..=last)
            .filter(|&l| roles[l] == Role::Block)
            .map(|l| ck[l])
            .collect();
        let n = stage.iter().take_while(|&&c| c).count();
        if stage[n..].contains(&true) || k.is_some_and(|k| k != n) {
            return Err(());
        }
        k = Some(n);
    }
    Ok(k.map(|k| ("block", k)))
}

/// The arguments of an expressible plan, one per line.
pub fn write(inst: &Instance, rp: &RuntimePlan) -> Result<String, InputError> {
    let plan = &rp.plan;
    let lay: Layout = layout::standard(plan).map_err(|e| InputError::field("plan.stages", e))?;
    let roles = layout::roles(inst);
    let (tp, dp, pp) = (plan.stages[0].tp, plan.stages[0].dp, lay.pp());
    let (micro, m) = layout::batch(inst, plan);
    let blocks_per_stage: Vec<usize> = lay
        .positions
        .iter()
        .map(|ss| {
            let (a, b) = (plan.stages[ss[0]].first, plan.stages[ss[ss.len() - 1]].last);
            (a..=b).filter(|&l| roles[l] == Role::Block).count()
        })
        .collect();
    let blocks: usize = blocks_per_stage.iter().sum();
    let mut args: Vec<String> = vec![
        format!(
            "# {} GPUs = tp {tp} x pp {pp} x dp {dp}",
            tp as usize * pp * dp as usize
        ),
        format!("--tensor-model-parallel-size {tp}"),
        format!("--pipeline-model-parallel-size {pp}"),
        format!("--num-layers {blocks}"),
    ];
    args.extend(split(&blocks_per_stage, &lay, plan, &roles));
    if layout::zero_stages(plan) == [1] {
        args.push("--use-distributed-optimizer".into());
    }
    args.push(format!("--micro-batch-size {}", micro / dp));
    args.push(format!("--global-batch-size {}", micro as u64 * m as u64));
    match recompute(inst, plan) {
        Ok(None) => {}
        Ok(Some((method, k))) => args.extend([
            "--recompute-granularity full".to_string(),
            format!("--recompute-method {method}"),
            format!("--recompute-num-layers {k}"),
        ]),
        Err(()) => {
            return Err(InputError::field(
                "plan.stages.checkpoint",
                "not expressible in Megatron-LM",
            ))
        }
    }
    let n = args.len();
    Ok(args
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 || i + 1 == n {
                a
            } else {
                format!("{a} \\")
            }
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The split arguments: none when even, first/last counts when only they differ from an even
/// middle, else the layout string.
fn split(per: &[usize], lay: &Layout, plan: &Plan, roles: &[Role]) -> Vec<String> {
    let pp = per.len();
    if pp == 1 || per.iter().all(|&n| n == per[0]) {
        return Vec::new();
    }
    let middle = &per[1..pp - 1];
    let even_middle = middle
        .iter()
        .all(|&n| n == middle.first().copied().unwrap_or(0));
    if even_middle && (pp == 2 || middle[0] > 0) {
        let mut out = Vec::new();
        let mid = middle.first().copied();
        if pp == 2 || Some(per[0]) != mid {
            out.push(format!("--decoder-first-pipeline-num-layers {}", per[0]));
        }
        if pp == 2 || Some(per[pp - 1]) != mid {
            out.push(format!(
                "--decoder-last-pipeline-num-layers {}",
                per[pp - 1]
            ));
        }
        return out;
    }
    vec![format!(
        "--pipeline-model-parallel-layout \"{}\"",
        layout_string(lay, plan, roles)
    )]
}

/// `E`, `t*n`, `L` per stage, `|` between stages.
pub fn layout_string(lay: &Layout, plan: &Plan, roles: &[Role]) -> String {
    let last = lay.pp() - 1;
    lay.positions
        .iter()
        .enumerate()
        .map(|(p, ss)| {
            let (a, b) = (plan.stages[ss[0]].first, plan.stages[ss[ss.len() - 1]].last);
            let t = (a..=b).filter(|&l| roles[l] == Role::Block).count();
            let mut s = String::new();
            if p == 0 {
                s.push('E');
            }
            match t {
                0 => {}
                1 => s.push('t'),
                n => s.push_str(&format!("t*{n}")),
            }
            if p == last {
                s.push('L');
            }
            s
        })
        .collect::<Vec<_>>()
        .join("|")
}
