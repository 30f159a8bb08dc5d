//! The model's memory is the evaluator's on contiguous allocations, the DP's claims bound the
//! evaluator, and the claims hold on the shipped instances.

use super::model::*;
use super::*;
use pipeplan_formulations::testing::proptest_config;

proptest! {
    #![proptest_config(proptest_config(100))]

    #[test]
    fn contiguous_memory_is_the_evaluators((inst, gpus, t_hat) in case()) {
        // Every contiguous partition on normal GPUs whose loads fit in T^: under 1F1B* at period
        // T^ the evaluator measures exactly the model's M(k, l, g) on every GPU.
        let mc = MadChain::new(&inst);
        for alloc in allocations(mc.len()) {
            if alloc.iter().any(|s| s.2) || alloc.len() > gpus {
                continue;
            }
            let fits_period = alloc.iter().all(|&(k, l, _)| mc.u(k, l) <= t_hat && mc.c(k) <= t_hat);
            if !fits_period {
                continue;
            }
            let Some(e) = exact_model(&mc, t_hat, alloc.len(), &alloc) else { continue };
            let ends: Vec<usize> = alloc.iter().map(|s| s.1 - 1).collect();
            let plan = Plan::contiguous(&ends, Schedule::one_f_one_b_star(Some(t_hat)));
            let ev = evaluate(&inst, &plan).unwrap();
            prop_assert_eq!(ev.valid_schedule, Some(true));
            for (s, m) in e.memory.iter().enumerate() {
                prop_assert!(close(ev.peak_memory[s], *m), "GPU {}: evaluator {} vs model {}", s, ev.peak_memory[s], m);
                prop_assert_eq!(ev.in_flight[s], e.group[s]);
            }
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(100))]

    #[test]
    fn contiguous_dp_claims_bound_the_evaluator((inst, gpus, t_hat) in case()) {
        // When the DP's allocation leaves the special GPU empty and fits its loads in T^, the
        // plan runs under 1F1B* at T^: the evaluator's memory is at most the claimed one on
        // every GPU (equal with exact values). Both for a fixed T^ and after the search.
        for opts in [DpOptions::default(), DpOptions::exact()] {
            let mut cases: Vec<(f64, Vec<(usize, f64)>)> = Vec::new();
            if let Some(a) = madpipe_dp_at(&inst, gpus, t_hat, &opts, &Deadline::none()).unwrap().allocation {
                if !a.stages.iter().any(|s| s.special) && a.period <= t_hat {
                    cases.push((t_hat, a.stages.iter().map(|s| (s.last, s.memory)).collect()));
                }
            }
            if let Ok(r) = madpipe_dp(&inst, gpus, &opts, None, &Deadline::none()) {
                if !r.detail.iter().any(|s| s.special) && r.dp_period <= r.t_hat {
                    let claims = r.stages.iter().map(|s| (s.last, r.memory[s.gpus[0] as usize]));
                    cases.push((r.t_hat, claims.collect()));
                }
            }
            for (t, stages) in cases {
                let ends: Vec<usize> = stages.iter().map(|s| s.0).collect();
                let plan = Plan::contiguous(&ends, Schedule::one_f_one_b_star(Some(t)));
                let ev = evaluate(&inst, &plan).unwrap();
                prop_assert!(ev.fits, "{:?}", ev.notes);
                for (g, &(_, claimed)) in stages.iter().enumerate() {
                    if opts == DpOptions::exact() {
                        prop_assert!(close(ev.peak_memory[g], claimed));
                    } else {
                        prop_assert!(ev.peak_memory[g] <= claimed * (1.0 + 1e-9));
                    }
                }
            }
        }
    }
}

#[test]
fn shipped_instances_claims_hold() {
    // Every GPU count on the small shipped CNNs: Algorithm 1 replayed, claims >= exact model.
    for name in [
        "resnet50-1000px-b8-4gpu-8gib",
        "resnet50-1000px-b8-8gpu-16gib",
        "inception-v3-1000px-b8-4gpu-6gib",
        "inception-v3-1000px-b8-8gpu-3gib",
    ] {
        let inst = shipped(name);
        for gpus in 1..=inst.cluster.gpus as usize {
            match madpipe_dp(&inst, gpus, &DpOptions::default(), None, &Deadline::none()) {
                Ok(r) => check_search(&inst, &r, &DpOptions::default()),
                Err(SolveError::Infeasible(msg)) => assert!(msg.contains("no allocation"), "{msg}"),
                Err(e) => panic!("{name} P={gpus}: {e}"),
            }
        }
    }
}
