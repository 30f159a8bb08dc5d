//! The evaluator's free constants, fitted to measured training runs (`docs/calibration.md`).
//!
//! A [`Calibration`] holds six physical constants; the identity calibration (the default) leaves
//! the reference cost model of `docs/evaluator.md` unchanged. Each constant has one home:
//!
//! | constant | what it stands for | applied in |
//! |---|---|---|
//! | `reserved_memory` | bytes per GPU the framework holds before training (CUDA context, NCCL and cuBLAS buffers, allocator reserve) | [`Instance::usable_memory`], the evaluator's peak |
//! | `activation_factor` | stored activation bytes per profiled byte (allocator rounding, workspaces kept alive) | [`crate::Chain`] (`saved`) |
//! | `compute_factor` | compute time in training per profiled compute time | [`crate::Chain`] (`forward`, `backward`, measured degrees) |
//! | `p2p_efficiency` | fraction of a link's nominal bandwidth stage-to-stage transfers reach | [`Instance::group_bandwidth`] with [`Traffic::P2p`] |
//! | `collective_efficiency` | fraction of a link's nominal bandwidth all-reduces and other collectives reach | [`Instance::group_bandwidth`] with [`Traffic::Collective`] |
//! | `p2p_overlap` | fraction of a stage-to-stage transfer hidden behind compute (0: the stages wait for it, as with blocking sends) | [`crate::cost::cut_costs`] |
//!
//! An instance carries its calibration in the optional `calibration` field; `--calibration FILE`
//! sets it on every instance a command reads, so the algorithms plan with the same constants
//! the evaluator judges with.

use crate::error::InputError;
use crate::instance::{Instance, Traffic};
use crate::units;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version tag of a calibration file.
pub const FORMAT: &str = "pipeplan/calibration@2";

/// The version tag of files written before point-to-point and collective traffic had their own
/// efficiencies: still read, their `link_efficiency` setting both.
pub const FORMAT_V1: &str = "pipeplan/calibration@1";

/// The evaluator's free constants. [`Calibration::default`] is the identity.
///
/// Read from JSON, a `link_efficiency` (the single efficiency of `pipeplan/calibration@1`)
/// stands for both `p2p_efficiency` and `collective_efficiency` where those are not given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(from = "Fields")]
pub struct Calibration {
    /// Bytes per GPU held before training starts (added to every used GPU's peak).
    #[serde(with = "units::size")]
    pub reserved_memory: f64,
    /// Stored activation bytes per profiled byte.
    pub activation_factor: f64,
    /// Training compute time per profiled compute time.
    pub compute_factor: f64,
    /// Fraction of nominal link bandwidth stage-to-stage transfers reach.
    pub p2p_efficiency: f64,
    /// Fraction of nominal link bandwidth collectives (all-reduce, all-gather, all-to-all) reach.
    pub collective_efficiency: f64,
    /// Fraction of a stage-to-stage transfer overlapped with compute.
    pub p2p_overlap: f64,
}

/// The evaluator's free constants as written (`docs/calibration.md`): an absent one is the
/// identity's.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Calibration")]
struct Fields {
    /// Bytes per GPU held before training starts (added to every used GPU's peak).
    #[serde(default, with = "units::size")]
    #[schemars(with = "f64")]
    reserved_memory: f64,
    /// Stored activation bytes per profiled byte.
    #[serde(default = "one")]
    activation_factor: f64,
    /// Training compute time per profiled compute time.
    #[serde(default = "one")]
    compute_factor: f64,
    /// Fraction of nominal link bandwidth stage-to-stage transfers reach (default:
    /// `link_efficiency`, else 1).
    #[serde(default)]
    #[schemars(with = "f64")]
    p2p_efficiency: Option<f64>,
    /// Fraction of nominal link bandwidth collectives (all-reduce, all-gather, all-to-all) reach
    /// (default: `link_efficiency`, else 1).
    #[serde(default)]
    #[schemars(with = "f64")]
    collective_efficiency: Option<f64>,
    /// Fraction of a stage-to-stage transfer overlapped with compute.
    #[serde(default = "one")]
    p2p_overlap: f64,
    /// The single efficiency of every transfer in `pipeplan/calibration@1`: sets
    /// `p2p_efficiency` and `collective_efficiency` where they are not given.
    #[serde(default)]
    #[schemars(with = "f64")]
    link_efficiency: Option<f64>,
}

