//! 1F1B*: the memory-optimal periodic pattern of a contiguous partition (MadPipe, §4.1).
//!
//! Resources (stages, and communications treated as stages) are grouped from the last one
//! backwards while the group's load fits in the period T. Within a group the forwards run in
//! sequence, then the backwards in reverse order; groups are chained so that all forwards form
//! one unbroken sequence. A resource in group g (group 1 holds the last resource) keeps exactly g
//! micro-batches in flight, which is the least any valid pattern of period T can keep
//! (Proposition 1 of the paper).

/// Tolerance on sums of durations compared with the period: a group fits when its load is at
/// most `T (1 + EPS) + EPS` ms. It only absorbs rounding (sums of loads taken in another order)
/// and must stay well below the simulator's tolerance (1e-9 x max(T, 1) ms): a looser one would
/// let 1F1B* build patterns the simulator rejects, e.g. accept a load of 2 ms at T = 2 - 3e-9.
pub const EPS: f64 = 1e-12;

/// One resource of the chain: a stage, or a communication between two stages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resource {
    /// Duration of its forward operation (ms).
    pub forward: f64,
    /// Duration of its backward operation (ms).
    pub backward: f64,
}

impl Resource {
    /// Load per period: forward + backward.
    pub fn load(&self) -> f64 {
        self.forward + self.backward
    }
}

/// The 1F1B* pattern of a chain of resources at a period.
#[derive(Debug, Clone, PartialEq)]
pub struct StarPattern {
    /// The period T (ms).
    pub period: f64,
    /// Group index of each resource (1 = the group of the last resource); also the number of
    /// micro-batches the resource keeps in flight.
    pub group: Vec<u32>,
    /// Start of each forward within the period.
    pub f_start: Vec<f64>,
    /// Index shift of each forward.
    pub f_shift: Vec<i64>,
    /// Start of each backward within the period.
    pub b_start: Vec<f64>,
    /// Index shift of each backward.
    pub b_shift: Vec<i64>,
}

impl StarPattern {
    /// Number of groups.
    pub fn groups(&self) -> u32 {
        self.group.first().copied().unwrap_or(0)
    }
}

/// Group index of every resource at period `t`, or the index of a resource whose own load
/// exceeds `t`.
pub fn groups(loads: &[f64], t: f64) -> Result<Vec<u32>, usize> {
    let mut group = vec![0u32; loads.len()];
    let mut g = 1;
    let mut sum = 0.0;
    for r in (0..loads.len()).rev() {
        if loads[r] > t * (1.0 + EPS) + EPS {
            return Err(r);
        }
        if sum + loads[r] > t * (1.0 + EPS) + EPS {
            g += 1;
            sum = 0.0;
        }
        sum += loads[r];
        group[r] = g;
    }
    Ok(group)
}

/// Brings a time into `[0, t)` and returns how many periods were removed.
fn wrap(x: f64, t: f64) -> (f64, i64) {
    let mut k = (x / t).floor();
    let mut r = x - k * t;
    // Rounding may leave r a hair below t or below 0.
    if r >= t - EPS * t.max(1.0) {
        r = 0.0;
        k += 1.0;
    }
    if r < 0.0 {
        r = 0.0;
    }
    (r, k as i64)
}

