//! Reading a tool's JSON arguments after the registry has validated them against the schema.
//!
//! The schema already guarantees types and required fields; these helpers still return a
//! `ToolError` rather than assuming, so a schema slip never becomes a panic.

use serde_json::Value;

use super::ToolError;

/// A required string argument.
pub(crate) fn string<'a>(arguments: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::new(format!("missing string argument `{name}`")))
}

/// An optional string argument.
pub(crate) fn opt_string<'a>(
    arguments: &'a Value,
    name: &str,
) -> Result<Option<&'a str>, ToolError> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError::new(format!(
            "argument `{name}` must be a string"
        ))),
    }
}

/// An optional non-negative integer argument.
pub(crate) fn opt_u64(arguments: &Value, name: &str) -> Result<Option<u64>, ToolError> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            ToolError::new(format!("argument `{name}` must be a non-negative integer"))
        }),
    }
}

/// Clamps a `u64` into `usize`.
pub(crate) fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
