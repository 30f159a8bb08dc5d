//! What the DP returns: stages, rounds, allocations.

use pipeplan_formulations::Stage;

/// One stage of the DP's allocation, with what the DP assumed of it.
#[derive(Debug, Clone, PartialEq)]
pub struct DpStage {
    /// First layer (0-based, inclusive).
    pub first: usize,
    /// Last layer (inclusive).
    pub last: usize,
    /// GPU id (the special GPU is `gpus - 1`).
    pub gpu: u32,
    /// On the special GPU.
    pub special: bool,
    /// U(first..=last): forward + backward time per micro-batch (ms).
    pub load: f64,
    /// `g`: the 1F1B* group the DP placed the stage in (micro-batches in flight on a normal
    /// GPU; the special GPU is charged `g - 1`).
    pub group: u32,
    /// Memory the DP charged for the stage: `M(k,l,g)` (normal) or `M(k,l,g-1)` (special).
    pub memory: f64,
    /// The delay `V` (ms, as rounded by the DP) between the end of the stage's last forward and
    /// the start of its backward.
    pub delay: f64,
}

/// What one DP call of the T^ search gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoundOutcome {
    /// The DP's period `T` (max load of its allocation).
    Period(f64),
    /// No allocation fits memory at this T^.
    Infeasible,
    /// The deadline passed during this round.
    TimedOut,
}

/// One round of the T^ search.
#[derive(Debug, Clone, PartialEq)]
pub struct DpRound {
    /// The target period T^ (ms).
    pub t_hat: f64,
    /// The DP's answer.
    pub outcome: RoundOutcome,
    /// States stored by this round's DP.
    pub states: u64,
}

/// The allocation MadPipe-DP + Algorithm 1 chose, and what the DP claims of it.
#[derive(Debug, Clone, PartialEq)]
pub struct DpResult {
    /// The allocation as plan stages in chain order: contiguous layer ranges; normal stages on
    /// GPUs `0, 1, ...` in chain order, special stages all on GPU `gpus - 1`.
    pub stages: Vec<Stage>,
    /// The same stages with the DP's assumptions.
    pub detail: Vec<DpStage>,
    /// P: GPUs of the allocation (P - 1 normal + 1 special).
    pub gpus: usize,
    /// The special GPU's id (`gpus - 1`).
    pub special_gpu: u32,
    /// Algorithm 1's period estimate `max(T, T^)` (the paper's dashed line): at this period the
    /// allocation's loads fit (T) and its memory was estimated (T^).
    pub period: f64,
    /// `T`: the DP's period of the allocation, the largest load of a GPU or link as the DP counts
    /// it (the special GPU's load rounded up on its grid).
    pub dp_period: f64,
    /// The T^ at which the allocation was built.
    pub t_hat: f64,
    /// Claimed memory per GPU (bytes, index = GPU id, `gpus` entries; 0 for unused GPUs). Normal
    /// GPUs: `M(k,l,g)`. The special GPU: the DP's `m_P` (sum of `M(k,l,g-1)`, rounded up on its
    /// grid), the paper's lower estimate.
    pub memory: Vec<f64>,
    /// The special GPU's load as the DP counts it (rounded up), ms.
    pub special_load: f64,
    /// Every round of the T^ search, in order.
    pub rounds: Vec<DpRound>,
    /// States stored over all rounds.
    pub states: u64,
    /// Stage choices examined over all rounds (forward and backward passes).
    pub transitions: u64,
    /// States dropped because another state of their level dominates them.
    pub dominated: u64,
    /// The deadline cut the search short: this is the best allocation of the rounds completed.
    pub timed_out: bool,
    /// True when none of the K rounds fitted memory and the allocation comes from one extra
    /// round at the largest useful T^ (every stage in the first 1F1B* group).
    pub extra_round: bool,
    /// The number of blocks of consecutive layers the DP ran on, when the chain was longer than
    /// `--set blocks` (stages always map back to layers).
    pub blocks: Option<usize>,
}

/// The allocation of one DP call at a fixed T^.
#[derive(Debug, Clone, PartialEq)]
pub struct DpAllocation {
    /// The DP's period T of the allocation.
    pub period: f64,
    /// Stages in chain order.
    pub stages: Vec<DpStage>,
    /// The special GPU's load and memory as the DP counts them (rounded).
    pub special_load: f64,
    /// See `special_load`.
    pub special_memory: f64,
}

/// Result of [`madpipe_dp_at`](super::madpipe_dp_at).
#[derive(Debug, Clone, PartialEq)]
pub struct DpRun {
    /// The DP's best allocation, if one fits.
    pub allocation: Option<DpAllocation>,
    /// States stored (kept on their level's Pareto front).
    pub states: u64,
    /// Stage choices examined (forward and backward passes).
    pub transitions: u64,
    /// States dropped because another state of their level dominates them.
    pub dominated: u64,
}
