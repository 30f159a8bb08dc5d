//! The cost of a cut between neighbouring stages.

use crate::instance::{Chain, Instance, Traffic};
use crate::plan::Plan;

/// Costs of a cut between stage s and s+1 (zero when both stages run on the same device group).
#[derive(Debug, Clone, PartialEq)]
pub struct CutCost {
    /// Time of sending the activation forward (and, equally, the gradient back), ms.
    pub transfer: f64,
    /// True when the two stages' device groups differ, i.e. bytes cross a link.
    pub crosses: bool,
    /// The two GPUs identifying the link (first GPU of each group).
    pub link: (u32, u32),
    /// The part of each transfer both stages wait for instead of computing (ms, each way):
    /// `(1 - p2p_overlap)` of it; `transfer` keeps the overlapped part.
    pub blocking: f64,
}

/// Cost of every cut of a plan (`plan.stages.len() - 1` entries).
pub fn cut_costs(inst: &Instance, chain: &Chain, plan: &Plan) -> Vec<CutCost> {
    let overlap = inst.calibration().p2p_overlap;
    plan.stages
        .windows(2)
        .map(|w| {
            let (a, b) = (&w[0], &w[1]);
            let link = (a.gpus[0], b.gpus[0]);
            if a.same_group(b) {
                return CutCost {
                    transfer: 0.0,
                    crosses: false,
                    link,
                    blocking: 0.0,
                };
            }
            // The slowest pair decides; replicas exchange their shares in parallel.
            let mut all: Vec<u32> = a.gpus.clone();
            all.extend(&b.gpus);
            let bw = inst.group_bandwidth(&all, Traffic::P2p);
            let lanes = a.dp.min(b.dp) as f64;
            let full = chain.cut[a.last] / lanes / bw * 1e3;
            CutCost {
                transfer: full * overlap,
                crosses: true,
                link,
                blocking: full * (1.0 - overlap),
            }
        })
        .collect()
}
