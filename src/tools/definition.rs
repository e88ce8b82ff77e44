//! `replace_definition`: the internal tool a function written out in a turn's prose is a call
//! of ([`crate::chat::definition`]). It finds the one definition of that name in the
//! workspace's source files and makes the change as the `edit_file` that replaces that
//! definition's lines with the block (indented as the definition is), so every rule of
//! `edit_file` holds: confinement, the read-only rule, the syntax gate. It is never offered
//! to the model; a name defined in several places changes nothing and says how to make the
//! change instead. A name defined nowhere is a new definition, unless the block is one
//! definition's rename (the same lines under another name): then it replaces that one.

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
    /// The name the definition had, when the block renames it.
    renames: Option<String>,
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
        let what = match &found.renames {
            Some(was) => format!("`{was}` (the same lines under another name: a rename)"),
            None => "the one".to_string(),
        };
        let done = EditFile.run(&edit, ctx).map_err(|e| {
            ToolError::new(format!(
                "your answer's `{name}` was not put in place of {what} at lines {}-{} of '{}': {}",
                found.first, found.last, found.rel, e.0
            ))
        })?;
        Ok(format!(
            "put your answer's `{name}` in place of {what} at lines {}-{} of '{}' ({done})",
            found.first, found.last, found.rel
        ))
    }
}

/// A source file looked at for definitions: its name as shown, its path under the root,
/// its text.
struct Source {
    rel: String,
    path: PathBuf,
    text: String,
}

/// The one definition the call's block replaces: the one of its name, or, where no file
/// defines that name, the one the block renames ([`renamed`]).
fn located(arguments: &Value, root: &Path) -> Result<Located, ToolError> {
    let name = args::string(arguments, "name")?;
    let content = args::string(arguments, "content")?;
    let header = content
        .lines()
        .find(|l| !l.trim().is_empty())
        .filter(|l| defined_name(l) == Some(name))
        .ok_or_else(|| ToolError::new(format!("the block does not start by defining `{name}`")))?;
    let sources = sources(root, extensions(header))?;
    let places: Vec<(&Source, usize, usize)> = sources
        .iter()
        .flat_map(|source| {
            definitions(&source.text, name)
                .into_iter()
                .map(move |(first, last)| (source, first, last))
        })
        .collect();
    match places.as_slice() {
        [] => match renamed(&sources, content, name) {
            Some((source, first, last, was)) => Ok(Located {
                renames: Some(was.to_string()),
                ..in_place_of(source, first, last, content, header)
            }),
            None => Err(ToolError::new(format!(
                "nothing changed: your answer shows a new `{name}`, but no source file here defines `{name}`. To add it, write its file whole with {WRITE_FILE}: the path, then the complete new content"
            ))),
        },
        [(source, first, last)] => Ok(in_place_of(source, *first, *last, content, header)),
        many => {
            let named: Vec<String> = many
                .iter()
                .take(NAMED_PLACES)
                .map(|(source, first, _)| format!("'{}' line {}", source.rel, first + 1))
                .collect();
            Err(ToolError::new(format!(
                "nothing changed: your answer shows a new `{name}`, and {} definitions of `{name}` are here ({}), so which one it replaces is not known. Make the change with edit_file on the file it belongs to",
                many.len(),
                named.join(", ")
            )))
        }
    }
}

/// The change that puts `content` (whose definition line is `header`) in place of lines
/// `first..=last` (0-based) of `source`, indented as they are, keeping their docstring.
fn in_place_of(source: &Source, first: usize, last: usize, content: &str, header: &str) -> Located {
    let lines: Vec<&str> = source.text.split_inclusive('\n').collect();
    let old = lines[first..=last].concat();
    let old = old.trim_end_matches(['\n', '\r']).to_string();
    let new = with_docstring(
        &old,
        &reindented(content, indent(lines[first]), indent(header)),
    );
    Located {
        rel: source.rel.clone(),
        path: source.path.clone(),
        first: first + 1,
        last: last + 1,
        old,
        new,
        renames: None,
    }
}

