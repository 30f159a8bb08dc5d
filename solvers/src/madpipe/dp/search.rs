//! The public entry points: one DP call at a fixed T^, and Algorithm 1's T^ search.

use crate::algorithm::SolveError;
use crate::deadline::Deadline;
use pipeplan_formulations::madpipe::MadChain;
use pipeplan_formulations::memory_limit;
use pipeplan_formulations::units::{fmt_bytes, fmt_ms};
use pipeplan_formulations::{InputError, Instance, Stage};

use super::*;

pub(super) fn check_input(
    inst: &Instance,
    gpus: usize,
    opts: &DpOptions,
) -> Result<(), SolveError> {
    inst.validate()?;
    if gpus == 0 {
        return Err(SolveError::Input(InputError::field(
            "gpus",
            "MadPipe needs at least 1 GPU (P - 1 normal + 1 special)",
        )));
    }
    if gpus > inst.cluster.gpus as usize {
        return Err(SolveError::Input(InputError::field(
            "gpus",
            format!(
                "{gpus} GPUs asked but the cluster has {}",
                inst.cluster.gpus
            ),
        )));
    }
    if opts.k_rounds == 0 {
        return Err(SolveError::Input(InputError::field(
            "--set rounds",
            "must be at least 1",
        )));
    }
    for (key, points) in [
        ("grid_t", opts.grid_t),
        ("grid_m", opts.grid_m),
        ("grid_v", opts.grid_v),
    ] {
        if points == 1 {
            return Err(SolveError::Input(InputError::field(
                format!("--set {key}"),
                "a grid needs at least 2 points (0 and the maximum), or 0 for exact values",
            )));
        }
    }
    Ok(())
}

/// One MadPipe-DP call at a fixed target period `t_hat` on `gpus` GPUs (P - 1 normal + 1
/// special), without the T^ search: `T(L, P-1, 0, 0, 0)` and its allocation (stages with
/// `gpu` 0; [`madpipe_dp`] numbers the GPUs).
///
/// Fails on a malformed instance, `gpus` outside `1..=cluster.gpus`, a grid of 1 point, a
/// non-positive or non-finite `t_hat`, or when the deadline passes ([`SolveError::TimeLimit`]).
pub fn madpipe_dp_at(
    inst: &Instance,
    gpus: usize,
    t_hat: f64,
    opts: &DpOptions,
    deadline: &Deadline,
) -> Result<DpRun, SolveError> {
    check_input(inst, gpus, opts)?;
    if !(t_hat.is_finite() && t_hat > 0.0) {
        return Err(SolveError::Input(InputError::field(
            "t_hat",
            format!("must be a positive time, found {t_hat}"),
        )));
    }
    let mc = MadChain::new(inst);
    Dp::new(&mc, t_hat, opts, Ranges::paper(&mc))
        .run((gpus - 1) as u32, deadline)
        .map_err(|_| deadline.error())
}

