//! What an algorithm minimizes: a typed [`ObjectiveKind`] and its claimed value ([`Objective`]).
//! The harness measures gaps between values of the same kind only.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The objectives pipeplan's algorithms minimize, each with its name (as printed and stored)
/// and unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectiveKind {
    /// Largest stage compute (forward + backward) per micro-batch.
    MaxStageCompute,
    /// Largest stage parameter bytes.
    MaxStageParameters,
    /// Largest stage memory.
    MaxStageMemory,
    /// PipeDream's own estimate: largest stage (or link) time, replicas counted.
    PipedreamStageTime,
    /// Period of the valid asynchronous 1F1B* schedule.
    AsyncPeriod,
    /// DawnPiper's largest stage time, compute plus MemOpt overhead.
    MemoptStageTime,
    /// DawnPiper's largest stage or link time (`comm=include`).
    MemoptStageOrLinkTime,
    /// CAPTURE's predicted peak memory.
    PredictedPeakMemory,
    /// Galvatron's iteration time under its engine's cost model.
    EngineIterationTime,
}

impl ObjectiveKind {
    /// Every kind.
    pub const ALL: [ObjectiveKind; 9] = [
        ObjectiveKind::MaxStageCompute,
        ObjectiveKind::MaxStageParameters,
        ObjectiveKind::MaxStageMemory,
        ObjectiveKind::PipedreamStageTime,
        ObjectiveKind::AsyncPeriod,
        ObjectiveKind::MemoptStageTime,
        ObjectiveKind::MemoptStageOrLinkTime,
        ObjectiveKind::PredictedPeakMemory,
        ObjectiveKind::EngineIterationTime,
    ];

    /// The name printed in tables and stored in solutions.
    pub const fn name(self) -> &'static str {
        match self {
            ObjectiveKind::MaxStageCompute => "max stage compute",
            ObjectiveKind::MaxStageParameters => "max stage parameters",
            ObjectiveKind::MaxStageMemory => "max stage memory",
            ObjectiveKind::PipedreamStageTime => "pipedream max stage time",
            ObjectiveKind::AsyncPeriod => "async period",
            ObjectiveKind::MemoptStageTime => "max stage time (compute + MemOpt overhead)",
            ObjectiveKind::MemoptStageOrLinkTime => {
                "max stage or link time (compute + MemOpt overhead; link = 2 x cut bytes / \
                 bandwidth)"
            }
            ObjectiveKind::PredictedPeakMemory => "predicted peak memory",
            ObjectiveKind::EngineIterationTime => "iteration time (engine cost model)",
        }
    }

    /// Unit of the value: `ms` or `bytes`.
    pub const fn unit(self) -> &'static str {
        match self {
            ObjectiveKind::MaxStageParameters
            | ObjectiveKind::MaxStageMemory
            | ObjectiveKind::PredictedPeakMemory => "bytes",
            _ => "ms",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<ObjectiveKind> {
        ObjectiveKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for ObjectiveKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An objective value as the algorithm states it. Stored as `{name, value, unit}`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    /// What is minimized.
    pub kind: ObjectiveKind,
    /// Its value, in `kind.unit()`.
    pub value: f64,
}

impl Objective {
    /// `value` of `kind`.
    pub fn new(kind: ObjectiveKind, value: f64) -> Objective {
        Objective { kind, value }
    }
    /// Name of the kind.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
    /// Unit of the value.
    pub fn unit(&self) -> &'static str {
        self.kind.unit()
    }
}

/// The stored form of an [`Objective`].
#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Objective")]
struct Stored {
    /// What is minimized, e.g. "async period".
    name: String,
    /// Its value.
    value: f64,
    /// Unit of `value` ("ms" or "bytes").
    unit: String,
}

impl Serialize for Objective {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Stored {
            name: self.name().into(),
            value: self.value,
            unit: self.unit().into(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Objective {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Stored::deserialize(d)?;
        let kind = ObjectiveKind::from_name(&s.name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown objective {:?}", s.name)))?;
        if s.unit != kind.unit() {
            return Err(serde::de::Error::custom(format!(
                "objective {:?} is in {}, not {}",
                s.name,
                kind.unit(),
                s.unit
            )));
        }
        Ok(Objective::new(kind, s.value))
    }
}

impl JsonSchema for Objective {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Stored::schema_name()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Stored::json_schema(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_round_trip() {
        for k in ObjectiveKind::ALL {
            assert_eq!(ObjectiveKind::from_name(k.name()), Some(k));
            let o = Objective::new(k, 1.5);
            let text = serde_json::to_string(&o).unwrap();
            assert_eq!(serde_json::from_str::<Objective>(&text).unwrap(), o);
        }
        let bad = r#"{"name":"speed","value":1,"unit":"ms"}"#;
        assert!(serde_json::from_str::<Objective>(bad).is_err());
    }
}
