//! What the runtimes share: a plan seen as pipeline positions on the runtime's standard ranks
//! (position `p` on ranks `p*w..(p+1)*w`, each replica's tensor-parallel group consecutive or
//! strided), the roles of the chain's layers (embedding, blocks, head), the batch numbers, and
//! the nearest plan of that shape.

use crate::instance::Instance;
use crate::plan::{Plan, Schedule, Stage};

/// A plan's pipeline positions on the standard ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Stage indices of each position (neighbouring stages on the same GPUs).
    pub positions: Vec<Vec<usize>>,
    /// GPUs per position.
    pub width: u32,
}

impl Layout {
    /// Pipeline degree.
    pub fn pp(&self) -> usize {
        self.positions.len()
    }
    /// Layers per position.
    pub fn division(&self, plan: &Plan) -> Vec<usize> {
        self.positions
            .iter()
            .map(|ss| ss.iter().map(|&s| plan.stages[s].len()).sum())
            .collect()
    }
    /// First layer of each position.
    pub fn firsts(&self, plan: &Plan) -> Vec<usize> {
        self.positions
            .iter()
            .map(|ss| plan.stages[ss[0]].first)
            .collect()
    }
}

/// The stages grouped by position, when every position has the same number of GPUs and
/// position `p` holds ranks `p*w..(p+1)*w`; otherwise why not.
pub fn standard(plan: &Plan) -> Result<Layout, String> {
    let Some(pos) = plan.positions() else {
        return Err(
            "stages that are not neighbours share GPUs (a non-contiguous allocation, \
                    e.g. MadPipe's special GPU); the runtime runs each GPU in one pipeline stage"
                .into(),
        );
    };
    let mut positions: Vec<Vec<usize>> = Vec::new();
    for (s, &p) in pos.iter().enumerate() {
        if p == positions.len() {
            positions.push(Vec::new());
        }
        positions[p].push(s);
    }
    let width = plan.stages[0].gpus.len() as u32;
    for (p, ss) in positions.iter().enumerate() {
        let st = &plan.stages[ss[0]];
        let mut g = st.gpus.clone();
        g.sort_unstable();
        let want: Vec<u32> = (p as u32 * width..(p as u32 + 1) * width).collect();
        if g.len() as u32 != width {
            return Err(format!(
                "pipeline stage {p} has {} GPUs and stage 0 has {width}; the runtime gives every \
                 pipeline stage the same number",
                g.len()
            ));
        }
        if g != want {
            return Err(format!(
                "pipeline stage {p} runs on GPUs {g:?}; the runtime places stage {p} on ranks \
                 {}..={}",
                want[0],
                want[want.len() - 1]
            ));
        }
    }
    Ok(Layout { positions, width })
}

/// How a stage's replicas sit on its GPUs: `Some(true)` when each tensor-parallel group is
/// consecutive ranks (`gpus` ascending), `Some(false)` when strided (replica `r` on
/// `base + r + dp*k`), `None` for any other order.
pub fn consecutive(st: &Stage) -> Option<bool> {
    let base = *st.gpus.iter().min()?;
    let sorted: Vec<u32> = (base..base + st.gpus.len() as u32).collect();
    if st.gpus == sorted {
        return Some(true);
    }
    (st.gpus == strided(base, st.dp, st.tp)).then_some(false)
}

/// GPUs of a stage whose tensor-parallel groups are strided: replica `r` on `base + r + dp*k`.
pub fn strided(base: u32, dp: u32, tp: u32) -> Vec<u32> {
    (0..dp)
        .flat_map(|r| (0..tp).map(move |k| base + r + dp * k))
        .collect()
}

/// What each chain layer is to a transformer runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The first layer, named like an embedding (`embed`).
    Embedding,
    /// A transformer block (every other layer).
    Block,
    /// The last layer, named like an output layer (`head`, `output`, `lm_head`, `classifier`).
    Head,
}

/// The role of every layer, from the names of the first and last ones.
pub fn roles(inst: &Instance) -> Vec<Role> {
    let layers = &inst.model.layers;
    let n = layers.len();
    let lower = |i: usize| layers[i].name.to_ascii_lowercase();
    (0..n)
        .map(|i| {
            if i == 0 && n > 1 && lower(0).contains("embed") {
                Role::Embedding
            } else if i + 1 == n
                && n > 1
                && ["head", "output", "classifier"]
                    .iter()
                    .any(|k| lower(i).contains(k))
            {
                Role::Head
            } else {
                Role::Block
            }
        })
        .collect()
}

/// The batch a synchronous plan trains: samples per micro-batch (split over the replicas) and
/// micro-batches per iteration.
pub fn batch(inst: &Instance, plan: &Plan) -> (u32, u32) {
    let micro = plan
        .schedule
        .micro_batch()
        .unwrap_or_else(|| inst.micro_batch());
    let m = match &plan.schedule {
        Schedule::OneFOneB { micro_batches, .. } | Schedule::Gpipe { micro_batches, .. } => {
            micro_batches.unwrap_or_else(|| inst.micro_batches())
        }
        Schedule::Async { .. } => inst.micro_batches(),
    };
    (micro, m)
}

/// A micro-batch of `micro` samples made a multiple of the data-parallel degree `dp` (at least
/// `dp`): rounded up, or down where rounding up passes `u32::MAX`, which a hand-edited plan can
/// ask for.
pub fn micro_for_dp(micro: u32, dp: u32) -> u32 {
    let dp = dp.max(1);
    micro
        .div_ceil(dp)
        .checked_mul(dp)
        .unwrap_or(micro / dp * dp)
        .max(dp)
}

