//! Declared, typed algorithm settings (`--set key=value`).
//!
//! Each algorithm declares its [`Param`]s (name, kind, default, doc); the harness parses the
//! command line's strings against them once, before the solve, and rejects unknown keys and bad
//! values with one message format (`--set KEY: expected WHAT, found "VALUE"`). The algorithm
//! reads typed values from the resulting [`Settings`].

use crate::algorithm::SolveError;
use pipeplan_formulations::InputError;
use serde::Serialize;
use std::collections::BTreeMap;

/// What values a setting takes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Kind {
    /// `true` or `false`.
    Flag,
    /// An integer `>= min`.
    Count {
        /// Smallest value.
        min: u64,
    },
    /// A number of grid points: an integer `>= 2`, or `0` / `exact` for no rounding.
    Grid,
    /// Any integer (the algorithm checks the value against its own model).
    Integer,
    /// A real number strictly between `above` and `below`; also `none` when `none` is set.
    Real {
        /// Exclusive lower end.
        above: f64,
        /// Exclusive upper end.
        below: f64,
        /// Whether `none` is a value.
        none: bool,
    },
    /// One of the listed words.
    Choice {
        /// The words.
        values: &'static [&'static str],
    },
}

impl Kind {
    /// What the kind accepts, as the error message says it.
    pub fn expected(&self) -> String {
        match *self {
            Kind::Flag => "true or false".into(),
            Kind::Count { min } => format!("an integer >= {min}"),
            Kind::Grid => "an integer >= 2 (grid points), or 0 / exact".into(),
            Kind::Integer => "an integer".into(),
            Kind::Real { above, below, none } => {
                let range = match (above.is_finite(), below.is_finite()) {
                    (true, true) => format!("a number in ({above}, {below})"),
                    (true, false) if above == 0.0 => "a positive number".into(),
                    (true, false) => format!("a number > {above}"),
                    (false, true) => format!("a number < {below}"),
                    (false, false) => "a number".into(),
                };
                if none {
                    format!("{range} or none")
                } else {
                    range
                }
            }
            Kind::Choice { values } => words(values),
        }
    }

    fn parse(&self, text: &str) -> Option<Value> {
        let t = text.trim();
        match *self {
            Kind::Flag => match t {
                "true" => Some(Value::Flag(true)),
                "false" => Some(Value::Flag(false)),
                _ => None,
            },
            Kind::Count { min } => t
                .parse::<u64>()
                .ok()
                .filter(|&n| n >= min)
                .map(Value::Count),
            Kind::Grid if t.eq_ignore_ascii_case("exact") => Some(Value::Count(0)),
            Kind::Grid => t.parse::<u64>().ok().filter(|&n| n != 1).map(Value::Count),
            Kind::Integer => t.parse::<i64>().ok().map(Value::Integer),
            Kind::Real { none: true, .. } if t == "none" => Some(Value::Real(None)),
            Kind::Real { above, below, .. } => t
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > above && *v < below)
                .map(|v| Value::Real(Some(v))),
            Kind::Choice { values } => values.iter().find(|&&w| w == t).map(|&w| Value::Choice(w)),
        }
    }
}

/// "a, b or c".
fn words(values: &[&str]) -> String {
    match values {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// A declared setting.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Param {
    /// Key of `--set key=value`.
    pub name: &'static str,
    /// Values it takes.
    #[serde(flatten)]
    pub kind: Kind,
    /// Default as written on the command line; `None` when it depends on the instance or on
    /// other settings (the doc says how).
    pub default: Option<&'static str>,
    /// What it does.
    pub doc: &'static str,
    /// Values worth one result each when a study compares settings (`max-batch` runs one row
    /// per value by default); empty for most settings.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub variants: &'static [&'static str],
}

impl Param {
    /// A setting with a fixed default.
    pub const fn new(
        name: &'static str,
        kind: Kind,
        default: &'static str,
        doc: &'static str,
    ) -> Param {
        Param {
            name,
            kind,
            default: Some(default),
            doc,
            variants: &[],
        }
    }

    /// The same setting with the values a study compares by default.
    pub const fn with_variants(mut self, variants: &'static [&'static str]) -> Param {
        self.variants = variants;
        self
    }

    /// A setting whose default depends on the instance or on other settings.
    pub const fn derived(name: &'static str, kind: Kind, doc: &'static str) -> Param {
        Param {
            name,
            kind,
            default: None,
            doc,
            variants: &[],
        }
    }
}

/// A typed setting value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A flag.
    Flag(bool),
    /// A count or grid size (grid 0 = exact).
    Count(u64),
    /// An integer.
    Integer(i64),
    /// A real (`None`: `none`).
    Real(Option<f64>),
    /// A choice.
    Choice(&'static str),
}

/// The settings of one solve: every given value, checked against the declaration, and the
/// declared defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    given: BTreeMap<&'static str, Value>,
    defaults: BTreeMap<&'static str, Value>,
}