fn one() -> f64 {
    1.0
}

impl From<Fields> for Calibration {
    fn from(f: Fields) -> Calibration {
        let link = f.link_efficiency.unwrap_or(1.0);
        Calibration {
            reserved_memory: f.reserved_memory,
            activation_factor: f.activation_factor,
            compute_factor: f.compute_factor,
            p2p_efficiency: f.p2p_efficiency.unwrap_or(link),
            collective_efficiency: f.collective_efficiency.unwrap_or(link),
            p2p_overlap: f.p2p_overlap,
        }
    }
}

impl JsonSchema for Calibration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Calibration".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Fields::json_schema(generator)
    }
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration::IDENTITY
    }
}

/// Number of constants.
pub const N: usize = 6;

/// Names and admissible ranges of the constants, in the order of [`Calibration::to_vec`].
pub const CONSTANTS: [(&str, f64, f64); N] = [
    ("reserved_memory", 0.0, f64::INFINITY),
    ("activation_factor", 0.05, 20.0),
    ("compute_factor", 0.05, 20.0),
    ("p2p_efficiency", 0.001, 1.0),
    ("collective_efficiency", 0.001, 1.0),
    ("p2p_overlap", 0.0, 1.0),
];

impl Calibration {
    /// The reference model unchanged.
    pub const IDENTITY: Calibration = Calibration {
        reserved_memory: 0.0,
        activation_factor: 1.0,
        compute_factor: 1.0,
        p2p_efficiency: 1.0,
        collective_efficiency: 1.0,
        p2p_overlap: 1.0,
    };

    /// The constants in the order of [`CONSTANTS`].
    pub fn to_vec(&self) -> [f64; N] {
        [
            self.reserved_memory,
            self.activation_factor,
            self.compute_factor,
            self.p2p_efficiency,
            self.collective_efficiency,
            self.p2p_overlap,
        ]
    }

    /// The calibration with the constants `v` (order of [`CONSTANTS`]).
    pub fn from_vec(v: [f64; N]) -> Calibration {
        Calibration {
            reserved_memory: v[0],
            activation_factor: v[1],
            compute_factor: v[2],
            p2p_efficiency: v[3],
            collective_efficiency: v[4],
            p2p_overlap: v[5],
        }
    }

    /// The share of nominal bandwidth `traffic` reaches.
    pub fn efficiency(&self, traffic: Traffic) -> f64 {
        match traffic {
            Traffic::P2p => self.p2p_efficiency,
            Traffic::Collective => self.collective_efficiency,
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
    /// The GPU models of the runs they were fitted to (their instances' `cluster.gpu`); empty
    /// when not recorded. The constants are the hardware's and the runtime's: an instance
    /// profiled on another GPU model is warned of where the file is applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<String>,
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
            gpus: Vec::new(),
            fit,
        }
    }

    /// Why the constants may not hold for `inst`: it was profiled on a GPU model (`cluster.gpu`)
    /// the file was not fitted on. `None` when the models match or either is not recorded.
    pub fn foreign_gpu(&self, inst: &Instance) -> Option<String> {
        let gpu = inst.cluster.gpu.as_deref()?;
        if self.gpus.is_empty() || self.gpus.iter().any(|g| g == gpu) {
            return None;
        }
        Some(format!(
            "fitted to runs on {}; instance {} was profiled on {gpu} (cluster.gpu): its reserved \
             memory, factors and efficiencies may not hold there",
            self.gpus.join(", "),
            inst.name
        ))
    }