/// Why a plan's stages carry swap or recompute lists a runtime cannot express, if they do.
pub fn memory_actions(plan: &Plan, runtime: &str) -> Option<String> {
    let s = plan.stages.iter().position(Stage::has_memory_actions)?;
    Some(format!(
        "stage {s} swaps or recomputes single tensors (DawnPiper's MemOpt); {runtime} has no \
         per-tensor swap or recompute lists"
    ))
}

/// The nearest plan on the standard ranks: synchronous (1F1B unless `gpipe` is allowed and
/// chosen), no swap or recompute lists, each pipeline position kept (stages sharing GPUs become
/// positions of their own; neighbouring positions with the fewest layers merge until the pipeline
/// degree divides the GPUs the plan uses), `w` GPUs per position, each stage's tp the largest
/// divisor of `w` not above its own, tp groups consecutive. With `uniform`, every stage takes the
/// tp and sharding that cover the most layers.
pub fn nearest(plan: &Plan, gpipe: bool, uniform: bool) -> Plan {
    let schedule = match &plan.schedule {
        Schedule::Gpipe { .. } if gpipe => plan.schedule.clone(),
        Schedule::Async { .. } => Schedule::OneFOneB {
            micro_batches: None,
            micro_batch: None,
        },
        Schedule::OneFOneB {
            micro_batches,
            micro_batch,
        }
        | Schedule::Gpipe {
            micro_batches,
            micro_batch,
        } => Schedule::OneFOneB {
            micro_batches: *micro_batches,
            micro_batch: *micro_batch,
        },
    };
    let gpus = (plan.gpus().len() as u32).max(1);
    let pos = plan
        .positions()
        .unwrap_or_else(|| (0..plan.stages.len()).collect());
    let mut groups: Vec<Vec<Stage>> = Vec::new();
    for (s, &p) in pos.iter().enumerate() {
        if p >= groups.len() {
            groups.push(Vec::new());
        }
        groups[p].push(plan.stages[s].clone());
    }
    let layers = |g: &Vec<Stage>| g.iter().map(Stage::len).sum::<usize>();
    while groups.len() > 1 && (groups.len() as u32 > gpus || gpus % groups.len() as u32 != 0) {
        let i = (0..groups.len() - 1)
            .min_by_key(|&i| layers(&groups[i]) + layers(&groups[i + 1]))
            .unwrap_or(0);
        let next = groups.remove(i + 1);
        groups[i].extend(next);
    }
    let w = gpus / groups.len() as u32;
    let mut common = (1, 0);
    if uniform {
        let mut by: std::collections::BTreeMap<(u32, u8), usize> = Default::default();
        for st in &plan.stages {
            *by.entry((fit(st.tp, w), st.zero_stage())).or_default() += st.len();
        }
        common = by
            .into_iter()
            .max_by_key(|&((tp, _), n)| (n, std::cmp::Reverse(tp)))
            .map_or((1, 0), |(k, _)| k);
    }
    let mut stages = Vec::new();
    for (p, g) in groups.into_iter().enumerate() {
        let ids: Vec<u32> = (p as u32 * w..(p as u32 + 1) * w).collect();
        for st in g {
            let (tp, zero) = if uniform {
                common
            } else {
                (fit(st.tp, w), st.zero_stage())
            };
            let mut st = Stage {
                gpus: ids.clone(),
                dp: w / tp,
                tp,
                swap: Vec::new(),
                recompute: Vec::new(),
                ..st
            };
            st.set_zero_stage(if st.sharers() > 1 { zero } else { 0 });
            stages.push(st);
        }
    }
    Plan {
        order: None,
        stages,
        schedule,
    }
}

/// The distinct ZeRO stages ([`Stage::zero_stage`], 3 for `sdp`) of the plan's stages with
/// several sharers, in increasing order: a stage on one replica divides nothing.
pub fn zero_stages(plan: &Plan) -> Vec<u8> {
    let set: std::collections::BTreeSet<u8> = plan
        .stages
        .iter()
        .filter(|s| s.sharers() > 1)
        .map(Stage::zero_stage)
        .collect();
    set.into_iter().collect()
}

/// Gives the plan's replicated stages (several sharers, `sdp` off) the ZeRO stage (0 to 3)
/// `runs` maps theirs to, then, if they still differ, the one covering the most layers (the
/// higher on a tie: it divides more).
pub fn one_zero_stage(plan: &mut Plan, runs: impl Fn(u8) -> u8) {
    let replicated: Vec<usize> = (0..plan.stages.len())
        .filter(|&s| !plan.stages[s].sdp && plan.stages[s].sharers() > 1)
        .collect();
    let mut layers = [0usize; 4];
    for &s in &replicated {
        let z = runs(plan.stages[s].zero).min(3);
        layers[usize::from(z)] += plan.stages[s].len();
        plan.stages[s].set_zero_stage(z);
    }
    let common = (0..4u8)
        .max_by_key(|&z| (layers[usize::from(z)], z))
        .unwrap_or(0);
    for &s in &replicated {
        plan.stages[s].set_zero_stage(common);
    }
}

/// The largest divisor of `w` not above `tp`.
fn fit(tp: u32, w: u32) -> u32 {
    (1..=tp.min(w)).rev().find(|d| w % d == 0).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::micro_for_dp;

    #[test]
    fn micro_batches_become_multiples_of_dp_without_overflow() {
        assert_eq!(micro_for_dp(8, 2), 8);
        assert_eq!(micro_for_dp(5, 2), 6);
        assert_eq!(micro_for_dp(1, 4), 4);
        assert_eq!(micro_for_dp(u32::MAX, 2), u32::MAX - 1);
        assert_eq!(micro_for_dp(u32::MAX, 1), u32::MAX);
    }
}
