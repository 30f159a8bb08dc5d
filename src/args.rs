//! Turning command-line strings into values: time limits and `KEY=VALUE` settings.

use pipeplan_solvers::algorithm::parse_time_limit;
use std::time::Duration;

/// A parsed `--time-limit`: `None` means no limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeLimit(pub Option<Duration>);

/// Parses `--time-limit`: seconds as a bare number, a time with a unit, or `none`.
pub fn time_limit(s: &str) -> Result<TimeLimit, String> {
    parse_time_limit(s).map(TimeLimit)
}

/// Parses `KEY=VALUE`.
pub fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limits() {
        assert_eq!(
            time_limit("90").unwrap(),
            TimeLimit(Some(Duration::from_secs(90)))
        );
        assert_eq!(
            time_limit("500ms").unwrap(),
            TimeLimit(Some(Duration::from_millis(500)))
        );
        assert_eq!(time_limit("none").unwrap(), TimeLimit(None));
        assert!(time_limit("0").is_err());
        assert!(time_limit("-3").is_err());
        assert!(time_limit("soon").is_err());
    }

    #[test]
    fn settings() {
        assert_eq!(
            key_value("grid = 10").unwrap(),
            ("grid".to_string(), "10".to_string())
        );
        assert!(key_value("grid").is_err());
        assert!(key_value("=3").is_err());
    }
}
