//! `replace_definition`: the internal tool a function written out in a turn's prose is a call
//! of ([`crate::chat::definition`]). It finds the one definition of that name in the
//! workspace's source files and makes the change as the `edit_file` that replaces that
//! definition's lines with the block (indented as the definition is), so every rule of
//! `edit_file` holds: confinement, the read-only rule, the syntax gate. It is never offered
//! to the model; a name defined nowhere or in several places changes nothing and says how to
//! make the change instead.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::blocks::{block_end, defined_name, indent, reindented, with_docstring};
use super::edit_file::EditFile;
use super::path::{display_rel, resolve, Access};
use super::read_file::is_binary;
use super::walk::{open_start, walk_from};
use super::{args, Tool, ToolContext, ToolError, ToolSpec, Writes};
use crate::protocol::tool::{REPLACE_DEFINITION, WRITE_FILE};

/// The most files looked at for the definition.
const MAX_FILES: usize = 2_000;
/// Files larger than this are not looked at.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// The most places named when a name is defined in several.
const NAMED_PLACES: usize = 5;

#[derive(Debug, Clone, Copy, Default)]
pub struct ReplaceDefinition;

/// The definition a block replaces: its file and its text there, and the block as it is to
/// go in.
#[derive(Debug, PartialEq, Eq)]
struct Located {
    rel: String,
    path: PathBuf,
    /// 1-based lines of the definition.
    first: usize,
    last: usize,
    old: String,
    new: String,
}

impl Tool for ReplaceDefinition {
    fn listed(&self) -> bool {
        false
    }

    fn writes(&self, arguments: &Value, root: &Path) -> Writes {
        match located(arguments, root) {
            Ok(found) => Writes::Files(vec![root.join(found.path)]),
            Err(_) => Writes::Nothing,
        }
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: REPLACE_DEFINITION.into(),
            description: "Put `content`, one whole definition of `name`, in place of the one definition of `name` in the workspace's source files.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "content": {"type": "string", "minLength": 1}
                },
                "required": ["name", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let name = args::string(arguments, "name")?;
        let found = located(arguments, ctx.root)?;
        let edit = json!({"path": found.rel, "old": found.old, "new": found.new});
        let done = EditFile.run(&edit, ctx).map_err(|e| {
            ToolError::new(format!(
                "your answer's `{name}` was not put in place of the one at lines {}-{} of '{}': {}",
                found.first, found.last, found.rel, e.0
            ))
        })?;
        Ok(format!(
            "put your answer's `{name}` in place of the one at lines {}-{} of '{}' ({done})",
            found.first, found.last, found.rel
        ))
    }
}

/// The one definition the call's block replaces.
fn located(arguments: &Value, root: &Path) -> Result<Located, ToolError> {
    let name = args::string(arguments, "name")?;
    let content = args::string(arguments, "content")?;
    let header = content
        .lines()
        .find(|l| !l.trim().is_empty())
        .filter(|l| defined_name(l) == Some(name))
        .ok_or_else(|| ToolError::new(format!("the block does not start by defining `{name}`")))?;
    let extensions = extensions(header);
    let mut places = Vec::new();
    let target = resolve(root, ".", Access::Read)?;
    let (confined, _) = open_start(root, &target, "directory")?;
    let (canonical, walker) = walk_from(root, &target, None)?;
    for entry in walker.flatten().take(MAX_FILES) {
        if !entry.file_type().is_some_and(|k| k.is_file()) {
            continue;
        }
        let Ok(rel_path) = entry.path().strip_prefix(&canonical) else {
            continue;
        };
        let rel = display_rel(rel_path);
        if !extensions.iter().any(|e| rel.ends_with(e)) {
            continue;
        }
        let Ok(bytes) = confined.read(rel_path, MAX_FILE_BYTES) else {
            continue;
        };
        if is_binary(&bytes) {
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        for (first, last) in definitions(&text, name) {
            places.push((
                rel.clone(),
                rel_path.to_path_buf(),
                text.clone(),
                first,
                last,
            ));
        }
    }
    match places.as_slice() {
        [] => Err(ToolError::new(format!(
            "nothing changed: your answer shows a new `{name}`, but no source file here defines `{name}`. To add it, write its file whole with {WRITE_FILE}: the path, then the complete new content"
        ))),
        [(rel, path, text, first, last)] => {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let old = lines[*first..=*last].concat();
            let old = old.trim_end_matches(['\n', '\r']).to_string();
            let new = with_docstring(
                &old,
                &reindented(content, indent(lines[*first]), indent(header)),
            );
            Ok(Located {
                rel: rel.clone(),
                path: path.clone(),
                first: first + 1,
                last: last + 1,
                old,
                new,
            })
        }
        many => {
            let named: Vec<String> = many
                .iter()
                .take(NAMED_PLACES)
                .map(|(rel, _, _, first, _)| format!("'{rel}' line {}", first + 1))
                .collect();
            Err(ToolError::new(format!(
                "nothing changed: your answer shows a new `{name}`, and {} definitions of `{name}` are here ({}), so which one it replaces is not known. Make the change with edit_file on the file it belongs to",
                many.len(),
                named.join(", ")
            )))
        }
    }
}

/// The file name endings a definition line's language has.
fn extensions(header: &str) -> &'static [&'static str] {
    let t = header.trim_start();
    if t.starts_with("def ") || t.starts_with("async def ") || t.starts_with("class ") {
        &[".py"]
    } else if t.contains("function ") {
        &[".js", ".mjs", ".cjs", ".ts", ".jsx", ".tsx"]
    } else {
        &[".rs"]
    }
}

/// The 0-based first and last lines of each definition of `name` in `text`: its definition
/// line, and every later line indented deeper (blank lines within), with a closing brace
/// level with it.
fn definitions(text: &str, name: &str) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (first, line) in lines.iter().enumerate() {
        if defined_name(line) != Some(name) {
            continue;
        }
        let last = block_end(&lines, first);
        if last > first {
            out.push((first, last));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_definition_of_a_name_is_found_with_its_lines() {
        let text = "class A:\n    def size(self):\n        return 1\n\n    def other(self):\n        pass\n\n\ndef size(x):\n\n    return x\n# end\n";
        assert_eq!(definitions(text, "size"), [(1, 2), (8, 10)]);
        assert_eq!(definitions(text, "other"), [(4, 5)]);
        assert_eq!(definitions(text, "missing"), []);
        let rust = "pub fn leap(y: u32) -> bool {\n    y % 4 == 0\n}\n\nfn main() {}\n";
        assert_eq!(definitions(rust, "leap"), [(0, 2)]);
    }
}
