//! `pipedream`: PipeDream's planner (Narayanan et al., SOSP 2019), as its optimizer code computes
//! it (msr-fiddle/pipedream `optimizer/optimizer_graph_hierarchical.py`), followed by the valid
//! period of its partition under 1F1B*, which is how the MadPipe paper (§5) judges it: PipeDream's own pipeline model assumes at most P micro-batches in
//! flight and is "very optimistic" (the paper's dashed lines); the period a memory-valid 1F1B*
//! schedule reaches on its partition is the solid line.
//!
//! # PipeDream's dynamic program
//!
//! `A[j][m]` = least pipeline time of layers `0..=j` on `m + 1` machines. A single stage on
//! `m + 1` replicas takes `(U + 4 m W / (beta (m + 1))) / (m + 1)` (compute plus its data-parallel
//! weight synchronisation, shared by the replicas). A split after layer `k` puts layers
//! `k+1..=j` on `m'` replicas after `A[k][m - m']`; the pipeline time is the max of the prefix's,
//! the last stage's `(U + 4 (m' - 1) W / (beta m')) / m'`, and the transfers into and out of it,
//! `2 a / (beta m')` (activation forward plus gradient back over `m'` lanes; `a` = bytes crossing
//! the cut). Every machine is used, unless `--set use_fewer_machines=true` (the optimizer's
//! `--use_fewer_machines`): then `A[j][m]` keeps `A[j][m - 1]` when that is faster, so a pipeline
//! may leave GPUs unused. Straight pipeline (the default here, as the MadPipe paper compares: one
//! GPU per stage): `m' = 1` and exactly P stages (at most P with `use_fewer_machines`);
//! `--set replicate=true` allows replicated (data-parallel) stages.
//!
//! **Memory check** (`--use_memory_constraint`; on by default here, `--set memory_check=false`
//! turns it off): a stage of activations `A` (sum of its layers' *outputs*) and parameters `W` on
//! `m'` replicas, with `m + 1` machines used up to it, is rejected when
//! `(A + W) ceil((N - (m + 1)) / m') > M`. It counts one weight version, no gradient or optimizer
//! state and no buffers, and the last stage always passes: rough, as the MadPipe paper says.
//!
//! Transfers enter the max only with `--set activation_compression_ratio=<r>` (divided by `r`;
//! default 1, as the optimizer's README demo runs it); `=none` ignores them, as the optimizer
//! does without its `--activation_compression_ratio` flag (the earlier `optimizer.py` and the
//! paper always count them). Ties go to the first split found (smallest `k`, then fewest
//! replicas); PipeDream iterates a Python set there, so its ties are arbitrary.
//!
//! # States
//!
//! The formulas above are written for a chain, whose states are its layers (`j` stands for
//! layers `0..=j`, a state's output size is the layer's `cut`). On an instance that carries its
//! layer graph (`extensions.dag`) the DP runs, as the optimizer's does, over the graph's
//! antichain states ([`PdStates`]): a split of state `j` after any state `k` that precedes it in
//! the antichain DAG, the stage being the layers of `j` not in `k`, a state's output the
//! activations of its augmented antichain. Below the last level of a two-level search, only
//! nested ranges of states are filled (`docs/pipedream.md`, "States"). Stages that are not
//! ranges of the chain give a plan with its own layer order (`plan.order`).
//!
//! # Levels
//!
//! On a cluster of several full nodes, all GPUs used, the search runs level by level as the
//! optimizer's `-n <gpus per node> <nodes> -b <intra> <inter>` does: the lower level fills
//! `A[i][j][m]` for every start `i` (the best pipeline of layers `i..=j` inside one node);
//! the upper level then partitions the chain over nodes with that time as a range's compute,
//! its weight synchronisation at the inter-node bandwidth (divided by the GPUs of a node for a
//! range that starts the pipeline, as the optimizer computes it, not for later ranges). Each
//! upper stage on `r` nodes is split by the lower level identically in each of its nodes.
//! Otherwise one level of every GPU is searched at the slowest link the pipeline crosses.
//!
//! # Claims
//!
//! The claimed objective is PipeDream's own `A[L-1][N-1]` ("pipedream max stage time", also in
//! `claimed.period_ms`, as PipeDream predicts a period). The plan carries the valid period, also
//! stated in the notes; when no period fits pipeplan's memory model, it keeps the least period
//! its loads allow, a note names the GPU that does not fit, and the evaluator says so.