impl Settings {
    /// Checks `given` (`--set` keys and values) against `params`, the declaration of `algo`.
    pub fn parse(
        algo: &str,
        params: &[Param],
        given: &BTreeMap<String, String>,
    ) -> Result<Settings, SolveError> {
        let mut s = Settings::defaults(params);
        for (key, text) in given {
            let Some(p) = params.iter().find(|p| p.name == key) else {
                let names: Vec<&str> = params.iter().map(|p| p.name).collect();
                return Err(InputError::field(
                    format!("--set {key}"),
                    if names.is_empty() {
                        format!("{algo} takes no settings")
                    } else {
                        format!("unknown setting for {algo}; known: {}", names.join(", "))
                    },
                )
                .into());
            };
            let v = p.kind.parse(text).ok_or_else(|| {
                SolveError::from(InputError::field(
                    format!("--set {key}"),
                    format!("expected {}, found {text:?}", p.kind.expected()),
                ))
            })?;
            s.given.insert(p.name, v);
        }
        Ok(s)
    }

    /// Every declared default, nothing given.
    pub fn defaults(params: &[Param]) -> Settings {
        let defaults = params
            .iter()
            .filter_map(|p| Some((p.name, p.kind.parse(p.default?)?)))
            .collect();
        Settings {
            given: BTreeMap::new(),
            defaults,
        }
    }

    /// Whether `key` was given (not defaulted).
    pub fn given(&self, key: &str) -> bool {
        self.given.contains_key(key)
    }

    /// The value of `key`: given, else the declared default, else `None`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.given
            .get(key)
            .or_else(|| self.defaults.get(key))
            .copied()
    }

    /// A flag (`false` if undeclared).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some(Value::Flag(true)))
    }

    /// A count or grid size, if set or defaulted.
    pub fn count(&self, key: &str) -> Option<u64> {
        match self.get(key) {
            Some(Value::Count(n)) => Some(n),
            _ => None,
        }
    }

    /// An integer, if set or defaulted.
    pub fn integer(&self, key: &str) -> Option<i64> {
        match self.get(key) {
            Some(Value::Integer(n)) => Some(n),
            _ => None,
        }
    }

    /// A real, if set or defaulted (`Some(None)`: `none`).
    pub fn real(&self, key: &str) -> Option<Option<f64>> {
        match self.get(key) {
            Some(Value::Real(v)) => Some(v),
            _ => None,
        }
    }

    /// A choice, if set or defaulted.
    pub fn choice(&self, key: &str) -> Option<&'static str> {
        match self.get(key) {
            Some(Value::Choice(w)) => Some(w),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &[Param] = &[
        Param::new("fewer", Kind::Flag, "true", "use fewer stages"),
        Param::new("grid", Kind::Grid, "11", "grid points"),
        Param::new("n", Kind::Count { min: 1 }, "64", "a cap"),
        Param::new(
            "ratio",
            Kind::Real {
                above: 0.0,
                below: f64::INFINITY,
                none: true,
            },
            "1",
            "a ratio",
        ),
        Param::derived(
            "mode",
            Kind::Choice {
                values: &["ignore", "avoid", "include"],
            },
            "a mode",
        ),
    ];

    fn parse(pairs: &[(&str, &str)]) -> Result<Settings, String> {
        let given = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::parse("algo", PARAMS, &given).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_given_values_are_typed() {
        let s = parse(&[]).unwrap();
        assert!(s.flag("fewer"));
        assert_eq!(s.count("grid"), Some(11));
        assert_eq!(s.real("ratio"), Some(Some(1.0)));
        assert_eq!(s.choice("mode"), None);
        let s = parse(&[
            ("fewer", "false"),
            ("grid", "exact"),
            ("ratio", "none"),
            ("mode", "avoid"),
        ])
        .unwrap();
        assert!(!s.flag("fewer") && s.given("fewer"));
        assert_eq!(s.count("grid"), Some(0));
        assert_eq!(s.real("ratio"), Some(None));
        assert_eq!(s.choice("mode"), Some("avoid"));
    }

    #[test]
    fn one_message_format_for_every_bad_value() {
        let e = parse(&[("fewer", "yes")]).unwrap_err();
        assert_eq!(e, "--set fewer: expected true or false, found \"yes\"");
        let e = parse(&[("mode", "x")]).unwrap_err();
        assert!(e.contains("expected ignore, avoid or include"), "{e}");
        assert!(parse(&[("grid", "1")])
            .unwrap_err()
            .starts_with("--set grid"));
        assert!(parse(&[("n", "0")])
            .unwrap_err()
            .contains("an integer >= 1"));
        assert!(parse(&[("ratio", "-1")])
            .unwrap_err()
            .contains("positive number or none"));
        let e = parse(&[("bogus", "1")]).unwrap_err();
        assert!(
            e.starts_with("--set bogus: unknown setting for algo; known: fewer"),
            "{e}"
        );
        let none = Settings::parse("b", &[], &[("k".into(), "v".into())].into());
        assert!(none
            .unwrap_err()
            .to_string()
            .contains("b takes no settings"));
    }
}
