//! Errors about input: files, JSON, fields. Every message names the field it is about.

use serde::de::DeserializeOwned;

/// A problem with an input file or value. Displayed as one line: `file: field: what is wrong`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    /// The file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// File path.
        path: String,
        /// OS message.
        message: String,
    },
    /// The text is not JSON of the expected shape.
    #[error("{}{message} (line {line}, column {column})", field_prefix(field))]
    Json {
        /// Path of the field, e.g. `model.layers[3].forward` (empty for the top level).
        field: String,
        /// What is wrong.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// A field has a value that breaks a rule of the format (no field: the document as a whole).
    #[error("{}{message}", field_prefix(field))]
    Field {
        /// Path of the field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// An error inside a named file.
    #[error("{file}: {inner}")]
    InFile {
        /// File path.
        file: String,
        /// The error.
        inner: Box<InputError>,
    },
}

/// `field: ` before an error's message; nothing when the error is about no one field (the
/// document as a whole: an empty path, or serde's `.` for the root).
fn field_prefix(field: &str) -> String {
    if field.is_empty() || field == "." {
        String::new()
    } else {
        format!("{field}: ")
    }
}

impl InputError {
    /// A field error.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError::Field {
            field: field.into(),
            message: message.into(),
        }
    }

    /// Path of the field the error is about (`None` for I/O errors), looking inside files.
    pub fn field_path(&self) -> Option<&str> {
        match self {
            InputError::Io { .. } => None,
            InputError::Json { field, .. } | InputError::Field { field, .. } => Some(field),
            InputError::InFile { inner, .. } => inner.field_path(),
        }
    }

    /// Whether the error is about a plan (its fields are named `plan...`) rather than an
    /// instance.
    pub fn is_about_plan(&self) -> bool {
        self.field_path().is_some_and(|f| f.starts_with("plan"))
    }

    /// Whether the error is about an instance's own fields (`model...`, `cluster...`,
    /// `extensions...`, ...), not a plan or an option.
    pub fn is_about_instance(&self) -> bool {
        self.field_path().is_some_and(|f| {
            crate::instance::Instance::FIELDS.iter().any(|t| {
                f.strip_prefix(t)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
            })
        })
    }

    /// Attaches a file name (unless the error already names one).
    pub fn in_file(self, path: &std::path::Path) -> Self {
        match self {
            e @ (InputError::Io { .. } | InputError::InFile { .. }) => e,
            e => InputError::InFile {
                file: path.display().to_string(),
                inner: Box::new(e),
            },
        }
    }
}

/// The token at a 1-based line and column when it is one of the non-finite spellings some tools
/// write (`NaN`, `Infinity`, `inf`), which JSON does not have.
fn non_json_number(text: &str, line: usize, column: usize) -> Option<&'static str> {
    let row = text.lines().nth(line.checked_sub(1)?)?;
    // serde_json's column points at or just after the first unexpected character.
    let start = column.saturating_sub(2).min(row.len());
    let rest = row.get(start..)?.trim_start_matches([' ', ':', '-', '+']);
    ["NaN", "nan", "Infinity", "inf", "Inf"]
        .into_iter()
        .find(|w| rest.starts_with(w))
}

/// The text of the file at `path`; an error names the file.
pub fn read_text(path: &std::path::Path) -> Result<String, InputError> {
    std::fs::read_to_string(path).map_err(|e| InputError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Parses JSON into `T`, reporting the path of the field that failed (`model.layers[3].forward`).
/// `what` names the document for messages about empty or truncated input.
pub fn parse_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, InputError> {
    if text.trim().is_empty() {
        return Err(InputError::field(
            "",
            format!("empty file: expected a JSON {what}"),
        ));
    }
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        // The path ends in `?` where the input stopped before naming a key (`{` cut short):
        // that segment names nothing, so the field is the one holding it.
        let field = e.path().to_string();
        let field = field
            .trim_end_matches('?')
            .trim_end_matches('.')
            .to_string();
        let inner = e.into_inner();
        let mut message = inner.to_string();
        // serde_json appends " at line X column Y"; we report them separately.
        if let Some(i) = message.rfind(" at line ") {
            message.truncate(i);
        }
        if inner.is_eof() {
            message = format!("truncated JSON: {message}");
        } else if let Some(word) = non_json_number(text, inner.line(), inner.column()) {
            message = format!(
                "{word} is not a JSON number; every quantity must be a finite number or a string \
                 with a unit"
            );
        }
        InputError::Json {
            field,
            message,
            line: inner.line(),
            column: inner.column(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_numbers_are_named() {
        for bad in ["NaN", "Infinity", "-Infinity", "inf"] {
            let text = format!("{{\n  \"x\": {bad}\n}}");
            let e = parse_json::<serde_json::Value>(&text, "instance").unwrap_err();
            assert!(e.to_string().contains("is not a JSON number"), "{bad}: {e}");
        }
        let e = parse_json::<serde_json::Value>("{\"x\": tru}", "instance").unwrap_err();
        assert!(!e.to_string().contains("JSON number"), "{e}");
    }

    #[test]
    fn input_cut_before_a_key_names_the_object_holding_it() {
        let field = |text: &str| match parse_json::<serde_json::Value>(text, "instance") {
            Err(InputError::Json { field, message, .. }) => {
                assert!(message.starts_with("truncated JSON"), "{message}");
                field
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(field("{"), "");
        assert_eq!(field("{\"model\": {"), "model");
        assert_eq!(field("{\"model\": {\"layers\": [{"), "model.layers[0]");
    }

    #[test]
    fn an_error_about_the_whole_document_names_no_field() {
        let e = parse_json::<serde_json::Value>(" \n", "instance").unwrap_err();
        let e = e.in_file(std::path::Path::new("a.json"));
        assert_eq!(
            e.to_string(),
            "a.json: empty file: expected a JSON instance"
        );
        assert_eq!(
            InputError::field("model.batch", "must be at least 1").to_string(),
            "model.batch: must be at least 1"
        );
    }

    #[test]
    fn an_error_is_about_an_instance_when_it_names_one_of_its_fields() {
        let about = |f: &str| InputError::field(f, "x").is_about_instance();
        for f in [
            "format",
            "model.batch",
            "model.layers[3].forward",
            "cluster",
            "extensions.graph.nodes[2].inputs[0]",
            "calibration.reserved_memory",
        ] {
            assert!(about(f), "{f}");
        }
        for f in ["--set rounds", "gpus", "plan.stages", "models", "t_hat", ""] {
            assert!(!about(f), "{f}");
        }
        let io = InputError::Io {
            path: "a.json".into(),
            message: "gone".into(),
        };
        assert!(!io.is_about_instance());
    }

    #[test]
    fn the_instance_fields_are_those_an_instance_serializes() {
        use crate::instance::{Cluster, Instance, Layer};
        let layer = Layer::new("l", 1.0, 2.0, 1.0, 1.0);
        let mut inst = Instance::new("i", 1, 1.0, vec![layer], Cluster::single_node(1, 1e9, 1e9));
        inst.source = "here".into();
        inst.extensions.insert("x".into(), serde_json::json!(1));
        inst.calibration = Some(crate::calibration::Calibration::IDENTITY);
        let v = serde_json::to_value(&inst).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut fields = crate::instance::Instance::FIELDS.to_vec();
        keys.sort_unstable();
        fields.sort_unstable();
        assert_eq!(keys, fields);
    }
}
