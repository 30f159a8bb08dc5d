//! Proposition 1 on random contiguous allocations, and the least period against the valid period
//! (proptest; regressions in `proposition_1.proptest-regressions`).

use super::*;
use pipeplan_formulations::testing::proptest_config;

proptest! {
    #![proptest_config(proptest_config(24))]

    /// The ILP's least memory per GPU equals 1F1B*'s at the largest load, at every breakpoint
    /// up to the latency and between breakpoints; its pattern passes the evaluator.
    #[test]
    fn proposition_1((layers, ends, bw) in contiguous_case()) {
        let stages = contiguous(&ends);
        let inst = instance(&layers, stages.len() as u32, 1e15, bw);
        for t in breakpoints_and_midpoints(&inst, &stages) {
            let s = least_memory(&inst, &stages, t, &opts()).unwrap();
            // HiGHS may prove a least largest memory that the second solve (least sum under it)
            // then beats; the pattern is the better one and no bound is claimed.
            let refuted = s.notes.iter().any(|n| n.contains("that proof does not hold"));
            prop_assert_eq!(s.status, if refuted { Status::Feasible } else { Status::Optimal });
            prop_assert_eq!(s.goal, IlpGoal::LeastMemory);
            let ev = check_with_evaluator(&inst, &s);
            prop_assert!(ev.fits);
            let reference = star(&inst, &stages, t);
            for g in 0..stages.len() {
                prop_assert!(
                    close(s.memory[g], reference.peak_memory[g]),
                    "T = {} GPU {}: ILP {} vs 1F1B* {} (in flight {:?} vs {:?})",
                    t, g, s.memory[g], reference.peak_memory[g], s.in_flight, reference.in_flight
                );
            }
            prop_assert_eq!(&s.in_flight, &reference.in_flight);
            if refuted {
                prop_assert_eq!(s.bound, None);
            } else {
                prop_assert!(close(s.bound.unwrap(), s.max_memory), "T = {}: {:?} vs {}", t, s.bound, s.max_memory);
            }
        }
    }

    /// The least period under a memory limit equals 1F1B*'s valid period: the least breakpoint
    /// at which 1F1B* fits (exact, memory only changes at breakpoints).
    #[test]
    fn least_period_is_the_valid_period((layers, ends, bw) in contiguous_case(), frac in 0.0f64..1.0) {
        let stages = contiguous(&ends);
        let big = instance(&layers, stages.len() as u32, 1e15, bw);
        let periods = breakpoints(&big, &stages);
        let max = periods[0];
        // A memory limit between the least (at the latency) and the largest (at the load).
        let lo_mem = star(&big, &stages, *periods.last().unwrap()).max_memory;
        let hi_mem = star(&big, &stages, max).max_memory;
        let limit = lo_mem + frac * (hi_mem - lo_mem);
        let valid = periods
            .iter()
            .copied()
            .find(|&t| star(&big, &stages, t).max_memory <= limit * (1.0 + 1e-12))
            .expect("fits at the latency");
        let o = IlpOptions { memory_limit: Some(limit), period_tolerance: 1e-4, ..opts() };
        let s = least_period(&big, &stages, &o).unwrap();
        prop_assert_eq!(s.goal, IlpGoal::LeastPeriod);
        prop_assert_eq!(s.status, Status::Optimal);
        let (lo, hi) = s.period_bracket.unwrap();
        prop_assert!(lo <= valid * (1.0 + 1e-9) && valid <= hi * (1.0 + 1e-9), "{lo} {valid} {hi}");
        // The bisection stops once its bracket is within the period tolerance.
        prop_assert!(
            hi - valid <= o.period_tolerance * hi + 1e-9 && valid <= hi * (1.0 + 1e-9),
            "ILP {} vs valid period {}", hi, valid
        );
        prop_assert!(s.max_memory <= limit * (1.0 + 1e-9));
        check_with_evaluator(&big, &s);
    }
}

// ------------------------------------------------------------------------------------------------
// Non-contiguous allocations
