//! Physical quantities in instance files.
//!
//! Every quantity is stored as a plain `f64` in one canonical unit: **milliseconds** for times,
//! **bytes** for sizes and **bytes per second** for bandwidths. In a file, a quantity may be written
//! either as a bare JSON number in that canonical unit or as a string carrying its unit
//! (`"16 GiB"`, `"12 GB/s"`, `"3.5 ms"`). Decimal prefixes (k, M, G, T) are powers of 1000, binary
//! prefixes (Ki, Mi, Gi, Ti) powers of 1024; a lower-case `b` or `bit` means bits.

use serde::de::{self, Deserializer, Visitor};
use std::fmt;

/// The dimension of a quantity, which fixes its canonical unit and the unit strings accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Milliseconds.
    Time,
    /// Bytes.
    Size,
    /// Bytes per second.
    Bandwidth,
}

impl Dimension {
    /// Name of the canonical unit, for messages.
    pub fn canonical(self) -> &'static str {
        match self {
            Dimension::Time => "ms",
            Dimension::Size => "bytes",
            Dimension::Bandwidth => "bytes/s",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Dimension::Time => "a time",
            Dimension::Size => "a size",
            Dimension::Bandwidth => "a bandwidth",
        }
    }
}

/// Parses a quantity written with its unit, returning it in the canonical unit of `dim`.
///
/// ```
/// use pipeplan_formulations::units::{parse_quantity, Dimension};
/// assert_eq!(parse_quantity("16 GiB", Dimension::Size).unwrap(), 16.0 * 1024f64.powi(3));
/// assert_eq!(parse_quantity("12 GB/s", Dimension::Bandwidth).unwrap(), 12e9);
/// assert_eq!(parse_quantity("3.5 ms", Dimension::Time).unwrap(), 3.5);
/// assert_eq!(parse_quantity("2 s", Dimension::Time).unwrap(), 2000.0);
/// ```
pub fn parse_quantity(text: &str, dim: Dimension) -> Result<f64, String> {
    let s = text.trim();
    let split = s
        .char_indices()
        .find(|&(i, c)| {
            // The number ends at the first letter that is not an exponent marker of a number.
            c.is_alphabetic()
                && !((c == 'e' || c == 'E')
                    && s[i + 1..]
                        .chars()
                        .next()
                        .is_some_and(|n| n.is_ascii_digit() || n == '-' || n == '+'))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let num = num.trim();
    let unit = unit.trim();
    let value: f64 = num.parse().map_err(|_| {
        format!(
            "cannot read {:?} as {}: expected a number followed by a unit, e.g. {}",
            text,
            dim.what(),
            example(dim)
        )
    })?;
    if !value.is_finite() {
        return Err(format!("{text:?} is not a finite number"));
    }
    let factor = if unit.is_empty() {
        1.0
    } else {
        unit_factor(unit, dim).ok_or_else(|| {
            format!(
                "unknown unit {unit:?} for {} in {text:?}; use e.g. {}",
                dim.what(),
                example(dim)
            )
        })?
    };
    Ok(value * factor)
}

fn example(dim: Dimension) -> &'static str {
    match dim {
        Dimension::Time => "\"3.5 ms\", \"120 us\", \"2 s\"",
        Dimension::Size => "\"16 GiB\", \"512 MB\", \"4096 B\"",
        Dimension::Bandwidth => "\"12 GB/s\", \"100 Gbit/s\", \"25 GiB/s\"",
    }
}

/// Multiplier of a byte-like unit (`B`, `KiB`, `GB`, `Gbit`, ...) to bytes.
fn size_factor(unit: &str) -> Option<f64> {
    let (prefix, base) = if let Some(p) = unit.strip_suffix("bit") {
        (p, 0.125)
    } else if let Some(p) = unit.strip_suffix("bytes") {
        (p, 1.0)
    } else if let Some(p) = unit.strip_suffix('B') {
        (p, 1.0)
    } else if let Some(p) = unit.strip_suffix('b') {
        (p, 0.125)
    } else {
        return None;
    };
    let mult = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        _ => return None,
    };
    Some(mult * base)
}

