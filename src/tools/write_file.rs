//! `write_file`: create or replace a workspace file with the given content.
//!
//! Parent directories are created (inside the workspace only, each one made and opened beneath
//! the previous one's descriptor; see `confined`), and the file itself is opened without
//! following a symlink and refused unless it is a regular file. `.git/` is not
//! writable. Under `--sandbox read-only` the worker may not change the workspace on its own:
//! a write is refused, unless the approval policy is `ask`, in which case the person at the
//! terminal decides each write (the same rule applies to `edit_file`).

use serde_json::{json, Value};

use super::approval::authorize_in;
use super::args;
use super::confined::{Opened, Refusal};
use super::path::{open_root, Access};
use super::{Tool, ToolContext, ToolError, ToolSpec};
use crate::protocol::policy::{ApprovalPolicy, SandboxMode};

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

impl Tool for WriteFile {
    /// The file its `path` names.
    fn writes(&self, arguments: &Value, root: &std::path::Path) -> super::Writes {
        args::written_file(arguments, root)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Create or overwrite a file in the workspace with `content` (the whole file). Missing parent directories are created. To change part of a file, prefer edit_file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "file path relative to the workspace root"},
                    "content": {"type": "string", "description": "the complete new content"}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let target = args::path(arguments, ctx.root, Access::Write)?;
        let content = args::string(arguments, "content")?;
        let root = open_root(ctx.root)?;
        let (existed, before) = match root.open_read(&target.path) {
            Ok(Opened::File { file, len }) => {
                let before = super::confined::read_bounded(file, len, COMPARED_BYTES)
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok());
                (true, before)
            }
            Ok(Opened::Dir(_)) | Err(Refusal::Directory) => {
                return Err(ToolError::new(format!(
                    "'{}' is a directory; give a file path",
                    target.rel
                )))
            }
            Err(Refusal::NotFound) => (false, None),
            Err(e) => return Err(e.about(&target.rel)),
        };
        allow_workspace_change(
            ctx,
            format!(
                "write_file {} ({} bytes, {})",
                target.rel,
                content.len(),
                if existed { "replacing it" } else { "new file" }
            ),
        )?;
        let existed = root
            .write(&target.path, content.as_bytes())
            .map_err(|e| written(&target.rel, &e))?;
        let mut out = format!(
            "{} '{}' ({} bytes, {} lines)",
            if existed { "replaced" } else { "created" },
            target.rel,
            content.len(),
            content.lines().count()
        );
        if let Some(gone) = before
            .as_deref()
            .and_then(|b| dropped_definitions(b, content))
        {
            out.push_str(&gone);
        }
        Ok(out)
    }
}

/// Most bytes of a replaced file compared with its new content.
const COMPARED_BYTES: u64 = 256 * 1024;
/// Most dropped lines named.
const NAMED_DROPS: usize = 4;

/// A note naming the unindented lines of `before` (definitions: `def`, `class`, `fn`, a
/// heading) that `after` no longer has. Small models asked for a whole file often write back
/// only the part they changed; the note lets the next turn see that it deleted the rest.
fn dropped_definitions(before: &str, after: &str) -> Option<String> {
    let kept: std::collections::HashSet<&str> = after.lines().map(str::trim_end).collect();
    let gone: Vec<&str> = before
        .lines()
        .map(str::trim_end)
        .filter(|line| {
            line.len() > 3
                && !line.starts_with(char::is_whitespace)
                && !line.starts_with(['#', '/', '}', ')', ']', '"', '\''])
                && !kept.contains(line)
        })
        .collect();
    if gone.is_empty() {
        return None;
    }
    let named: Vec<String> = gone
        .iter()
        .take(NAMED_DROPS)
        .map(|line| format!("`{}`", crate::text::clip(line, 80)))
        .collect();
    let more = gone.len().saturating_sub(NAMED_DROPS);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        ". The file no longer has these lines it had: {}{more}. If that was not meant, write the whole file again with them",
        named.join(", ")
    ))
}

/// The child's sentence for a file that cannot be written.
pub(crate) fn written(rel: &str, refusal: &Refusal) -> ToolError {
    match refusal {
        Refusal::Directory => ToolError::new(format!("'{rel}' is a directory; give a file path")),
        other => ToolError::new(format!("cannot write '{rel}': {other}")),
    }
}

/// The read-only rule for the file tools: refused, or put to the person under `--approval ask`.
pub(crate) fn allow_workspace_change(
    ctx: &ToolContext<'_>,
    description: String,
) -> Result<(), ToolError> {
    if ctx.policy.sandbox != SandboxMode::ReadOnly {
        return Ok(());
    }
    if ctx.policy.approval == ApprovalPolicy::Ask {
        return authorize_in(ctx, description);
    }
    Err(ToolError::new(
        "the workspace is read-only in this run (--sandbox read-only): files cannot be changed; describe the change you would make in your report instead",
    ))
}

#[cfg(test)]
mod tests {
    use super::dropped_definitions;

    #[test]
    fn a_whole_file_write_that_drops_definitions_says_which() {
        let before = "def median(values):\n    return values[0]\n\n\ndef mean(values):\n    return sum(values) / len(values)\n";
        let after = "def median(values):\n    return sorted(values)[len(values) // 2]\n";
        let note = dropped_definitions(before, after).unwrap();
        assert!(note.contains("`def mean(values):`"), "{note}");
        assert!(!note.contains("median"), "{note}");
        assert_eq!(
            dropped_definitions(before, &format!("{after}\n{before}")),
            None
        );
        assert_eq!(dropped_definitions("", after), None);
    }
}
