//! `list_dir`: what a workspace directory holds, down to `depth` levels.
//!
//! Walks with `walk` (the `ignore` crate, with the rules read confined) so `.gitignore` (and
//! `.git/info/exclude`) hide what git hides; `.git/` itself is never listed. Symlinks are shown
//! (with `@`), never followed, and every entry is checked to exist beneath the root through
//! `confined` before it is shown. Entries are workspace-relative paths, directories with a
//! trailing `/`, sorted, and bounded in number.

use serde_json::{json, Value};

use super::args;
use super::confined::Opened;
use super::path::{display_rel, Access};
use super::walk::{open_start, walk_from};
use super::{Tool, ToolContext, ToolError, ToolSpec};
use crate::protocol::tool::LIST_DIR;

/// Levels listed when no `depth` is given.
pub const DEFAULT_DEPTH: usize = 2;
/// Deepest listing allowed.
pub const MAX_DEPTH: u64 = 8;
/// Most entries shown.
pub const MAX_ENTRIES: usize = 400;

#[derive(Debug, Clone, Copy, Default)]
pub struct ListDir;

impl Tool for ListDir {
    fn writes(&self, _arguments: &Value, _root: &std::path::Path) -> super::Writes {
        super::Writes::Nothing
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LIST_DIR.into(),
            description: format!(
                "List a workspace directory (\".\" is the root) down to `depth` levels (default {DEFAULT_DEPTH}). Files ignored by .gitignore are left out; directories end with '/'."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "directory relative to the workspace root"},
                    "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "how many levels to descend"}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let target = args::path(arguments, ctx.root, Access::Read)?;
        let depth = args::positive(arguments, "depth", DEFAULT_DEPTH)?;
        let (confined, opened) = open_start(ctx.root, &target, "directory")?;
        if let Opened::File { .. } = opened {
            return Err(ToolError::new(format!(
                "'{}' is a file, not a directory; use read_file",
                target.rel
            )));
        }
        let (root, walker) = walk_from(ctx.root, &target, Some(depth))?;
        let mut entries = Vec::new();
        let mut more = 0usize;
        for entry in walker {
            let Ok(entry) = entry else { continue };
            if entry.depth() == 0 {
                continue;
            }
            if entries.len() >= MAX_ENTRIES {
                more += 1;
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&root) else {
                continue;
            };
            // The walk goes by name; an entry is shown only if it really is beneath the root
            // with no symlink on the way (a directory swapped for a symlink mid-walk is not).
            if !confined.exists(rel) {
                continue;
            }
            let mut line = display_rel(rel);
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                line.push('/');
            } else if entry.path_is_symlink() {
                line.push('@');
            }
            entries.push(line);
        }
        if entries.is_empty() {
            return Ok(format!(
                "'{}' is empty (or everything in it is ignored)",
                target.rel
            ));
        }
        let mut out = format!("{}/ (depth {depth}):\n", target.rel);
        out.push_str(&entries.join("\n"));
        if more > 0 {
            out.push_str(&format!(
                "\n[{more} more entries not shown; list a subdirectory or use a smaller depth]"
            ));
        }
        Ok(out)
    }
}
