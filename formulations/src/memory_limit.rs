//! Comparing a GPU's memory with its limit. The evaluator and the algorithms add bytes up in
//! different orders, so every comparison allows the same relative slack, [`SLACK`]: what an
//! algorithm finds within a limit is within it for the evaluator too (`docs/evaluator.md`,
//! `fits`).

/// Relative slack on a memory limit: absorbs the rounding of byte sums.
pub const SLACK: f64 = 1e-9;

/// The most memory that fits `limit`: `limit * (1 + SLACK)`.
pub fn cap(limit: f64) -> f64 {
    limit * (1.0 + SLACK)
}

/// Whether `used` bytes fit a limit of `limit` bytes.
pub fn fits(used: f64, limit: f64) -> bool {
    used <= cap(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_fits_and_a_kilobyte_more_does_not() {
        // 80 GiB: the slack is 86 bytes.
        let limit = 80.0 * 1024f64.powi(3);
        assert!(fits(limit, limit));
        assert!(fits(limit + 80.0, limit));
        assert!(!fits(limit + 1024.0, limit));
        assert!(fits(0.0, 0.0) && !fits(1.0, 0.0));
    }
}
