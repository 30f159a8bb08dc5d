//! Why no partition fits: the binding constraint named, from one micro-batch in flight per stage
//! (a layer no stage can hold, too few GPUs for stages that fit, or cuts whose buffers add up).

use super::oracle::Model;
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::Instance;

impl Model {
    /// Why no partition fits even with one micro-batch in flight per stage.
    pub(super) fn diagnose(&self, inst: &Instance, pmax: usize, exact: bool) -> String {
        let n = self.n();
        let limit = inst.usable_memory();
        // Least memory of any stage holding each layer, and the stage.
        let mut least = vec![(f64::INFINITY, 0usize, 0usize); n];
        let mut fits_from: Vec<Vec<usize>> = vec![Vec::new(); n];
        for l in 0..n {
            let (mut w, mut stored) = (0.0, 0.0);
            for e in l..n {
                let c = &self.chain;
                w += c.weights[e];
                stored += c.saved[e];
                let mut buffers = 0.0;
                if l > 0 {
                    buffers += 2.0 * c.cut[l - 1];
                }
                if e + 1 < n {
                    buffers += 2.0 * c.cut[e];
                }
                let mem = stored + (w * self.copies + buffers);
                if mem <= self.limit {
                    fits_from[l].push(e);
                }
                for x in &mut least[l..=e] {
                    if mem < x.0 {
                        *x = (mem, l, e);
                    }
                }
            }
        }
        let layers = |a: usize, b: usize| {
            if a == b {
                format!("layer {a}")
            } else {
                format!("layers {a}-{b}")
            }
        };
        if let Some(i) = (0..n)
            .filter(|&i| least[i].0 > self.limit)
            .max_by(|&a, &b| least[a].0.total_cmp(&least[b].0))
        {
            let (mem, a, b) = least[i];
            return format!(
                "layer {i} ({}) fits on no GPU: every stage holding it needs at least {} with 1 \
                 micro-batch in flight (the least: {}); GPUs have {}",
                inst.model.layers[i].name,
                fmt_bytes(mem),
                layers(a, b),
                fmt_bytes(limit)
            );
        }
        // Fewest stages that each fit with one micro-batch in flight.
        let mut need = vec![usize::MAX; n + 1];
        need[0] = 0;
        for l in 0..n {
            if need[l] == usize::MAX {
                continue;
            }
            for &e in &fits_from[l] {
                need[e + 1] = need[e + 1].min(need[l] + 1);
            }
        }
        if need[n] != usize::MAX {
            let how = if exact && need[n] < pmax {
                format!("exactly {pmax} stages were required (fewer=false)")
            } else {
                format!("at most {pmax} stages (GPUs) are available")
            };
            return format!(
                "the chain needs at least {} stages that each fit {} with 1 micro-batch in \
                 flight, but {how}",
                need[n],
                fmt_bytes(limit)
            );
        }
        let x = (0..=n).rev().find(|&x| need[x] != usize::MAX).unwrap_or(0);
        format!(
            "no split into stages that each fit {} with 1 micro-batch in flight exists: layers \
             0-{} can be split so, but no fitting stage continues from any such split through \
             layer {x} (communication buffers at the cuts add up)",
            fmt_bytes(limit),
            x.saturating_sub(1)
        )
    }
}
