//! Long chains: the DP on merged blocks, below a ceiling.

use super::*;
use pipeplan_formulations::testing::proptest_config;

proptest! {
    #![proptest_config(proptest_config(40))]

    /// With `blocks` below the chain's length the DP runs on at most that many blocks; its
    /// stages still tile the layers in order with the layers' own loads. A ceiling bounds T^.
    #[test]
    fn merged_blocks_map_back_to_layers((inst, gpus, _t) in case(), blocks in 2usize..5) {
        let n = inst.num_layers();
        let opts = DpOptions { blocks, ..DpOptions::default() };
        let Ok(r) = madpipe_dp(&inst, gpus, &opts, None, &Deadline::none()) else {
            return Ok(());
        };
        prop_assert_eq!(r.blocks.is_some(), n > blocks);
        if let Some(b) = r.blocks {
            prop_assert!(b <= blocks, "{} blocks for at most {}", b, blocks);
        }
        let mut order: Vec<_> = r.detail.iter().collect();
        order.sort_by_key(|s| s.first);
        let mut next = 0;
        for s in &order {
            prop_assert_eq!(s.first, next);
            prop_assert!(s.last >= s.first);
            next = s.last + 1;
        }
        prop_assert_eq!(next, n);
        let stages = r.detail.len();
        prop_assert!(r.blocks.is_none_or(|b| stages <= b));
        // Every stage's load is the layers' own: merging changes no sum.
        let mc = MadChain::new(&inst);
        for s in &r.detail {
            prop_assert!((s.load - mc.u(s.first, s.last + 1)).abs() <= 1e-9 * s.load.max(1.0));
        }
        // A ceiling at the found period: T^ never exceeds it.
        let c = r.period;
        if let Ok(below) = madpipe_dp(&inst, gpus, &opts, Some(c), &Deadline::none()) {
            for round in &below.rounds[..opts.k_rounds.min(below.rounds.len())] {
                prop_assert!(round.t_hat <= c, "T^ {} above the ceiling {}", round.t_hat, c);
            }
        }
    }
}
