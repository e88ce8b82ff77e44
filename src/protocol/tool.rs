//! What a model is told about a tool, and the name of the one tool every round ends with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The name of the child-only report tool.
pub const REPORT_TOOL: &str = "ralph_report";

/// The name of the tool that writes a whole file (a listing in a turn's prose is a call of it).
pub const WRITE_FILE: &str = "write_file";

/// What a model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}