/// Builds the 1F1B* pattern of `resources` (in chain order) at period `t`.
///
/// Fails with the index of a resource whose load alone exceeds `t`. A period must be a positive,
/// finite time (starts lie in `[0, t)`): for any other `t`, including 0 when every load is 0, it
/// fails with the index of the first resource of largest load (an empty chain has nothing to
/// schedule and gets an empty pattern).
pub fn one_f_one_b_star(resources: &[Resource], t: f64) -> Result<StarPattern, usize> {
    let loads: Vec<f64> = resources.iter().map(Resource::load).collect();
    let positive = t.is_finite() && t > 0.0;
    if !positive && !loads.is_empty() {
        let worst = (0..loads.len()).fold(0, |w, r| if loads[r] > loads[w] { r } else { w });
        return Err(worst);
    }
    let group = groups(&loads, t)?;
    let n = resources.len();
    let mut f_abs = vec![0.0; n];
    let mut clock = 0.0;
    for r in 0..n {
        f_abs[r] = clock;
        clock += resources[r].forward;
    }
    let mut b_abs = vec![0.0; n];
    let mut r = n;
    while r > 0 {
        // The group ending at resource r - 1 spans [i, r).
        let g = group[r - 1];
        let mut i = r - 1;
        while i > 0 && group[i - 1] == g {
            i -= 1;
        }
        let mut tb = f_abs[r - 1] + resources[r - 1].forward;
        for j in (i..r).rev() {
            b_abs[j] = tb;
            tb += resources[j].backward;
        }
        r = i;
    }
    let mut p = StarPattern {
        period: t,
        group: group.clone(),
        f_start: vec![0.0; n],
        f_shift: vec![0; n],
        b_start: vec![0.0; n],
        b_shift: vec![0; n],
    };
    for r in 0..n {
        let (s, k) = wrap(f_abs[r], t);
        p.f_start[r] = s;
        p.f_shift[r] = k;
        let (s, k) = wrap(b_abs[r], t);
        p.b_start[r] = s;
        p.b_shift[r] = k + group[r] as i64 - 1;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_from_the_end() {
        // Loads 3, 2, 2, 4 at T = 4: {4} is group 1, {2,2} group 2, {3} group 3.
        assert_eq!(
            groups(&[3.0, 2.0, 2.0, 4.0], 4.0).unwrap(),
            vec![3, 2, 2, 1]
        );
        assert_eq!(
            groups(&[3.0, 2.0, 2.0, 4.0], 11.0).unwrap(),
            vec![1, 1, 1, 1]
        );
        assert_eq!(groups(&[3.0, 5.0], 4.0), Err(1));
    }

    #[test]
    fn pattern_shifts() {
        let res = [
            Resource {
                forward: 1.0,
                backward: 2.0,
            },
            Resource {
                forward: 1.0,
                backward: 2.0,
            },
        ];
        let p = one_f_one_b_star(&res, 3.0).unwrap();
        assert_eq!(p.group, vec![2, 1]);
        // F0 at 0, F1 at 1; group 1 = {1}: B1 at 2 (shift 0); group 2 = {0}: B0 right after F0,
        // at 1, with shift g - 1 = 1.
        assert_eq!(p.f_start, vec![0.0, 1.0]);
        assert_eq!(p.b_start, vec![1.0, 2.0]);
        assert_eq!(p.f_shift, vec![0, 0]);
        assert_eq!(p.b_shift, vec![1, 0]);
    }

    #[test]
    fn non_positive_or_non_finite_period_is_refused() {
        let zero = Resource {
            forward: 0.0,
            backward: 0.0,
        };
        let one = Resource {
            forward: 0.5,
            backward: 0.5,
        };
        // At T = 0 even all-zero loads are refused (wrapping starts into [0, 0) would divide by 0).
        assert_eq!(one_f_one_b_star(&[zero, zero], 0.0), Err(0));
        assert_eq!(one_f_one_b_star(&[zero, one, one], 0.0), Err(1));
        for t in [-1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(one_f_one_b_star(&[zero, one], t), Err(1), "T = {t}");
        }
        // Any positive period schedules zero loads: one group, starts and shifts 0.
        let p = one_f_one_b_star(&[zero, zero], 1e-6).unwrap();
        assert_eq!(p.group, vec![1, 1]);
        assert_eq!(p.f_start, vec![0.0, 0.0]);
        assert_eq!(p.b_start, vec![0.0, 0.0]);
        assert_eq!(p.b_shift, vec![0, 0]);
        // Nothing to schedule.
        assert_eq!(one_f_one_b_star(&[], 0.0).unwrap().group, Vec::<u32>::new());
    }
}