fn unit_factor(unit: &str, dim: Dimension) -> Option<f64> {
    match dim {
        Dimension::Time => match unit {
            "ns" => Some(1e-6),
            "us" | "µs" => Some(1e-3),
            "ms" => Some(1.0),
            "s" => Some(1e3),
            "min" => Some(60e3),
            _ => None,
        },
        Dimension::Size => size_factor(unit),
        Dimension::Bandwidth => {
            if let Some(bits) = unit.strip_suffix("bps") {
                return size_factor(&format!("{bits}bit"));
            }
            let per = unit
                .strip_suffix("/s")
                .or_else(|| unit.strip_suffix("ps"))?;
            size_factor(per.trim())
        }
    }
}

struct QuantityVisitor(Dimension);

impl Visitor<'_> for QuantityVisitor {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{} as a number in {} or a string with a unit (e.g. {})",
            self.0.what(),
            self.0.canonical(),
            example(self.0)
        )
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        parse_quantity(v, self.0).map_err(E::custom)
    }
}

macro_rules! quantity_module {
    ($name:ident, $dim:expr, $doc:literal) => {
        #[doc = $doc]
        pub mod $name {
            use super::*;
            /// Deserializes a number or a string with unit.
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
                d.deserialize_any(QuantityVisitor($dim))
            }
            /// Serializes as a plain number in the canonical unit.
            pub fn serialize<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_f64(*v)
            }
            /// Same for optional quantities (`null` or absent means `None`).
            pub mod option {
                use super::*;
                /// Deserializes an optional quantity.
                pub fn deserialize<'de, D: Deserializer<'de>>(
                    d: D,
                ) -> Result<Option<f64>, D::Error> {
                    struct Opt;
                    impl<'de> Visitor<'de> for Opt {
                        type Value = Option<f64>;
                        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                            QuantityVisitor($dim).expecting(f)
                        }
                        fn visit_none<E: de::Error>(self) -> Result<Option<f64>, E> {
                            Ok(None)
                        }
                        fn visit_unit<E: de::Error>(self) -> Result<Option<f64>, E> {
                            Ok(None)
                        }
                        fn visit_some<D: Deserializer<'de>>(
                            self,
                            d: D,
                        ) -> Result<Option<f64>, D::Error> {
                            d.deserialize_any(QuantityVisitor($dim)).map(Some)
                        }
                    }
                    d.deserialize_option(Opt)
                }
                /// Serializes an optional quantity as a number or `null`.
                pub fn serialize<S: serde::Serializer>(
                    v: &Option<f64>,
                    s: S,
                ) -> Result<S::Ok, S::Error> {
                    match v {
                        Some(x) => s.serialize_f64(*x),
                        None => s.serialize_none(),
                    }
                }
            }
        }
    };
}

quantity_module!(
    time,
    Dimension::Time,
    "Serde adapter for times (canonical unit: ms)."
);
quantity_module!(
    size,
    Dimension::Size,
    "Serde adapter for sizes (canonical unit: bytes)."
);
quantity_module!(
    bandwidth,
    Dimension::Bandwidth,
    "Serde adapter for bandwidths (canonical unit: bytes/s)."
);

/// Formats a byte count for people (`9.31 GiB`); beyond 10,000 PiB, in scientific notation
/// (`1.000e300 PiB`), so that an absurd input prints as one readable number.
pub fn fmt_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else if v.abs() >= SCIENTIFIC {
        format!("{v:.3e} {}", units[i])
    } else {
        format!("{v:.2} {}", units[i])
    }
}

/// Formats a time in milliseconds for people (`1.500 s`, `12.000 ms`); beyond 10,000 s, in
/// scientific notation (`1.000e300 s`).
pub fn fmt_ms(ms: f64) -> String {
    let s = ms / 1000.0;
    if s.abs() >= SCIENTIFIC {
        format!("{s:.3e} s")
    } else if ms >= 1000.0 {
        format!("{s:.3} s")
    } else {
        format!("{ms:.3} ms")
    }
}