use super::valid_period::{async_schedule_note, valid_period_of_plan, ValidPeriodError};
use crate::algorithm::{
    solution, Algorithm, Claimed, Context, Family, Objective, ObjectiveKind, Solution, SolveError,
    Stats, Status, Unsupported,
};
use crate::settings::{Kind, Param};
use pipeplan_formulations::instance::Traffic;
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::{InputError, Instance, Plan, Schedule, Stage};

/// PipeDream's planner followed by its valid 1F1B* period (see the module docs).
pub struct PipeDream;

mod levels;
mod states;
pub use levels::{
    pd_level_objective, pd_objective, pipedream_partition, pipedream_partition_within, table_bytes,
    PdConfig, PdLevel, PdPartition, PdProfile, PdStage,
};
pub use states::PdStates;

/// Most antichain states searched (the optimizer's states of a graph): past it, the DP cuts at
/// the chain's prefixes. inception_v3 has 221,564, on which the optimizer itself runs out of
/// 24 GiB; the residual networks have a few hundred.
pub const MAX_STATES: usize = 20_000;

/// Most memory the DP's tables may take (4 GiB): more is refused as unsupported rather than
/// risk running out of memory (`docs/limits.md`).
pub const MAX_TABLE_BYTES: f64 = 4.0 * 1024.0 * 1024.0 * 1024.0;

/// The plan of a PipeDream partition: each stage on its replicas' GPUs. Its stages are ranges
/// of the layer order they list in turn (each stage's layers ascending); the plan names that
/// order when it is not the chain's.
pub fn pd_plan(part: &PdPartition) -> Plan {
    let order: Vec<usize> = part
        .stages
        .iter()
        .flat_map(|st| st.layers.clone())
        .collect();
    let mut first = 0;
    let stages = part
        .stages
        .iter()
        .map(|st| {
            first += st.layers.len();
            Stage {
                dp: st.replicas as u32,
                gpus: st.gpus.clone(),
                ..Stage::single(first - st.layers.len(), first - 1, 0)
            }
        })
        .collect();
    Plan {
        order: pipeplan_formulations::layer_order::plan_order(order),
        stages,
        schedule: Schedule::one_f_one_b_star(None),
    }
}

/// The levels searched: one level of every GPU at the slowest link, or, on a cluster of
/// several full nodes using every GPU, the GPUs of a node then the nodes (the optimizer's
/// `-n <gpus per node> <nodes> -b <intra> <inter>`).
fn levels(inst: &Instance, machines: usize) -> Vec<PdLevel> {
    let (gpus, per_node) = (inst.cluster.gpus as usize, inst.gpus_per_node() as usize);
    if per_node < gpus && gpus % per_node == 0 && machines == gpus {
        return vec![
            PdLevel {
                machines: per_node,
                bandwidth: inst.intra_node_bandwidth(Traffic::Collective),
            },
            PdLevel {
                machines: gpus / per_node,
                bandwidth: inst.inter_node_bandwidth(Traffic::Collective),
            },
        ];
    }
    let used: Vec<u32> = (0..machines as u32).collect();
    vec![PdLevel {
        machines,
        bandwidth: inst.group_bandwidth(&used, Traffic::Collective),
    }]
}

fn describe_levels(levels: &[PdLevel]) -> String {
    levels
        .iter()
        .map(|l| format!("{} x {:.3} GB/s", l.machines, l.bandwidth / 1e9))
        .collect::<Vec<_>>()
        .join(", then ")
}

/// Layers as ranges of consecutive indices: `0-16,18,20-22`.
fn ranges(layers: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < layers.len() {
        let mut j = i;
        while j + 1 < layers.len() && layers[j + 1] == layers[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            format!("{}", layers[i])
        } else {
            format!("{}-{}", layers[i], layers[j])
        });
        i = j + 1;
    }
    out.join(",")
}

