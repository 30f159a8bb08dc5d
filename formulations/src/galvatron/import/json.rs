//! Reading the engine's JSON files: objects (sorted, or in file order as the engine iterates
//! them) and the values its profiles key by sequence length or tensor-parallel degree.

use super::{field, num};
use crate::error::InputError;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

pub(super) fn read_json(path: &Path) -> Result<Map<String, Value>, InputError> {
    let text = crate::error::read_text(path)?;
    let v: Value = crate::error::parse_json(&text, "JSON object").map_err(|e| e.in_file(path))?;
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(field("", "expected a JSON object").in_file(path)),
    }
}

/// The top-level entries of a JSON object in file order (the engine iterates Python dicts, which
/// keep insertion order; `serde_json::Map` here is sorted).
struct Ordered(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

pub(super) fn read_ordered(path: &Path) -> Result<Vec<(String, Value)>, InputError> {
    let text = crate::error::read_text(path)?;
    let o: Ordered = crate::error::parse_json(&text, "JSON object").map_err(|e| e.in_file(path))?;
    Ok(o.0)
}

/// The entry of sequence length `seq` in profile entry `key`, or the entry itself where the
/// profile does not key it by length (older profiles). An entry keyed by lengths without `seq`
/// is refused naming the lengths it has (the engine reads it by that key: `KeyError`).
pub(super) fn by_seq<'a>(
    v: &'a Value,
    seq: &str,
    key: &str,
    path: &Path,
) -> Result<&'a Value, InputError> {
    if let Some(inner) = v.get(seq) {
        return Ok(inner);
    }
    // Lengths are keyed `512`, `512_512` or `[3136,784]`.
    let is_length = |k: &str| {
        k.bytes().any(|b| b.is_ascii_digit())
            && k.bytes()
                .all(|b| b.is_ascii_digit() || b"_[],".contains(&b))
    };
    let profiled: Vec<&str> = v
        .as_object()
        .map(|m| {
            m.keys()
                .map(String::as_str)
                .filter(|k| is_length(k))
                .collect()
        })
        .unwrap_or_default();
    if profiled.is_empty() {
        return Ok(v);
    }
    Err(field(
        key,
        format!(
            "no entry for sequence length {seq} (profiled: {}); the engine reads the entry of \
             the configured length",
            profiled.join(", ")
        ),
    )
    .in_file(path))
}

pub(super) fn tp_map(
    v: &Value,
    path: &Path,
    key: &str,
) -> Result<BTreeMap<String, f64>, InputError> {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| Ok((k.clone(), num(x, path, &format!("{key}.{k}"))?)))
            .collect(),
        x => Ok([("1".to_string(), num(x, path, key)?)].into()),
    }
}