/// The workspace's text files with one of `extensions`, read through the confined root (at
/// most [`MAX_FILES`] entries looked at, none over [`MAX_FILE_BYTES`]).
fn sources(root: &Path, extensions: &[&str]) -> Result<Vec<Source>, ToolError> {
    let target = resolve(root, ".", Access::Read)?;
    let (confined, _) = open_start(root, &target, "directory")?;
    let (canonical, walker) = walk_from(root, &target, None)?;
    let mut out = Vec::new();
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
        out.push(Source {
            rel,
            path: rel_path.to_path_buf(),
            text,
        });
    }
    Ok(out)
}

/// The one definition that `content` (a definition of `name`, which no file defines) is a
/// rename of: a definition of another name whose definition line is the block's but for
/// the name, and whose body is the block's line for line (indentation aside). The 1.5B
/// writes a rename that way ("Here's the renamed function:", seed 2, 09). A body of no
/// line, or one that two definitions share, is no rename of either.
fn renamed<'s>(
    sources: &'s [Source],
    content: &str,
    name: &str,
) -> Option<(&'s Source, usize, usize, &'s str)> {
    let block: Vec<&str> = content.lines().collect();
    let start = block.iter().position(|l| !l.trim().is_empty())?;
    let wanted = shape(&block, start);
    if wanted.1.is_empty() {
        return None;
    }
    let mut found = Vec::new();
    for source in sources {
        let lines: Vec<&str> = source.text.lines().collect();
        for (first, line) in lines.iter().enumerate() {
            let Some(other) = defined_name(line).filter(|other| *other != name) else {
                continue;
            };
            let (header, body) = shape(&lines, first);
            if body == wanted.1 && header.replacen(other, name, 1) == wanted.0 {
                found.push((source, first, block_end(&lines, first), other));
            }
        }
    }
    match found.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// A definition's line and its body, as a rename leaves them: the definition line trimmed,
/// and each body line less the definition line's indentation and trailing space, the blank
/// lines at its end left out.
fn shape(lines: &[&str], first: usize) -> (String, Vec<String>) {
    let last = block_end(lines, first);
    let depth = indent(lines[first]);
    let mut body: Vec<String> = lines[first + 1..=last.max(first)]
        .iter()
        .map(|l| {
            let cut = l.len() - l.trim_start().len();
            l[cut.min(depth)..].trim_end().to_string()
        })
        .collect();
    while body.last().is_some_and(String::is_empty) {
        body.pop();
    }
    (lines[first].trim().to_string(), body)
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

    fn source(rel: &str, text: &str) -> Source {
        Source {
            rel: rel.into(),
            path: PathBuf::from(rel),
            text: text.into(),
        }
    }

    #[test]
    fn a_block_of_a_new_name_renames_the_one_definition_with_its_lines() {
        let users = source(
            "users.py",
            "class Store:\n    def get_usr(self, id):\n        \"\"\"One.\"\"\"\n        return self.users[id]\n\n    def size(self):\n        return 1\n",
        );
        let others = source(
            "other.py",
            "def size(x):\n    return 1\n\n\ndef one(x):\n    return 1\n",
        );
        let sources = [users, others];
        // Indented as written at top level, the method's body is the same.
        let block = "def get_user(self, id):\n    \"\"\"One.\"\"\"\n    return self.users[id]\n\n";
        let (found, first, last, was) = renamed(&sources, block, "get_user").unwrap();
        assert_eq!(
            (found.rel.as_str(), first, last, was),
            ("users.py", 1, 3, "get_usr")
        );
        // Another parameter, another body or a body two definitions share: no rename.
        for (block, name) in [
            (
                "def get_user(self, key):\n    \"\"\"One.\"\"\"\n    return self.users[id]\n",
                "get_user",
            ),
            (
                "def get_user(self, id):\n    return self.users[id]\n",
                "get_user",
            ),
            ("def length(x):\n    return 1\n", "length"),
            ("def nothing(x):\n", "nothing"),
        ] {
            assert!(renamed(&sources, block, name).is_none(), "{block}");
        }
    }
}
