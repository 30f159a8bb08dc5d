//! One thread or several give the same result.

use super::model::*;
use super::*;
use pipeplan_formulations::testing::proptest_config;

#[test]
fn one_thread_or_four_give_the_same_result() {
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let (one, four) = (pool(1), pool(4));
    // ResNet-101 on 8 GPUs has levels large enough to run on the threads.
    for name in [
        "resnet101-1000px-b8-8gpu-8gib",
        "resnet50-1000px-b8-8gpu-16gib",
        "inception-v3-1000px-b8-8gpu-3gib",
    ] {
        let inst = shipped(name);
        let p = inst.cluster.gpus as usize;
        for opts in [DpOptions::default(), coarse()] {
            let a = one
                .install(|| madpipe_dp(&inst, p, &opts, None, &Deadline::none()))
                .unwrap();
            let b = four
                .install(|| madpipe_dp(&inst, p, &opts, None, &Deadline::none()))
                .unwrap();
            assert_eq!(a, b, "{name}");
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(30))]

    #[test]
    fn determinism_on_random_chains((inst, gpus, _t) in case()) {
        let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        let a = pool(1).install(|| madpipe_dp(&inst, gpus, &DpOptions::default(), None, &Deadline::none()));
        let b = pool(3).install(|| madpipe_dp(&inst, gpus, &DpOptions::default(), None, &Deadline::none()));
        prop_assert_eq!(a, b);
    }
}
