//! The valid period of a contiguous partition (`docs/madpipe.md`, MadPipe paper §4.1 and §5): the
//! least period `T`, at least the largest resource load, at which 1F1B* fits the memory of every
//! GPU.
//!
//! # Why it is exact
//!
//! 1F1B* groups the pipeline's resources (stages, and the links between them as extra stages:
//! `2P - 1` resources) from the last one backwards, opening a new group when the next load does
//! not fit in `T`. Every decision compares a sum of consecutive loads with `T`, so the groups,
//! hence the memory of every GPU, only change when `T` crosses such a sum: a *breakpoint*. They
//! are also monotone: raising `T` never raises any resource's group (next-fit packing with a
//! larger bin never uses more bins for any suffix; the `i`-th bin boundary only moves further),
//! so the memory of every GPU is non-increasing in `T`. The least feasible `T` is therefore the
//! least feasible breakpoint, found by binary search over the sorted breakpoints; beyond the sum
//! of every load, every resource is in group 1 and nothing changes any more.
//!
//! # Equal to the evaluator
//!
//! Loads and memory come from the evaluator's own cost functions ([`stage_costs`],
//! [`cut_costs`], [`pipeline_resources`]) and are added up in the same order, and the memory test
//! uses the evaluator's relative slack ([`memory_limit`]), so [`evaluate`](pipeplan_formulations::evaluate())
//! of the plan at the returned period fits, and does not fit below it (unless it is the largest
//! load). The breakpoint search compares sums with `T` exactly; the evaluator's 1F1B* accepts a
//! slack of 1e-12 (rounding of sums), which can only group at least as tightly, i.e. use at most
//! this memory.

use pipeplan_formulations::cost::{cut_costs, stage_costs};
use pipeplan_formulations::evaluate::pipeline_resources;
use pipeplan_formulations::instance::ScheduleKind;
use pipeplan_formulations::layer_order;
use pipeplan_formulations::memory_limit;
use pipeplan_formulations::one_f_one_b_star::{groups, Resource};
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::{InputError, Instance, Plan, Schedule};
use std::fmt;

/// The valid period of a contiguous plan and what 1F1B* keeps at it.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidPeriod {
    /// The least period at which 1F1B* fits every GPU (ms).
    pub period: f64,
    /// The largest load of any resource (ms): the period the loads alone allow.
    pub max_load: f64,
    /// 1F1B* group of every stage at `period` (as the evaluator builds it), i.e. the micro-batches
    /// each stage keeps in flight.
    pub groups: Vec<u32>,
    /// Memory of every GPU of the cluster at `period` (bytes, index = GPU id, 0 when unused).
    pub peak_memory: Vec<f64>,
    /// Breakpoints (distinct sums of consecutive loads, at least `max_load`) searched.
    pub breakpoints: usize,
}

impl ValidPeriod {
    /// Largest entry of `peak_memory`.
    pub fn max_memory(&self) -> f64 {
        self.peak_memory.iter().copied().fold(0.0, f64::max)
    }
}

/// No period fits: even at the largest useful period, where every stage keeps one micro-batch
/// in flight, some GPU needs more memory than it has.
#[derive(Debug, Clone, PartialEq)]
pub struct NoValidPeriod {
    /// The GPU that needs the most memory among those that do not fit.
    pub gpu: u32,
    /// Its stage.
    pub stage: usize,
    /// First layer of that stage.
    pub first: usize,
    /// Last layer of that stage (inclusive).
    pub last: usize,
    /// Bytes it needs with one micro-batch in flight (weights and optimizer states, one
    /// micro-batch of stored activations, communication buffers).
    pub needed: f64,
    /// Memory of each GPU (bytes).
    pub limit: f64,
    /// How many other GPUs do not fit either.
    pub others: usize,
}

