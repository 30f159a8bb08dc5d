//! MadPipe-DP and its T^ search (MadPipe paper §4.2, Algorithm 1; `docs/madpipe.md`): an allocation
//! of the chain to P GPUs where P - 1 *normal* GPUs hold one contiguous stage each and one
//! *special* GPU may hold any number of stages.
//!
//! # The model (paper §4.2, in [`MadChain`](pipeplan_formulations::madpipe::MadChain)'s terms: 0-based layers, half-open ranges `k..l`)
//!
//! For a target period T^, `T(l, p, t_P, m_P, V)` is the least period of an allocation of layers
//! `0..l` on `p` normal GPUs plus the special one, which already carries load `t_P` and memory
//! `m_P`, when the delay between the end of `F_{l-1}` and the start of `B_{l-1}` is at least `V`.
//! The last stage `k..l` keeps `g = max(1, ceil((V + U(k,l)) / T^))` micro-batches in flight (the
//! 1F1B* group it would fall in), and the delay seen by layer `k - 1` is
//! `V' = (V (+) U(k,l)) (+) C(k)`, where `C(k)` is the load of the link carrying the cut before
//! layer `k` and `x (+) y` is `x + y` when `ceil(x/T^) = ceil((x+y)/T^)`, else
//! `T^ ceil(x/T^) + y` (a new 1F1B* group starts). Then
//!
//! - normal stage (needs `p >= 1` and `M(k,l,g) <= M`):
//!   `T_N = max(U(k,l), C(k), T(k, p-1, t_P, m_P, V'))`;
//! - special stage (needs `m_P' = m_P + M(k,l,g-1) <= M`, `t_P' = t_P + U(k,l)`):
//!   `T_S = max(t_P', C(k), T(k, p, t_P', m_P', V'))`;
//!
//! with the paper's base cases `T(0, p, t_P, m_P, V) = t_P` and, for `l > 0`,
//! `T(l, 0, t_P, m_P, V) = t_P + U(0,l)` if the whole rest fits on the special GPU as one stage
//! (`m_P + M(0,l,g-1) <= M`), else infeasible. The answer is `T(L, P-1, 0, 0, 0)`.
//!
//! The special GPU is charged `g - 1` activations per stage: the paper's deliberate
//! *under*-estimate (its true peak depends on how its stages interleave, which only the schedule
//! ILP decides). Every other quantity is an over-estimate or exact, see below.
//!
//! # Rounding (never under-estimates)
//!
//! `t_P`, `m_P` and `V` are snapped *up* onto uniform grids after every step: `t_P` on
//! `grid_t` points over `[0, U(0,L)]`, `m_P` on `grid_m` points over `[0, M]`, `V` on `grid_v`
//! points over `[0, U(0,L) + Sum C]` (the paper's 101, 11 and 51 points; values above the range
//! continue on the same step). Since `(+)`, `g` and the memories are non-decreasing in their
//! arguments, the DP's delays, in-flight counts, memories and special load are at least those of
//! the exact model for the same allocation. A grid of 0 points means exact values (no rounding).
//!
//! # Evaluation
//!
//! Only states reachable from the root are stored, level by level (`l` = layers left). A
//! forward pass discovers the states of each level from the levels above, in parallel over the
//! target levels, and tracks for each state the least bottleneck `a` of the paths reaching it
//! (the largest load already committed). Once a level is complete it keeps only its Pareto front:
//! a state with no more normal GPUs left and no less load, memory, delay and bottleneck than
//! another one cannot lead to a shorter period (`T` is monotone in each), so dropping it leaves
//! the period unchanged (a tie may resolve to another allocation of the same period). On
//! ResNet-101 at P = 8 the ten rounds then store 25 thousand states instead of 2.6 million, and
//! take about 70 ms instead of 5 s (benches/madpipe.rs). A backward pass then computes the
//! values, in parallel over the states of a level, skipping choices whose own load or a lower
//! bound (special load, busiest layer, average load) cannot beat the best so far. Levels with
//! little work run on the calling thread. Ties go to the first choice in a fixed order (the last
//! stage shortest first, normal before special), so the result does not depend on the threads.
//!
//! # Where this reads the paper
//!
//! - `C(k)` in `V'` is the cut *before* the stage (the paper writes `C(k)` in `V'` but `C(k-1)`,
//!   1-based, in `T_N` and `T_S`; only the cut before the stage is crossed there).
//! - `g >= 1` (a stage of zero load below zero delay still holds one micro-batch).
//! - Every stage boundary counts a link and buffers, even between two consecutive stages on the
//!   special GPU (the paper's formulas do; this only over-estimates).
//! - The T^ search adds one round at the largest useful T^ when its K rounds all fail, so that
//!   infeasibility is only reported when no T^ fits (see [`madpipe_dp`]).

mod kernel;
mod options;
mod result;
mod search;
mod state;
#[cfg(test)]
mod tests;

pub use options::DpOptions;
pub use result::{DpAllocation, DpResult, DpRound, DpRun, DpStage, RoundOutcome};
pub use search::{madpipe_dp, madpipe_dp_at};

use kernel::*;
use state::*;

/// Relative slack of the group count `ceil(x / T^)`: `x` within `GROUP_TOL T^` above a multiple
/// of T^ counts as that multiple (absorbs rounding of sums, like 1F1B*'s own tolerance).
const GROUP_TOL: f64 = 1e-12;
/// Relative slack of lower bounds (sums of loads taken in another order).
const LB_TOL: f64 = 1e-9;
/// Stage choices a level must examine before its pass runs on rayon's threads (below, the
/// synchronisation costs more than it saves).
const PAR_MIN_WORK: u64 = 8192;