/// MadPipe's first phase: Algorithm 1's search for T^ (lb = U(0,L)/P, ub = U(0,L) + Sum C,
/// `opts.k_rounds` rounds), each round a MadPipe-DP call on `gpus` GPUs (P - 1 normal + 1
/// special), returning the allocation of least `max(T, T^)` (the earliest round on ties).
///
/// If no round fits memory, one extra round runs at the largest useful T^ (above every delay the
/// grids can produce, so every stage keeps the fewest micro-batches the model allows: memory is
/// non-decreasing in `g`); only if that fails too is the instance [`SolveError::Infeasible`],
/// with the binding constraint. When `deadline` passes, the best allocation so far is returned
/// with `timed_out` set, or [`SolveError::TimeLimit`] if there is none. Rounds run one after
/// the other (each depends on the previous); each DP runs in parallel on rayon's current pool,
/// with the same result for any number of threads.
///
/// Fails on a malformed instance, `gpus` outside `1..=cluster.gpus`, options out of range, or a
/// chain whose every load is 0 (no period to search).
pub fn madpipe_dp(
    inst: &Instance,
    gpus: usize,
    opts: &DpOptions,
    ceiling: Option<f64>,
    deadline: &Deadline,
) -> Result<DpResult, SolveError> {
    check_input(inst, gpus, opts)?;
    let full = MadChain::new(inst);
    let blocks = (opts.blocks > 0 && full.len() > opts.blocks)
        .then(|| block_ends(&full, opts.blocks))
        .flatten();
    let mc = match &blocks {
        Some(ends) => full.merged(ends),
        None => full.clone(),
    };
    let (total, comm) = totals(&mc);
    let ub0 = total + comm;
    if !(ub0 > 0.0 && ub0.is_finite()) {
        return Err(SolveError::Input(InputError::field(
            "model.layers",
            format!(
                "every layer takes 0 ms and nothing crosses a link (total load {ub0} ms): the \
                 period is 0 and T^ is undefined"
            ),
        )));
    }
    // A period some plan of the space already reaches bounds T^ and the useful special loads.
    let ceiling = ceiling.filter(|&c| c > 0.0 && c < ub0);
    let mut search = Search::new(&mc, opts, search_ranges(&mc, ceiling), gpus, deadline);
    let mut timed_out = search.bisect(total / gpus as f64, ceiling.unwrap_or(ub0));
    let mut extra_round = false;
    if search.best.is_none() && !timed_out {
        let t_max = ub0 + (mc.len() as f64 + 1.0) * Grid::new(opts.grid_v, ub0).step;
        match search.round(t_max) {
            Ok(Some(_)) => extra_round = true,
            Ok(None) => {
                let mut msg = infeasible_message(inst, &full, gpus, t_max);
                if let Some(ends) = &blocks {
                    msg.push_str(&format!(
                        " (the DP ran on the chain merged into {} blocks; --set blocks=0 runs it \
                         on every layer)",
                        ends.len()
                    ));
                }
                return Err(SolveError::Infeasible(msg));
            }
            Err(TimedOut) => timed_out = true,
        }
    }
    let Search {
        rounds,
        best,
        states,
        transitions,
        dominated,
        ..
    } = search;
    let Some((period, t_hat, alloc)) = best else {
        return Err(deadline.error());
    };
    let special_gpu = (gpus - 1) as u32;
    let (detail, memory) = place(alloc.stages, alloc.special_memory, blocks.as_deref(), gpus);
    let stages = detail
        .iter()
        .map(|s| Stage::single(s.first, s.last, s.gpu))
        .collect();
    Ok(DpResult {
        stages,
        detail,
        gpus,
        special_gpu,
        period,
        dp_period: alloc.period,
        t_hat,
        memory,
        special_load: alloc.special_load,
        rounds,
        states,
        transitions,
        dominated,
        timed_out,
        extra_round,
        blocks: blocks.map(|e| e.len()),
    })
}

/// The ranges of the DP's grids: the paper's, or, below a known `ceiling`, the special load up
/// to it and the delay up to [`DELAY_PERIODS`] times it.
fn search_ranges(mc: &MadChain, ceiling: Option<f64>) -> Ranges {
    let paper = Ranges::paper(mc);
    match ceiling {
        Some(c) => Ranges {
            load: paper.load.min(c),
            delay: paper.delay.min(DELAY_PERIODS * c),
        },
        None => paper,
    }
}

/// The allocation's stages on GPUs (normal stages on GPUs `0..gpus - 1` in chain order,
/// special ones on the last GPU), their layers back on the unmerged chain when the DP ran on
/// `blocks`, and the DP's memory per GPU (`special_memory` on the special one).
fn place(
    mut detail: Vec<DpStage>,
    special_memory: f64,
    blocks: Option<&[usize]>,
    gpus: usize,
) -> (Vec<DpStage>, Vec<f64>) {
    let special_gpu = (gpus - 1) as u32;
    if let Some(ends) = blocks {
        for s in &mut detail {
            s.first = if s.first == 0 {
                0
            } else {
                ends[s.first - 1] + 1
            };
            s.last = ends[s.last];
        }
    }
    let mut next = 0u32;
    let mut memory = vec![0.0; gpus];
    for s in &mut detail {
        if s.special {
            s.gpu = special_gpu;
        } else {
            s.gpu = next;
            memory[next as usize] = s.memory;
            next += 1;
        }
    }
    if detail.iter().any(|s| s.special) {
        memory[special_gpu as usize] = special_memory;
    }
    (detail, memory)
}