fn describe(part: &PdPartition) -> String {
    part.stages
        .iter()
        .map(|s| {
            let l = ranges(&s.layers);
            if s.replicas > 1 {
                format!("{l} x{}", s.replicas)
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The GPUs the pipeline uses: `--stages` (default all), which with `replicate` counts
/// machines, not stages (a replicated pipeline may use more GPUs than layers).
fn machines(inst: &Instance, ctx: &Context, replicate: bool) -> Result<usize, SolveError> {
    if !replicate {
        return ctx.stage_count(inst);
    }
    match ctx.stages {
        None => Ok(inst.cluster.gpus as usize),
        Some(s) if s >= 1 && s <= inst.cluster.gpus as usize => Ok(s),
        Some(s) => Err(SolveError::Input(InputError::field(
            "--stages",
            format!(
                "with replicate=true it is the number of GPUs used: {s} is not in 1..={}",
                inst.cluster.gpus
            ),
        ))),
    }
}

/// The states the DP cuts at: the optimizer's antichain states when the graph is known and
/// their tables fit, else the chain's prefixes; and a note saying which, and why.
fn search_states(profile: &PdProfile, cfg: &PdConfig) -> (PdStates, String) {
    let states = PdStates::of(profile);
    if states.graph() && table_bytes(states.len(), cfg) > MAX_TABLE_BYTES {
        let note = format!(
            "cut at the chain's prefixes: the tables for the layer graph's {} antichain states \
             would exceed {}",
            states.len(),
            fmt_bytes(MAX_TABLE_BYTES)
        );
        (PdStates::chain(profile), note)
    } else if states.graph() {
        let note = format!(
            "cut at the optimizer's {} antichain states of the layer graph (extensions.dag)",
            states.len()
        );
        (states, note)
    } else if profile.edges.is_some() {
        let note = format!(
            "cut at the chain's prefixes: the layer graph has more than {MAX_STATES} antichain \
             states (the optimizer would search them all), or its states never hold every layer \
             (a layer joined to no other)"
        );
        (states, note)
    } else {
        let note = "cut at the chain's prefixes (the instance has no layer graph, extensions.dag)";
        (states, note.to_string())
    }
}

impl Algorithm for PipeDream {
    fn name(&self) -> &'static str {
        "pipedream"
    }
    fn family(&self) -> Family {
        Family::Madpipe
    }
    fn description(&self) -> &'static str {
        "PipeDream's partitioning DP (straight; --set replicate=true for data-parallel stages) \
         with its rough memory check, judged at its valid 1F1B* period"
    }
    fn exact(&self) -> bool {
        false
    }
    fn params(&self) -> Vec<Param> {
        vec![
            Param::new(
                "replicate",
                Kind::Flag,
                "false",
                "let stages be replicated over data-parallel GPUs (--stages = GPUs used)",
            ),
            Param::new(
                "memory_check",
                Kind::Flag,
                "true",
                "the planner's rough memory check (weights and activations of a stage)",
            ),
            Param::new(
                "use_fewer_machines",
                Kind::Flag,
                "false",
                "let the pipeline leave GPUs unused when that is faster (the optimizer's \
                 --use_fewer_machines)",
            ),
            Param::new(
                "activation_compression_ratio",
                Kind::Real {
                    above: 0.0,
                    below: f64::INFINITY,
                    none: true,
                },
                "1",
                "divides the transfer times (none: transfers are ignored)",
            ),
        ]
    }
    fn compute(&self, inst: &Instance, ctx: &Context) -> Result<Solution, SolveError> {
        let replicate = ctx.settings.flag("replicate");
        let memory_check = ctx.settings.flag("memory_check");
        let activation_compression_ratio =
            ctx.settings.real("activation_compression_ratio").flatten();
        let use_fewer_machines = ctx.settings.flag("use_fewer_machines");
        let machines = machines(inst, ctx, replicate)?;
        let cfg = PdConfig {
            levels: levels(inst, machines),
            replicate,
            memory_check,
            memory: inst.usable_memory(),
            activation_compression_ratio,
            use_fewer_machines,
        };
        let profile = PdProfile::of(inst);
        let (states, cut_at) = search_states(&profile, &cfg);
        let bytes = table_bytes(states.len(), &cfg);
        if bytes > MAX_TABLE_BYTES {
            return Err(SolveError::Unsupported(Unsupported(format!(
                "PipeDream's DP tables for {} layers on {} would take {}, above the limit of \
                 {} (they grow as layers^2 x GPUs per node); a chain of fewer layers or fewer \
                 --stages needs less",
                profile.len(),
                describe_levels(&cfg.levels),
                fmt_bytes(bytes),
                fmt_bytes(MAX_TABLE_BYTES)
            ))));
        }
        let Some(part) = pipedream_partition_within(&states, &cfg, &ctx.deadline)? else {
            return Err(SolveError::Infeasible(format!(
                "PipeDream's memory check ((activations + weights) x ceil((N - machines so far) \
                 / replicas) <= {} per GPU) rejects every {} on {}; \
                 --set memory_check=false skips it",
                fmt_bytes(cfg.memory),
                if replicate {
                    "replicated pipeline"
                } else {
                    "straight pipeline"
                },
                describe_levels(&cfg.levels)
            )));
        };
        let mut plan = pd_plan(&part);
        // PipeDream's plan stands as it planned it. Where no 1F1B* period fits pipeplan's memory
        // model, the plan keeps `pd_plan`'s least period its loads allow and the evaluator says
        // it does not fit: the optimizer's answer is its own, the verdict the evaluator's.
        let period_note = match valid_period_of_plan(inst, &plan) {
            Ok(vp) => {
                plan.schedule = Schedule::one_f_one_b_star(Some(vp.period));
                format!(
                    "valid period under 1F1B* (the period of the plan): {:.6} ms, groups {:?} \
                     (the loads alone allow {:.6} ms)",
                    vp.period, vp.groups, vp.max_load
                )
            }
            Err(ValidPeriodError::Input(i)) => return Err(SolveError::Input(i)),
            Err(ValidPeriodError::Memory(m)) => format!(
                "no 1F1B* period of PipeDream's partition fits pipeplan's memory model: {m}; \
                 the plan runs at the least period its loads allow and does not fit"
            ),
        };
        let claimed = Claimed {
            objective: Some(Objective::new(ObjectiveKind::PipedreamStageTime, part.time)),
            period_ms: Some(part.time),
            throughput: (part.time > 0.0).then(|| inst.micro_batch() as f64 / part.time * 1e3),
            fits: memory_check.then_some(true),
            ..Claimed::default()
        };
        let mut sol = solution(self, inst, plan, claimed, Stats::new(Status::Heuristic));
        sol.notes.push(format!(
            "PipeDream's partition [{}] ({} pipeline searched on {}, its memory check {} \
             (the optimizer's --use_memory_constraint; off by default there), activation \
             transfers {}); it predicts {:.6} ms per micro-batch",
            describe(&part),
            if replicate { "replicated" } else { "straight" },
            describe_levels(&cfg.levels),
            if memory_check { "on" } else { "off" },
            match activation_compression_ratio {
                Some(r) => format!("divided by a compression ratio of {r}"),
                None => "ignored (activation_compression_ratio=none)".into(),
            },
            part.time
        ));
        let used: usize = part.stages.iter().map(|s| s.replicas).sum();
        if used < cfg.gpus() {
            sol.notes.push(format!(
                "the pipeline uses {used} of the {} GPUs searched (use_fewer_machines: more \
                 would be slower in PipeDream's model)",
                cfg.gpus()
            ));
        }
        sol.notes.push(if sol.plan.order.is_some() {
            format!("{cut_at}; the stages are ranges of the plan's layer order (plan.order)")
        } else {
            cut_at
        });
        sol.notes.push(period_note);
        sol.notes.push(format!(
            "PipeDream's stashed-data estimates per stage: {}",
            part.stages
                .iter()
                .map(|s| fmt_bytes(s.stashed))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        sol.notes.extend(async_schedule_note(inst));
        Ok(sol)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(compute: &[f64]) -> PdProfile {
        PdProfile {
            compute: compute.to_vec(),
            activation: vec![1e6; compute.len()],
            parameters: vec![1e6; compute.len()],
            output: vec![1e6; compute.len()],
            edges: None,
        }
    }

    fn cfg(machines: usize, replicate: bool) -> PdConfig {
        PdConfig {
            replicate,
            memory: 16e9,
            ..PdConfig::single(machines, 1e12)
        }
    }

    #[test]
    fn straight_is_min_max_with_exactly_n_stages() {
        let p = profile(&[4.0, 1.0, 1.0, 1.0, 1.0, 4.0]);
        let part = pipedream_partition(&PdStates::chain(&p), &cfg(3, false)).unwrap();
        let ranges: Vec<_> = part.stages.iter().map(|s| (s.first, s.last)).collect();
        assert_eq!(ranges, vec![(0, 0), (1, 4), (5, 5)]);
        assert!((part.time - 4.0).abs() < 1e-9);
    }

    #[test]
    fn replication_splits_a_heavy_layer() {
        // A heavy layer and a light one with many parameters (expensive to replicate): 3
        // replicas of the heavy layer (9 ms / 3 plus a little weight synchronisation), 1 light.
        let mut p = profile(&[9.0, 1.0]);
        p.parameters[1] = 1e10;
        let part = pipedream_partition(&PdStates::chain(&p), &cfg(4, true)).unwrap();
        assert_eq!(part.stages.len(), 2);
        assert_eq!(part.stages[0].replicas, 3);
        assert_eq!(part.stages[1].replicas, 1);
        assert!((part.time - 3.0).abs() < 1e-2, "{part:?}");
    }

    #[test]
    fn memory_check_can_reject_everything() {
        let p = profile(&[1.0, 1.0]);
        let c = PdConfig {
            memory_check: true,
            memory: 1e6,
            ..cfg(2, false)
        };
        assert_eq!(pipedream_partition(&PdStates::chain(&p), &c), None);
    }
}
