//! Reading a tool's JSON arguments after the registry has validated them against the schema.
//!
//! The schema already guarantees types and required fields; these helpers still return a
//! `ToolError` rather than assuming, so a schema slip never becomes a panic. The `path`
//! argument of the file tools is read and resolved inside the workspace here, once.

use std::path::Path;

use serde_json::Value;

use super::path::{resolve, Access, Resolved};
use super::{ToolError, Writes};

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

/// An optional positive integer argument: `default` when absent, and never below 1.
pub(crate) fn positive(arguments: &Value, name: &str, default: usize) -> Result<usize, ToolError> {
    Ok(opt_u64(arguments, name)?.map_or(default, to_usize).max(1))
}

/// The required `path` argument, resolved inside the workspace under `root` for `access`.
pub(crate) fn path(arguments: &Value, root: &Path, access: Access) -> Result<Resolved, ToolError> {
    resolve(root, string(arguments, "path")?, access)
}

/// What a call that writes the file its `path` names can change: that file. A path that
/// does not resolve fails the call unwritten, but is answered `Anything` all the same.
pub(crate) fn written_file(arguments: &Value, root: &Path) -> Writes {
    match path(arguments, root, Access::Write) {
        Ok(target) => Writes::Files(vec![target.abs]),
        Err(_) => Writes::Anything,
    }
}

/// Clamps a `u64` into `usize`.
pub(crate) fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
