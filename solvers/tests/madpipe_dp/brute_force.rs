//! Fixed T^: the DP against brute force over the model's allocations; no contiguous partition
//! beats it; rounding never under-estimates; the search follows Algorithm 1.

use super::model::*;
use super::*;
use pipeplan_formulations::testing::proptest_config;

proptest! {
    #![proptest_config(proptest_config(200))]

    #[test]
    fn exact_dp_equals_brute_force((inst, gpus, t_hat) in case()) {
        let mc = MadChain::new(&inst);
        let run = madpipe_dp_at(&inst, gpus, t_hat, &DpOptions::exact(), &Deadline::none()).unwrap();
        let brute = brute_force(&mc, t_hat, gpus - 1);
        match (&run.allocation, brute) {
            (None, None) => {}
            (Some(a), Some(b)) => {
                prop_assert!(close(a.period, b), "DP {} vs brute force {}", a.period, b);
                check_claims(&mc, t_hat, gpus - 1, a, true);
            }
            (a, b) => prop_assert!(false, "DP {:?} vs brute force {:?}", a.as_ref().map(|a| a.period), b),
        }
    }

    #[test]
    fn no_contiguous_partition_beats_the_dp((inst, gpus, t_hat) in case()) {
        // Contiguous partitions into at most P stages: all on normal GPUs (at most P - 1), or
        // exactly one of them on the special GPU.
        let mc = MadChain::new(&inst);
        let run = madpipe_dp_at(&inst, gpus, t_hat, &DpOptions::exact(), &Deadline::none()).unwrap();
        for alloc in allocations(mc.len()) {
            let special = alloc.iter().filter(|s| s.2).count();
            if alloc.len() > gpus || special > 1 || (special == 0 && alloc.len() == gpus) {
                continue;
            }
            if let Some(e) = exact_model(&mc, t_hat, gpus - 1, &alloc) {
                let dp = run.allocation.as_ref().map(|a| a.period);
                prop_assert!(dp.is_some_and(|d| d <= e.period * (1.0 + 1e-9)),
                    "DP {:?} worse than contiguous {:?} at {}", dp, alloc, e.period);
            }
        }
    }

    #[test]
    fn rounding_never_under_estimates((inst, gpus, t_hat) in case()) {
        let mc = MadChain::new(&inst);
        let exact = brute_force(&mc, t_hat, gpus - 1);
        for opts in [DpOptions::default(), coarse()] {
            let run = madpipe_dp_at(&inst, gpus, t_hat, &opts, &Deadline::none()).unwrap();
            if let Some(a) = &run.allocation {
                check_claims(&mc, t_hat, gpus - 1, a, false);
                // What fits on the grid fits exactly, and no better than the exact optimum.
                let e = exact.expect("a gridded allocation fits the exact model");
                prop_assert!(at_least(a.period, e));
            }
        }
    }

    #[test]
    fn the_search_follows_algorithm_1((inst, gpus, _t) in case()) {
        for opts in [DpOptions::exact(), DpOptions::default()] {
            match madpipe_dp(&inst, gpus, &opts, None, &Deadline::none()) {
                Ok(r) => check_search(&inst, &r, &opts),
                Err(SolveError::Infeasible(msg)) => {
                    // Then even the most permissive T^ has no allocation.
                    prop_assert!(msg.contains("no allocation"), "{msg}");
                }
                Err(e) => prop_assert!(false, "{e}"),
            }
        }
    }
}
