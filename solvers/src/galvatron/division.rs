//! How the search divides the layers into pipeline stages: the engine's even division, its
//! memory-balanced greedy (`pp_division_memory_balanced`), and a time-balanced min-max
//! (`docs/galvatron.md`, "Search").

use super::engine::{Engine, Task};
use pipeplan_formulations::galvatron::cost::layer_memory;
use pipeplan_formulations::galvatron::{PipelineType, Strategy};

impl Engine<'_> {
    /// The engine's even division.
    pub fn even(&self, pp: usize) -> Vec<usize> {
        let total = self.types.len();
        let avg = total / pp;
        let mut v = vec![avg; pp - 1];
        v.push(total - avg * (pp - 1));
        v
    }

    /// The engine's `pp_division_memory_balanced`.
    pub fn memory_balanced(
        &self,
        pp: u32,
        t: &Task,
        mbsz: u64,
        st: &[Strategy],
    ) -> Result<Option<Vec<usize>>, String> {
        if pp == 1 {
            return Ok(Some(vec![self.types.len()]));
        }
        let Some(first) = st.iter().find(|s| s.pp == pp) else {
            return Ok(None);
        };
        let gpus = self.lt.settings.gpu_num();
        let mut call = self.memory_call(t, mbsz, 0);
        call.pipeline = PipelineType::Gpipe;
        call.min_tp = 1;
        call.vsp = false;
        let plain = Strategy {
            pp,
            tp: 1,
            dp: gpus / pp,
            consec: None,
            fsdp: None,
            cpt: false,
            sp: false,
        };
        let per_type: Vec<f64> = (0..self.lt.types.len())
            .map(|ty| layer_memory(self.lt, ty, &plain, &call).map(|m| m.total))
            .collect::<Result<_, _>>()?;
        let other = layer_memory(self.lt, 0, first, &call)?;
        let other = other
            .other
            .iter()
            .find(|(k, _)| *k == 1)
            .map(|(_, v)| v.clone());
        let Some(other) = other else { return Ok(None) };
        let layers: Vec<f64> = self.types.iter().map(|&ty| per_type[ty]).collect();
        let pp = pp as usize;
        let avg = (layers.iter().sum::<f64>() + other.iter().sum::<f64>()) / pp as f64;
        let mut d = vec![0i64; pp];
        let mut stage_mem = other.clone();
        let mut idx = 0;
        for i in 0..pp {
            while idx < layers.len() {
                if i < pp - 1 && avg - stage_mem[i] < 0.5 * layers[idx] {
                    break;
                }
                stage_mem[i] += layers[idx];
                idx += 1;
                d[i] += 1;
            }
        }
        // Counts and bounds may go negative here, and the engine then indexes its Python list
        // from the end; an index before its start is the engine's IndexError: no division.
        for i in 0..pp - 1 {
            let left: i64 = d[..i].iter().sum();
            let mut right: i64 = d[..=i].iter().sum();
            let mut cur = py_slice_sum(&layers, left, right) + other[i];
            while cur > avg * 1.3 {
                d[i] -= 1;
                d[i + 1] += 1;
                right -= 1;
                let Some(m) = py_index(&layers, right) else {
                    return Ok(None);
                };
                cur -= m;
            }
        }
        for i in 0..pp - 1 {
            while d[i] <= 0 {
                d[i] += 1;
                d[i + 1] -= 1;
            }
        }
        for i in (1..pp).rev() {
            while d[i] <= 0 {
                d[i] += 1;
                d[i - 1] -= 1;
            }
        }
        if d.iter().any(|&x| x <= 0) {
            return Ok(None);
        }
        Ok(Some(d.into_iter().map(|x| x as usize).collect()))
    }

    /// Time-balanced division: contiguous partition minimizing the largest stage sum of each
    /// layer's fastest strategy time (ties: the earliest cut).
    pub fn time_balanced(&self, pp: usize, intra: &[Vec<f64>]) -> Option<Vec<usize>> {
        if pp == 0 || pp > intra.len() {
            // No division of the layers into `pp` non-empty stages.
            return None;
        }
        let w: Vec<f64> = intra
            .iter()
            .map(|r| r.iter().copied().fold(f64::INFINITY, f64::min))
            .collect();
        let mut prefix = vec![0.0];
        for x in &w {
            prefix.push(prefix[prefix.len() - 1] + x);
        }
        let ends =
            crate::minmax::min_max_partition(w.len(), pp, |_, k, l| prefix[l] - prefix[k]).ends;
        let mut out = Vec::with_capacity(pp);
        let mut start = 0;
        for e in ends {
            out.push(e + 1 - start);
            start = e + 1;
        }
        Some(out)
    }
}

/// Python's `xs[i]`: a negative index counts from the end; `None` outside the list (where
/// Python raises `IndexError`).
fn py_index(xs: &[f64], i: i64) -> Option<f64> {
    let n = xs.len() as i64;
    let j = if i < 0 { i + n } else { i };
    (0..n).contains(&j).then(|| xs[j as usize])
}

/// Python's `sum(xs[a:b])`: negative bounds count from the end, bounds are clamped to the list,
/// and an empty slice sums to 0.
fn py_slice_sum(xs: &[f64], a: i64, b: i64) -> f64 {
    let n = xs.len() as i64;
    let bound = |i: i64| (if i < 0 { i + n } else { i }).clamp(0, n) as usize;
    let (a, b) = (bound(a), bound(b));
    if a < b {
        xs[a..b].iter().sum()
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::{py_index, py_slice_sum};

    #[test]
    fn python_indexing_counts_from_the_end_and_stops_at_the_start() {
        let xs = [1.0, 2.0, 4.0];
        assert_eq!(py_index(&xs, 0), Some(1.0));
        assert_eq!(py_index(&xs, -1), Some(4.0));
        assert_eq!(py_index(&xs, -3), Some(1.0));
        assert_eq!(py_index(&xs, -4), None);
        assert_eq!(py_index(&xs, 3), None);
        assert_eq!(py_slice_sum(&xs, 0, 2), 3.0);
        assert_eq!(py_slice_sum(&xs, 1, -1), 2.0);
        assert_eq!(py_slice_sum(&xs, -2, 9), 6.0);
        assert_eq!(py_slice_sum(&xs, 2, 1), 0.0);
        assert_eq!(py_slice_sum(&xs, -9, 1), 1.0);
    }
}
