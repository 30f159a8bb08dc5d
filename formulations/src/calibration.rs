//! The evaluator's free constants, fitted to measured training runs (`docs/calibration.md`).
//!
//! A [`Calibration`] holds five physical constants; the identity calibration (the default) leaves
//! the reference cost model of `docs/evaluator.md` unchanged. Each constant has one home:
//!
//! | constant | what it stands for | applied in |
//! |---|---|---|
//! | `reserved_memory` | bytes per GPU the framework holds before training (CUDA context, NCCL and cuBLAS buffers, allocator reserve) | [`Instance::usable_memory`], the evaluator's peak |
//! | `activation_factor` | stored activation bytes per profiled byte (allocator rounding, workspaces kept alive) | [`crate::Chain`] (`saved`) |
//! | `compute_factor` | compute time in training per profiled compute time | [`crate::Chain`] (`forward`, `backward`, measured degrees) |
//! | `link_efficiency` | fraction of a link's nominal bandwidth transfers and all-reduces reach | [`Instance::group_bandwidth`] |
//! | `p2p_overlap` | fraction of a stage-to-stage transfer hidden behind compute (0: the stages wait for it, as with blocking sends) | [`crate::evaluate::pipeline_resources`] |
//!
//! An instance carries its calibration in the optional `calibration` field; `--calibration FILE`
//! sets it on every instance a command reads, so the algorithms plan with the same constants
//! the evaluator judges with.

use crate::error::InputError;
use crate::instance::Instance;
use crate::units;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version tag of a calibration file.
pub const FORMAT: &str = "pipeplan/calibration@1";

/// The evaluator's free constants. [`Calibration::default`] is the identity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Bytes per GPU held before training starts (added to every used GPU's peak).
    #[serde(default, with = "units::size")]
    #[schemars(with = "f64")]
    pub reserved_memory: f64,
    /// Stored activation bytes per profiled byte.
    #[serde(default = "one")]
    pub activation_factor: f64,
    /// Training compute time per profiled compute time.
    #[serde(default = "one")]
    pub compute_factor: f64,
    /// Fraction of nominal link bandwidth reached.
    #[serde(default = "one")]
    pub link_efficiency: f64,
    /// Fraction of a stage-to-stage transfer overlapped with compute.
    #[serde(default = "one")]
    pub p2p_overlap: f64,
}

fn one() -> f64 {
    1.0
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration::IDENTITY
    }
}

/// Names and admissible ranges of the constants, in the order of [`Calibration::to_vec`].
pub const CONSTANTS: [(&str, f64, f64); 5] = [
    ("reserved_memory", 0.0, f64::INFINITY),
    ("activation_factor", 0.05, 20.0),
    ("compute_factor", 0.05, 20.0),
    ("link_efficiency", 0.001, 1.0),
    ("p2p_overlap", 0.0, 1.0),
];

impl Calibration {
    /// The reference model unchanged.
    pub const IDENTITY: Calibration = Calibration {
        reserved_memory: 0.0,
        activation_factor: 1.0,
        compute_factor: 1.0,
        link_efficiency: 1.0,
        p2p_overlap: 1.0,
    };

    /// The constants in the order of [`CONSTANTS`].
    pub fn to_vec(&self) -> [f64; 5] {
        [
            self.reserved_memory,
            self.activation_factor,
            self.compute_factor,
            self.link_efficiency,
            self.p2p_overlap,
        ]
    }

    /// The calibration with the constants `v` (order of [`CONSTANTS`]).
    pub fn from_vec(v: [f64; 5]) -> Calibration {
        Calibration {
            reserved_memory: v[0],
            activation_factor: v[1],
            compute_factor: v[2],
            link_efficiency: v[3],
            p2p_overlap: v[4],
        }
    }

    /// Whether this is the identity (no constant changes the reference model).
    pub fn is_identity(&self) -> bool {
        *self == Calibration::IDENTITY
    }

    /// Checks every constant against its range, naming the field (`prefix.name`).
    pub fn check(&self, prefix: &str) -> Result<(), InputError> {
        for ((name, lo, hi), v) in CONSTANTS.iter().zip(self.to_vec()) {
            if !v.is_finite() || v < *lo || v > *hi {
                let range = if hi.is_finite() {
                    format!("between {lo} and {hi}")
                } else {
                    format!("at least {lo}")
                };
                return Err(InputError::field(
                    format!("{prefix}.{name}"),
                    format!("must be {range}, found {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// A calibration file: the constants and how they were obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationFile {
    /// Must be [`FORMAT`].
    pub format: String,
    /// The constants.
    pub constants: Calibration,
    /// How they were fitted (runs, optimizer, errors before and after); informational.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub fit: serde_json::Value,
}

impl CalibrationFile {
    /// A file holding `constants` with the fit report `fit`.
    pub fn new(constants: Calibration, fit: serde_json::Value) -> CalibrationFile {
        CalibrationFile {
            format: FORMAT.to_string(),
            constants,
            fit,
        }
    }

    /// Parses and checks a calibration file's text.
    pub fn from_json(text: &str) -> Result<CalibrationFile, InputError> {
        let doc: serde_json::Value = crate::error::parse_json(text, "calibration")?;
        match doc.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(InputError::field(
                    "format",
                    format!("expected \"{FORMAT}\", found {other:?}"),
                ))
            }
            None => {
                return Err(InputError::field(
                    "format",
                    format!("missing: a calibration file starts with \"format\": \"{FORMAT}\""),
                ))
            }
        }
        let file: CalibrationFile = crate::error::parse_json(text, "calibration")?;
        file.constants.check("constants")?;
        Ok(file)
    }

    /// Reads and checks a calibration file; errors name the file.
    pub fn from_path(path: &Path) -> Result<CalibrationFile, InputError> {
        let text = std::fs::read_to_string(path).map_err(|e| InputError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        CalibrationFile::from_json(&text).map_err(|e| e.in_file(path))
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("calibrations serialize")
    }
}

impl Instance {
    /// The instance's calibration (the identity when it has none).
    pub fn calibration(&self) -> Calibration {
        self.calibration.unwrap_or_default()
    }

    /// The same instance under `cal` (none when `cal` is the identity).
    pub fn calibrated(&self, cal: &Calibration) -> Instance {
        let mut i = self.clone();
        i.calibration = (!cal.is_identity()).then_some(*cal);
        i
    }

    /// Memory per GPU left for training: the GPU's memory minus the calibration's reserve.
    pub fn usable_memory(&self) -> f64 {
        (self.cluster.memory - self.calibration().reserved_memory).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_round_trips_and_bad_constants_are_named() {
        let f = CalibrationFile::new(Calibration::IDENTITY, serde_json::Value::Null);
        let back = CalibrationFile::from_json(&f.to_json()).unwrap();
        assert_eq!(back, f);
        let bad = r#"{"format": "pipeplan/calibration@1", "constants": {"link_efficiency": 1.5}}"#;
        let e = CalibrationFile::from_json(bad).unwrap_err().to_string();
        assert!(e.contains("constants.link_efficiency"), "{e}");
        assert!(e.contains("between 0.001 and 1"), "{e}");
        let e = CalibrationFile::from_json(r#"{"constants": {}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("format"), "{e}");
        let units =
            r#"{"format": "pipeplan/calibration@1", "constants": {"reserved_memory": "4 GiB"}}"#;
        let c = CalibrationFile::from_json(units).unwrap().constants;
        assert_eq!(c.reserved_memory, 4.0 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(c.compute_factor, 1.0);
    }
}