impl fmt::Display for NoValidPeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layers = if self.first == self.last {
            format!("layer {}", self.first)
        } else {
            format!("layers {}-{}", self.first, self.last)
        };
        write!(
            f,
            "GPU {} needs at least {} ({layers} with 1 micro-batch in flight); GPUs have {}",
            self.gpu,
            fmt_bytes(self.needed),
            fmt_bytes(self.limit)
        )?;
        if self.others > 0 {
            write!(
                f,
                " ({} other GPU{} do{} not fit either)",
                self.others,
                if self.others == 1 { "" } else { "s" },
                if self.others == 1 { "es" } else { "" }
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for NoValidPeriod {}

/// Why a plan has no valid period.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValidPeriodError {
    /// The partition or the plan is malformed (it does not cover the chain, names too many
    /// GPUs, shares GPUs...), or no positive period exists (every operation takes 0 ms).
    #[error(transparent)]
    Input(#[from] InputError),
    /// No period fits the memory.
    #[error("{0}")]
    Memory(NoValidPeriod),
}

/// Checks a partition given by the last layer of every stage (stage `s` on GPU `s`, as
/// [`Plan::contiguous`] places it).
pub fn check_ends(inst: &Instance, ends: &[usize]) -> Result<(), InputError> {
    let l = inst.num_layers();
    if ends.is_empty() {
        return Err(InputError::field("ends", "no stage"));
    }
    if ends.len() > inst.cluster.gpus as usize {
        return Err(InputError::field(
            "ends",
            format!(
                "{} stages need {} GPUs (one per stage); the cluster has {}",
                ends.len(),
                ends.len(),
                inst.cluster.gpus
            ),
        ));
    }
    let mut next = 0;
    for (s, &e) in ends.iter().enumerate() {
        if e >= l {
            return Err(InputError::field(
                format!("ends[{s}]"),
                format!("layer {e} does not exist (the chain has {l} layers)"),
            ));
        }
        if e < next {
            return Err(InputError::field(
                format!("ends[{s}]"),
                format!(
                    "stage {s} would be empty: it must end at or after layer {next} (ends must \
                     increase)"
                ),
            ));
        }
        next = e + 1;
    }
    if next != l {
        return Err(InputError::field(
            "ends",
            format!(
                "layers {next}..{} are in no stage: the last stage must end at layer {}",
                l - 1,
                l - 1
            ),
        ));
    }
    Ok(())
}

/// The valid period of the contiguous partition whose stage `s` ends at layer `ends[s]`, on GPU
/// `s`. See the module docs.
pub fn valid_period(inst: &Instance, ends: &[usize]) -> Result<ValidPeriod, ValidPeriodError> {
    check_ends(inst, ends)?;
    valid_period_of_plan(
        inst,
        &Plan::contiguous(ends, Schedule::one_f_one_b_star(None)),
    )
}

/// The valid period of any plan whose stages do not share GPUs (device groups may hold several
/// replicas, as PipeDream's replicated stages). The plan's own schedule is ignored: it is judged
/// as an asynchronous 1F1B* pipeline.
pub fn valid_period_of_plan(inst: &Instance, plan: &Plan) -> Result<ValidPeriod, ValidPeriodError> {
    if plan.order.is_some() {
        let (inst, plan) = layer_order::resolve(inst, plan)?;
        return valid_period_of_plan(&inst, &plan);
    }
    let pipe = Pipeline::new(inst, plan)?;
    let max_load = pipe.loads.iter().copied().fold(0.0, f64::max);
    // Breakpoints: every sum of consecutive loads, accumulated from the last one backwards as
    // 1F1B* accumulates them, so that a comparison with a breakpoint is bitwise the same.
    let r = pipe.loads.len();
    let mut cands = Vec::with_capacity(r * (r + 1) / 2);
    for j in 0..r {
        let mut s = 0.0;
        for i in (0..=j).rev() {
            s += pipe.loads[i];
            if s >= max_load {
                cands.push(s);
            }
        }
    }
    cands.sort_by(f64::total_cmp);
    cands.dedup();
    // Largest useful period: every resource in group 1.
    if let Err(e) = pipe.fits_at(f64::INFINITY) {
        return Err(ValidPeriodError::Memory(e));
    }
    // Least feasible breakpoint (feasibility is monotone in the period).
    let (mut lo, mut hi) = (0usize, cands.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pipe.fits_at(cands[mid]).is_ok() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    // Beyond every breakpoint only infinity was tested; the sum of all loads is a breakpoint and
    // equivalent to it, so `lo` is in range.
    let period = cands.get(lo).or(cands.last()).copied().unwrap_or(0.0);
    // Loads are finite and non-negative, so the period is too; 0 when every load is 0.
    if period <= 0.0 {
        return Err(ValidPeriodError::Input(zero_work()));
    }
    let star = pipe.star(period).map_err(ValidPeriodError::Input)?;
    Ok(ValidPeriod {
        period,
        max_load,
        groups: star.groups,
        peak_memory: star.memory,
        breakpoints: cands.len(),
    })
}

/// What 1F1B* keeps at a given period, as the evaluator computes it.
#[derive(Debug, Clone, PartialEq)]
pub struct StarMemory {
    /// 1F1B* group of every stage.
    pub groups: Vec<u32>,
    /// Memory of every GPU of the cluster (bytes, index = GPU id).
    pub memory: Vec<f64>,
}

/// Memory of every GPU under 1F1B* at period `t` for a plan whose stages do not share GPUs.
/// Fails when `t` is not a positive time or is below the load of a stage or link.
pub fn star_memory(inst: &Instance, plan: &Plan, t: f64) -> Result<StarMemory, InputError> {
    if plan.order.is_some() {
        let (inst, plan) = layer_order::resolve(inst, plan)?;
        return star_memory(&inst, &plan, t);
    }
    Pipeline::new(inst, plan)?.star(t)
}

/// What a planner of the family notes when it plans the asynchronous 1F1B* schedule on an
/// instance whose default schedule is another.
pub fn async_schedule_note(inst: &Instance) -> Option<String> {
    (inst.training.schedule != ScheduleKind::Async).then(|| {
        format!(
            "asynchronous 1F1B* schedule (the MadPipe family's); the instance's default \
             schedule {} is not used",
            inst.training.schedule
        )
    })
}

fn zero_work() -> InputError {
    InputError::field(
        "model.layers",
        "every operation of this plan takes 0 ms (no compute time and nothing crosses a link), \
         so it has no least positive period",
    )
}

/// Memory parts of one stage, as the evaluator adds them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct StageMemory {
    /// Stored bytes per in-flight micro-batch.
    act: f64,
    /// Model states + communication buffers.
    fixed: f64,
    /// Re-materialization transient.
    transient: f64,
}

impl StageMemory {
    /// `(g x act) + (states + buffers) + transient`, the evaluator's order of additions.
    fn at(&self, g: u32) -> f64 {
        g as f64 * self.act + self.fixed + self.transient
    }
}

/// A plan's pipeline under the evaluator's cost model.
struct Pipeline<'a> {
    plan: &'a Plan,
    loads: Vec<f64>,
    resource_of_stage: Vec<usize>,
    stage_memory: Vec<StageMemory>,
    gpus: usize,
    limit: f64,
}

impl<'a> Pipeline<'a> {
    fn new(inst: &Instance, plan: &'a Plan) -> Result<Pipeline<'a>, InputError> {
        inst.validate()?;
        plan.check(inst)?;
        if !plan.is_contiguous() {
            return Err(InputError::field(
                "plan.stages",
                "stages share GPUs: 1F1B* and its valid period are defined for contiguous \
                 allocations (one stage per device group)",
            ));
        }
        let chain = inst.chain();
        let costs = stage_costs(inst, &chain, plan);
        let cuts = cut_costs(inst, &chain, plan);
        let (resources, resource_of_stage) = pipeline_resources(&costs, &cuts, ScheduleKind::Async);
        let loads: Vec<f64> = resources.iter().map(Resource::load).collect();
        if let Some(r) = loads.iter().position(|x| !x.is_finite()) {
            return Err(InputError::field(
                "model",
                format!(
                    "the load of resource {r} overflows ({}); times or sizes are too large",
                    loads[r]
                ),
            ));
        }
        let stage_memory = costs
            .iter()
            .map(|c| StageMemory {
                act: c.act_per_mb,
                fixed: c.states + c.buffers,
                transient: c.transient,
            })
            .collect();
        Ok(Pipeline {
            plan,
            loads,
            resource_of_stage,
            stage_memory,
            gpus: inst.cluster.gpus as usize,
            limit: inst.usable_memory(),
        })
    }

    /// Memory of every GPU when stage s keeps `group[s]` micro-batches.
    fn memory(&self, group: &[u32]) -> Vec<f64> {
        let mut mem = vec![0.0; self.gpus];
        for (s, st) in self.plan.stages.iter().enumerate() {
            for &g in &st.gpus {
                mem[g as usize] = self.stage_memory[s].at(group[s]);
            }
        }
        mem
    }

    /// Whether every GPU fits under 1F1B* grouped with the exact threshold `t` (a sum is in a
    /// group when it is at most `t`); on failure at `t = inf`, which GPU does not fit.
    fn fits_at(&self, t: f64) -> Result<(), NoValidPeriod> {
        let Some(res_group) = exact_groups(&self.loads, t) else {
            return Err(self.no_fit(&[]));
        };
        let group: Vec<u32> = self
            .resource_of_stage
            .iter()
            .map(|&r| res_group[r])
            .collect();
        let mem = self.memory(&group);
        if mem.iter().all(|&m| memory_limit::fits(m, self.limit)) {
            Ok(())
        } else {
            Err(self.no_fit(&mem))
        }
    }

    /// The worst GPU among those that do not fit with `mem` (meaningful at `t = inf`).
    fn no_fit(&self, mem: &[f64]) -> NoValidPeriod {
        let tol = memory_limit::cap(self.limit);
        let failing: Vec<u32> = (0..mem.len() as u32)
            .filter(|&g| mem[g as usize] > tol)
            .collect();
        let worst = failing
            .iter()
            .copied()
            .fold(None, |w: Option<u32>, g| match w {
                Some(b) if mem[b as usize] >= mem[g as usize] => Some(b),
                _ => Some(g),
            })
            .unwrap_or(0);
        let stage = self
            .plan
            .stages
            .iter()
            .position(|s| s.gpus.contains(&worst))
            .unwrap_or(0);
        let st = &self.plan.stages[stage];
        NoValidPeriod {
            gpu: worst,
            stage,
            first: st.first,
            last: st.last,
            needed: mem.get(worst as usize).copied().unwrap_or(0.0),
            limit: self.limit,
            others: failing.len().saturating_sub(1),
        }
    }

    /// Groups (the evaluator's 1F1B*, with its rounding slack) and memory at period `t`.
    fn star(&self, t: f64) -> Result<StarMemory, InputError> {
        if !(t.is_finite() && t > 0.0) {
            return Err(InputError::field(
                "period",
                format!("must be a positive time, found {t}"),
            ));
        }
        let res_group = groups(&self.loads, t).map_err(|r| {
            let what = match self.resource_of_stage.iter().position(|&x| x == r) {
                Some(s) => format!("stage {s}"),
                None => {
                    let s = self
                        .resource_of_stage
                        .iter()
                        .rposition(|&x| x < r)
                        .unwrap_or(0);
                    format!("the link after stage {s}")
                }
            };
            InputError::field(
                "period",
                format!(
                    "{t} ms is below the load {:.6} ms of {what}: the period must be at least \
                     the largest load, {:.6} ms",
                    self.loads[r],
                    self.loads.iter().copied().fold(0.0, f64::max)
                ),
            )
        })?;
        let group: Vec<u32> = self
            .resource_of_stage
            .iter()
            .map(|&r| res_group[r])
            .collect();
        let memory = self.memory(&group);
        Ok(StarMemory {
            groups: group,
            memory,
        })
    }
}

/// 1F1B* groups of `loads` with the exact threshold `t`: a resource joins the current group when
/// the group's sum plus its load is at most `t`. `None` when a load exceeds `t`.
pub fn exact_groups(loads: &[f64], t: f64) -> Option<Vec<u32>> {
    let mut group = vec![0u32; loads.len()];
    let mut g = 1;
    let mut sum = 0.0;
    for r in (0..loads.len()).rev() {
        if loads[r] > t {
            return None;
        }
        if sum + loads[r] > t {
            g += 1;
            sum = 0.0;
        }
        sum += loads[r];
        group[r] = g;
    }
    Some(group)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(memory: &str) -> Instance {
        inst_with(memory, "1 GiB")
    }

    fn inst_with(memory: &str, out: &str) -> Instance {
        Instance::from_json(&format!(
            r#"{{
          "format": "pipeplan/instance@1",
          "model": {{"batch": 1, "input": "1 GiB", "layers": [
            {{"name": "a", "forward": 1, "backward": 2, "weights": "1 GiB", "output": "{out}"}},
            {{"name": "b", "forward": 1, "backward": 2, "weights": "1 GiB", "output": "{out}"}},
            {{"name": "c", "forward": 1, "backward": 2, "weights": "1 GiB", "output": "{out}"}}]}},
          "cluster": {{"gpus": 3, "memory": "{memory}", "bandwidth": {{"intra_node": "1 TB/s"}}}}
        }}"#
        ))
        .unwrap()
    }

    #[test]
    fn bad_partitions_are_named() {
        let i = inst("100 GiB");
        let msg = |ends: &[usize]| valid_period(&i, ends).unwrap_err().to_string();
        assert!(msg(&[]).contains("ends: no stage"), "{}", msg(&[]));
        assert!(
            msg(&[0, 1]).contains("layers 2..2 are in no stage"),
            "{}",
            msg(&[0, 1])
        );
        assert!(msg(&[1, 1, 2]).contains("ends[1]"), "{}", msg(&[1, 1, 2]));
        assert!(
            msg(&[0, 5]).contains("layer 5 does not exist"),
            "{}",
            msg(&[0, 5])
        );
        let four = Instance {
            model: {
                let mut m = i.model.clone();
                m.layers.push(m.layers[0].clone());
                m
            },
            ..i.clone()
        };
        let e = valid_period(&four, &[0, 1, 2, 3]).unwrap_err().to_string();
        assert!(e.contains("4 stages need 4 GPUs"), "{e}");
    }

    #[test]
    fn period_below_the_load_is_named() {
        let i = inst("100 GiB");
        let plan = Plan::contiguous(&[0, 2], Schedule::one_f_one_b_star(None));
        let e = star_memory(&i, &plan, 5.0).unwrap_err().to_string();
        assert!(e.contains("below the load 6.000000 ms of stage 1"), "{e}");
        let e = star_memory(&i, &plan, -1.0).unwrap_err().to_string();
        assert!(e.contains("positive time"), "{e}");
    }

    #[test]
    fn memory_that_never_fits_names_the_gpu() {
        // Layers a | b c: GPU 1 holds 2 GiB of weights x 3 copies + 2 GiB of activations + 2 GiB
        // of buffers = 10 GiB at one micro-batch in flight.
        let i = inst("9 GiB");
        let e = valid_period(&i, &[0, 2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "GPU 1 needs at least 10.00 GiB (layers 1-2 with 1 micro-batch in flight); GPUs have \
             9.00 GiB"
        );
        assert!(matches!(
            e,
            ValidPeriodError::Memory(NoValidPeriod { gpu: 1, .. })
        ));
    }

    #[test]
    fn least_fitting_breakpoint() {
        // Stages of load 3 ms and links of ~1e-6 ms (1 KiB at 1 TB/s). GPU 0 holds 3 GiB of
        // states and 1 GiB (its input) per micro-batch, so it fits 5.5 GiB with at most 2 in
        // flight: at T = 6 + 1e-6 ms the groups are {S1 L1 S2}, {S0 L0}; below, S0 is in group 3
        // (groups {L1 S2}, {L0 S1}, {S0}).
        let i = inst_with("5.5 GiB", "1 KiB");
        let v = valid_period(&i, &[0, 1, 2]).unwrap();
        assert!(v.period > 6.0 && v.period < 6.0 + 1e-5, "{v:?}");
        assert_eq!(v.groups, vec![2, 1, 1]);
        let gib = 1024f64.powi(3);
        assert!(
            (v.peak_memory[0] - (5.0 * gib + 2048.0)).abs() < 1e-3,
            "{v:?}"
        );
        let roomy = valid_period(&inst_with("100 GiB", "1 KiB"), &[0, 1, 2]).unwrap();
        assert_eq!(roomy.period, roomy.max_load);
        assert_eq!(roomy.period, 3.0);
    }

    #[test]
    fn exact_groups_are_monotone() {
        let loads = [3.0, 2.0, 2.0, 4.0];
        assert_eq!(exact_groups(&loads, 4.0).unwrap(), vec![3, 2, 2, 1]);
        assert_eq!(exact_groups(&loads, 6.0).unwrap(), vec![2, 2, 1, 1]);
        assert_eq!(exact_groups(&loads, 11.0).unwrap(), vec![1, 1, 1, 1]);
        assert_eq!(exact_groups(&loads, 3.5), None);
    }
}