/// Multiples of the ceiling the delay grid spans when a ceiling is known: delays grow by about
/// one period per 1F1B* group, and the grid's step (about 1/6 of the ceiling with 51 points)
/// stays a fraction of the period whatever the chain's length, where the paper's range
/// `U(0,L) + Sum C` (every cut counted, though a plan crosses at most a few) makes it many periods
/// on long chains.
const DELAY_PERIODS: f64 = 8.0;

/// Ends of at most `max` blocks of consecutive layers (`None` when there is no load to balance):
/// each block closes at the cheapest cut (least link load) among the layers where its load lies
/// between `x / 2` and `3 x / 2`, `x = 2 U(0,L) / (max - 1)`, so that every block but the last
/// carries at least `U(0,L) / (max - 1)`.
fn block_ends(mc: &MadChain, max: usize) -> Option<Vec<usize>> {
    let n = mc.len();
    let total = mc.u(0, n);
    if max < 2 || !(total > 0.0 && total.is_finite()) {
        return None;
    }
    // The relative slack keeps the count within `max` despite rounding in the sums.
    let target = 2.0 * total / (max - 1) as f64 * (1.0 + 1e-9);
    let mut ends = Vec::new();
    let mut start = 0;
    while start < n {
        let mut load = 0.0;
        let mut cheapest: Option<(f64, usize)> = None;
        let mut i = start;
        loop {
            load += mc.u(i, i + 1);
            if i + 1 == n {
                ends.push(i);
                start = n;
                break;
            }
            if load >= target / 2.0 {
                let c = mc.c(i + 1);
                if cheapest.is_none_or(|(best, _)| c < best) {
                    cheapest = Some((c, i));
                }
                if load >= 1.5 * target {
                    let (_, e) = cheapest.expect("set at half the target");
                    ends.push(e);
                    start = e + 1;
                    break;
                }
            }
            i += 1;
        }
    }
    Some(ends)
}

/// The state of Algorithm 1 across rounds.
pub(super) struct Search<'a> {
    pub(super) mc: &'a MadChain,
    pub(super) opts: &'a DpOptions,
    pub(super) ranges: Ranges,
    pub(super) normal: u32,
    pub(super) deadline: &'a Deadline,
    pub(super) rounds: Vec<DpRound>,
    /// Least `max(T, T^)` so far, its T^ and allocation.
    pub(super) best: Option<(f64, f64, DpAllocation)>,
    pub(super) states: u64,
    pub(super) transitions: u64,
    pub(super) dominated: u64,
}

impl<'a> Search<'a> {
    /// The search on `gpus` GPUs (P - 1 normal + 1 special), before its first round.
    pub(super) fn new(
        mc: &'a MadChain,
        opts: &'a DpOptions,
        ranges: Ranges,
        gpus: usize,
        deadline: &'a Deadline,
    ) -> Self {
        Search {
            mc,
            opts,
            ranges,
            normal: (gpus - 1) as u32,
            deadline,
            rounds: Vec::new(),
            best: None,
            states: 0,
            transitions: 0,
            dominated: 0,
        }
    }

    /// Algorithm 1's `opts.k_rounds` rounds, bisecting T^ between `lb` and `ub` from `lb`.
    /// Returns whether the deadline stopped them.
    pub(super) fn bisect(&mut self, mut lb: f64, mut ub: f64) -> bool {
        let mut t_hat = lb;
        for _ in 0..self.opts.k_rounds {
            if self.deadline.passed() {
                return true;
            }
            let Ok(t_i) = self.round(t_hat) else {
                return true;
            };
            let t_i = t_i.unwrap_or(f64::INFINITY);
            lb = lb.max(t_i.min(t_hat));
            ub = ub.min(t_i.max(t_hat));
            t_hat = (lb + ub) / 2.0;
        }
        false
    }

