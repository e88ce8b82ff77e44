//! `list_dir`: what a workspace directory holds, down to `depth` levels.
//!
//! Walks with the `ignore` crate so `.gitignore` (and `.git/info/exclude`) hide what git
//! hides; `.git/` itself is never listed. Entries are workspace-relative paths, directories
//! with a trailing `/`, sorted, and bounded in number.

use serde_json::{json, Value};

use super::args;
use super::path::{display_rel, resolve, Access};
use super::{Tool, ToolContext, ToolError, ToolSpec};

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
            name: "list_dir".into(),
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
        let raw = args::string(arguments, "path")?;
        let depth = args::opt_u64(arguments, "depth")?
            .map_or(DEFAULT_DEPTH, args::to_usize)
            .max(1);
        let target = resolve(ctx.root, raw, Access::Read)?;
        if !target.abs.is_dir() {
            return Err(ToolError::new(if target.abs.exists() {
                format!("'{}' is a file, not a directory; use read_file", target.rel)
            } else {
                format!("no directory '{}' in the workspace", target.rel)
            }));
        }
        let root = ctx
            .root
            .canonicalize()
            .unwrap_or_else(|_| ctx.root.to_path_buf());
        let walker = ignore::WalkBuilder::new(&target.abs)
            .max_depth(Some(depth))
            .hidden(false)
            .require_git(false)
            .git_global(false)
            .filter_entry(|entry| entry.file_name() != ".git")
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
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
            let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
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