/// Formats a share as a percentage with `decimals` decimals (`0.125` -> `12.50%`). A share that
/// rounds to zero prints `0.00%`, without the sign of a rounding residue (a gap of -1e-16 is no
/// gap).
pub fn fmt_percent(share: f64, decimals: usize) -> String {
    let text = format!("{:.*}%", decimals, 100.0 * share);
    match text.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|c| matches!(c, b'0' | b'.' | b'%')) => rest.to_string(),
        _ => text,
    }
}

/// The magnitude from which [`fmt_bytes`] and [`fmt_ms`] switch to scientific notation: a
/// figure this large in the largest unit is an input error, not a plan to read digit by digit.
const SCIENTIFIC: f64 = 1e4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_drop_the_sign_of_a_rounded_zero() {
        assert_eq!(fmt_percent(0.125, 2), "12.50%");
        assert_eq!(fmt_percent(-0.125, 1), "-12.5%");
        assert_eq!(fmt_percent(-1e-16, 2), "0.00%");
        assert_eq!(fmt_percent(-0.00004, 2), "0.00%");
        assert_eq!(fmt_percent(-0.0001, 2), "-0.01%");
        assert_eq!(fmt_percent(0.0, 1), "0.0%");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_quantity("4096", Dimension::Size).unwrap(), 4096.0);
        assert_eq!(parse_quantity("1.5 KiB", Dimension::Size).unwrap(), 1536.0);
        assert_eq!(parse_quantity("2MB", Dimension::Size).unwrap(), 2e6);
        assert_eq!(parse_quantity("8 Gbit", Dimension::Size).unwrap(), 1e9);
        assert_eq!(parse_quantity("1e3 B", Dimension::Size).unwrap(), 1000.0);
        assert_eq!(parse_quantity("1.2e-3 GB", Dimension::Size).unwrap(), 1.2e6);
        assert!(parse_quantity("16 GiBs", Dimension::Size).is_err());
        assert!(parse_quantity("GiB", Dimension::Size).is_err());
        assert!(parse_quantity("NaN GiB", Dimension::Size).is_err());
        assert!(parse_quantity("inf", Dimension::Size).is_err());
    }

    #[test]
    fn bandwidths_and_times() {
        assert_eq!(
            parse_quantity("12 GB/s", Dimension::Bandwidth).unwrap(),
            12e9
        );
        assert_eq!(
            parse_quantity("100 Gbit/s", Dimension::Bandwidth).unwrap(),
            12.5e9
        );
        assert_eq!(
            parse_quantity("100 Gbps", Dimension::Bandwidth).unwrap(),
            12.5e9
        );
        assert_eq!(
            parse_quantity("1 GiBps", Dimension::Bandwidth).unwrap(),
            1024f64.powi(3)
        );
        assert!(parse_quantity("12 GB", Dimension::Bandwidth).is_err());
        assert_eq!(parse_quantity("120 us", Dimension::Time).unwrap(), 0.12);
        assert_eq!(parse_quantity("-3 ms", Dimension::Time).unwrap(), -3.0);
        let e = parse_quantity("3 hours", Dimension::Time).unwrap_err();
        assert!(e.contains("unknown unit \"hours\""), "{e}");
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_bytes(9.3 * 1024f64.powi(3)), "9.30 GiB");
        assert_eq!(fmt_bytes(12.0), "12 B");
        assert_eq!(fmt_ms(1500.0), "1.500 s");
        assert_eq!(fmt_ms(9_999_000.0), "9999.000 s");
        assert_eq!(fmt_ms(1e308), "1.000e305 s");
        assert_eq!(fmt_bytes(3.0 * 1024f64.powi(5)), "3.00 PiB");
        assert_eq!(fmt_bytes(1e300), "8.882e284 PiB");
        assert_eq!(fmt_ms(f64::INFINITY), "inf s");
    }
}