    /// One MadPipe-DP call at `t_hat`: its period T, or `None` when no allocation fits.
    pub(super) fn round(&mut self, t_hat: f64) -> Result<Option<f64>, TimedOut> {
        if !(t_hat > 0.0 && t_hat.is_finite()) {
            // T^ = 0 only when U(0,L) = 0: no positive period to estimate memory at.
            self.rounds.push(DpRound {
                t_hat,
                outcome: RoundOutcome::Infeasible,
                states: 0,
            });
            return Ok(None);
        }
        let run =
            match Dp::new(self.mc, t_hat, self.opts, self.ranges).run(self.normal, self.deadline) {
                Ok(run) => run,
                Err(e) => {
                    self.rounds.push(DpRound {
                        t_hat,
                        outcome: RoundOutcome::TimedOut,
                        states: 0,
                    });
                    return Err(e);
                }
            };
        self.states += run.states;
        self.transitions += run.transitions;
        self.dominated += run.dominated;
        let t = run.allocation.as_ref().map(|a| a.period);
        self.rounds.push(DpRound {
            t_hat,
            outcome: t.map_or(RoundOutcome::Infeasible, RoundOutcome::Period),
            states: run.states,
        });
        if let Some(a) = run.allocation {
            let tilde = a.period.max(t_hat);
            if self.best.as_ref().is_none_or(|b| tilde < b.0) {
                self.best = Some((tilde, t_hat, a));
            }
        }
        Ok(t)
    }
}

/// Why no allocation fits at the most permissive T^: the heaviest layer, the model states as a
/// whole, or the fullest GPU of the least-memory contiguous split (one micro-batch per stage).
pub(super) fn infeasible_message(
    inst: &Instance,
    mc: &MadChain,
    gpus: usize,
    t_max: f64,
) -> String {
    let n = mc.len();
    let mem = mc.memory;
    let name = |i: usize| &inst.model.layers[i].name;
    let heaviest = (0..n)
        .max_by(|&a, &b| mc.states(a, a + 1).total_cmp(&mc.states(b, b + 1)))
        .unwrap_or(0);
    let need = mc.states(heaviest, heaviest + 1);
    let head = format!(
        "no allocation of the {n} layers on {gpus} GPUs fits {} per GPU in MadPipe's memory \
         model, even at T^ = {} where every stage keeps the fewest micro-batches",
        fmt_bytes(mem),
        fmt_ms(t_max)
    );
    if !memory_limit::fits(need, mem) {
        return format!(
            "{head}: layer {heaviest} ({}) needs {} for its model states alone ({} weight \
             copies); GPUs have {}",
            name(heaviest),
            fmt_bytes(need),
            mc.state_copies,
            fmt_bytes(mem)
        );
    }
    let states = mc.states(0, n);
    if !memory_limit::fits(states, gpus as f64 * mem) {
        return format!(
            "{head}: the model states alone need {} in total; {gpus} GPUs hold {}",
            fmt_bytes(states),
            fmt_bytes(gpus as f64 * mem)
        );
    }
    let p = gpus.min(n);
    let part = crate::minmax::min_max_partition(n, p, |_, k, l| mc.m(k, l, 1.0));
    let mut first = 0;
    let mut worst = (0, 0);
    for &e in &part.ends {
        if mc.m(first, e + 1, 1.0) >= part.value {
            worst = (first, e);
            break;
        }
        first = e + 1;
    }
    format!(
        "{head}: e.g. the least-memory contiguous split into {p} stages with one micro-batch each \
         still needs {} on one GPU (layers {}..={}); GPUs have {}",
        fmt_bytes(part.value),
        worst.0,
        worst.1,
        fmt_bytes(mem)
    )
}