    /// Parses and checks a calibration file's text.
    pub fn from_json(text: &str) -> Result<CalibrationFile, InputError> {
        let doc: serde_json::Value = crate::error::parse_json(text, "calibration")?;
        match doc.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT | FORMAT_V1) => {}
            Some(other) => {
                return Err(InputError::field(
                    "format",
                    format!("expected \"{FORMAT}\" (or \"{FORMAT_V1}\"), found {other:?}"),
                ))
            }
            None => {
                return Err(InputError::field(
                    "format",
                    format!("missing: a calibration file starts with \"format\": \"{FORMAT}\""),
                ))
            }
        }
        let mut file: CalibrationFile = crate::error::parse_json(text, "calibration")?;
        file.constants.check("constants")?;
        // Read in the current form: written back, it says what it holds.
        file.format = FORMAT.to_string();
        Ok(file)
    }

    /// Reads and checks a calibration file; errors name the file.
    pub fn from_path(path: &Path) -> Result<CalibrationFile, InputError> {
        let text = crate::error::read_text(path)?;
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
    fn an_instance_on_another_gpu_model_is_named() {
        let mut f = CalibrationFile::new(Calibration::IDENTITY, serde_json::Value::Null);
        let mut inst = crate::testing::chain(&[1.0, 2.0], 2);
        inst.name = "x".into();
        inst.cluster.gpu = Some("A100-40".into());
        assert_eq!(
            f.foreign_gpu(&inst),
            None,
            "no models recorded: nothing to say"
        );
        f.gpus = vec!["GH-96".into()];
        let why = f.foreign_gpu(&inst).unwrap();
        assert!(
            why.starts_with("fitted to runs on GH-96; instance x was profiled on A100-40"),
            "{why}"
        );
        let back = CalibrationFile::from_json(&f.to_json()).unwrap();
        assert_eq!(back.gpus, f.gpus);
        f.gpus.push("A100-40".into());
        assert_eq!(f.foreign_gpu(&inst), None);
        inst.cluster.gpu = None;
        assert_eq!(f.foreign_gpu(&inst), None, "the instance's model unknown");
    }

    #[test]
    fn identity_round_trips_and_bad_constants_are_named() {
        let f = CalibrationFile::new(Calibration::IDENTITY, serde_json::Value::Null);
        let back = CalibrationFile::from_json(&f.to_json()).unwrap();
        assert_eq!(back, f);
        let bad =
            r#"{"format": "pipeplan/calibration@2", "constants": {"collective_efficiency": 1.5}}"#;
        let e = CalibrationFile::from_json(bad).unwrap_err().to_string();
        assert!(e.contains("constants.collective_efficiency"), "{e}");
        assert!(e.contains("between 0.001 and 1"), "{e}");
        let e = CalibrationFile::from_json(r#"{"constants": {}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("format"), "{e}");
        let e = CalibrationFile::from_json(
            r#"{"format": "pipeplan/calibration@2", "constants": {"link_eficiency": 0.5}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("link_eficiency"), "{e}");
        let units =
            r#"{"format": "pipeplan/calibration@2", "constants": {"reserved_memory": "4 GiB"}}"#;
        let c = CalibrationFile::from_json(units).unwrap().constants;
        assert_eq!(c.reserved_memory, 4.0 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(c.compute_factor, 1.0);
    }

    #[test]
    fn a_version_1_link_efficiency_sets_both_traffics() {
        let v1 = r#"{"format": "pipeplan/calibration@1",
                     "constants": {"link_efficiency": 0.25, "p2p_overlap": 0.5}}"#;
        let f = CalibrationFile::from_json(v1).unwrap();
        assert_eq!(f.constants.p2p_efficiency, 0.25);
        assert_eq!(f.constants.collective_efficiency, 0.25);
        assert_eq!(f.constants.p2p_overlap, 0.5);
        assert_eq!(f.format, FORMAT, "read in the current form");
        // Written back, it names the two efficiencies and reads the same.
        let text = f.to_json();
        assert!(!text.contains("link_efficiency"), "{text}");
        assert_eq!(CalibrationFile::from_json(&text).unwrap(), f);
        // An explicit efficiency wins over the former single one.
        let both = r#"{"format": "pipeplan/calibration@2",
                       "constants": {"link_efficiency": 0.25, "collective_efficiency": 0.5}}"#;
        let c = CalibrationFile::from_json(both).unwrap().constants;
        assert_eq!((c.p2p_efficiency, c.collective_efficiency), (0.25, 0.5));
        assert_eq!(c.efficiency(Traffic::Collective), 0.5);
    }
}
