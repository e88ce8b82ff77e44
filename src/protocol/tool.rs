//! What a model is told about a tool, and the name of the one tool every round ends with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The name of the child-only report tool.
pub const REPORT_TOOL: &str = "ralph_report";

/// The name of the tool that writes a whole file (a listing in a turn's prose is a call of it).
pub const WRITE_FILE: &str = "write_file";
/// The name of the tool that reads a file (or a range of its lines).
pub const READ_FILE: &str = "read_file";
/// The name of the tool that lists a directory.
pub const LIST_DIR: &str = "list_dir";
/// The name of the tool that searches the workspace's files for a pattern.
pub const SEARCH: &str = "search";
/// The name of the tool that replaces one exact piece of a file.
pub const EDIT_FILE: &str = "edit_file";
/// The name of the tool that runs a shell command in the sandbox.
pub const RUN_COMMAND: &str = "run_command";
/// The name of the internal tool a function written out in a turn's prose is a call of: it
/// puts that function in place of the one definition of its name in the workspace. It is
/// never offered to the model.
pub const REPLACE_DEFINITION: &str = "replace_definition";

/// What a model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}
