//! `edit_file`: replace exact text in a workspace file.
//!
//! The file is read through `confined` like `read_file` reads it, with the same size bound
//! checked before a byte is read, and written back through the same confined open as
//! `write_file`. `old` must occur exactly `count` times (default 1), compared byte for byte; any other
//! number of matches changes nothing and says how many there were, so the child can widen
//! `old` or fix `count`. Same confinement and read-only rule as `write_file`.

use serde_json::{json, Value};

use super::args;
use super::confined::Refusal;
use super::path::{open_root, Access};
use super::read_file::{is_binary, refused, MAX_FILE_BYTES};
use super::write_file::{allow_workspace_change, written};
use super::{Tool, ToolContext, ToolError, ToolSpec};

#[derive(Debug, Clone, Copy, Default)]
pub struct EditFile;

impl Tool for EditFile {
    /// The file its `path` names.
    fn writes(&self, arguments: &Value, root: &std::path::Path) -> super::Writes {
        args::written_file(arguments, root)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".into(),
            description: "Replace the exact text `old` with `new` in a workspace file. `old` must match exactly `count` times (default 1), whitespace included; otherwise nothing changes and the error says how many matches there were. Include enough surrounding lines in `old` to make it unique.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "file path relative to the workspace root"},
                    "old": {"type": "string", "minLength": 1, "description": "exact text to replace"},
                    "new": {"type": "string", "description": "replacement text"},
                    "count": {"type": "integer", "minimum": 1, "description": "how many occurrences to replace (default 1)"}
                },
                "required": ["path", "old", "new"],
                "additionalProperties": false
            }),
        }
    }

    fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let old = args::string(arguments, "old")?;
        let new = args::string(arguments, "new")?;
        let count = args::opt_u64(arguments, "count")?.map_or(1, args::to_usize);
        if old.is_empty() {
            return Err(ToolError::new(
                "`old` is empty; give the exact text to replace",
            ));
        }
        if old == new {
            return Err(ToolError::new(
                "`old` and `new` are the same; nothing would change",
            ));
        }
        let target = args::path(arguments, ctx.root, Access::Write)?;
        let root = open_root(ctx.root)?;
        let bytes = root
            .read(&target.path, MAX_FILE_BYTES)
            .map_err(|e| match e {
                Refusal::NotFound => ToolError::new(format!(
                    "cannot read '{}': it does not exist; use write_file to create a new file",
                    target.rel
                )),
                other => refused(&target.rel, &other),
            })?;
        if is_binary(&bytes) {
            return Err(ToolError::new(format!(
                "'{}' is a binary file; edit_file only changes text",
                target.rel
            )));
        }
        let text = String::from_utf8_lossy(&bytes);
        let found = text.matches(old).count();
        if found != count {
            return Err(ToolError::new(mismatch(
                &target.rel,
                &text,
                old,
                found,
                count,
            )));
        }
        allow_workspace_change(
            ctx,
            format!("edit_file {} ({count} replacement(s))", target.rel),
        )?;
        let updated = text.replacen(old, new, count);
        root.write(&target.path, updated.as_bytes())
            .map_err(|e| written(&target.rel, &e))?;
        Ok(format!(
            "replaced {count} occurrence(s) in '{}'",
            target.rel
        ))
    }
}

fn mismatch(rel: &str, text: &str, old: &str, found: usize, count: usize) -> String {
    if found == 0 {
        let mut message = format!(
            "no match for `old` in '{rel}' (expected {count}); nothing changed. Read the file and copy the exact text, whitespace and indentation included"
        );
        if text.contains("\r\n") && !old.contains('\r') {
            message.push_str(" (this file uses CRLF line endings)");
        } else if text.contains(old.trim()) && !old.trim().is_empty() {
            message.push_str(" (the text matches when leading/trailing whitespace is dropped)");
        }
        return message;
    }
    format!(
        "`old` matches {found} times in '{rel}' but count is {count}; nothing changed. Include more surrounding text to pick the right one, or set count={found} to replace them all"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatch_messages_say_how_many() {
        let m = mismatch("a.rs", "x x x", "x", 3, 1);
        assert!(
            m.contains("matches 3 times") && m.contains("count=3"),
            "{m}"
        );
        let m = mismatch("a.rs", "fn main() {}", "  fn main()", 0, 1);
        assert!(
            m.contains("no match") && m.contains("whitespace is dropped"),
            "{m}"
        );
    }
}
