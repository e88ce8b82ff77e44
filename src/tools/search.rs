//! `search`: a regular expression over the workspace's text files, `file:line: text` per hit.
//!
//! Walks with `walk` (the `ignore` crate, with the rules read confined) so `.gitignore` is
//! respected; skips `.git/` and binary files, and never follows a symlink. Each file is read
//! through `confined` (beneath the root, regular files only, size checked first); a file not
//! searched for any other reason than being binary (too large, a FIFO, unreadable) is named in
//! the output with the reason, so "no matches" never hides a file that was not looked at.
//! `glob` narrows the files by name or workspace-relative path; it never brings back an
//! ignored file. Results are bounded; past the bound the output says how many more there were
//! and how to narrow the search.

use std::path::Path;

use globset::{Glob, GlobMatcher};
use regex::Regex;
use serde_json::{json, Value};

use super::args;
use super::confined::Refusal;
use super::path::{display_rel, resolve, Access};
use super::read_file::is_binary;
use super::walk::{open_start, walk_from};
use super::{Tool, ToolContext, ToolError, ToolSpec};
use crate::protocol::tool::SEARCH;

/// Most matching lines shown.
pub const MAX_MATCHES: usize = 100;
/// Longest text shown per matching line.
const MAX_TEXT_CHARS: usize = 240;
/// Files larger than this are skipped.
const MAX_SEARCH_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Most skipped files named in the output.
const MAX_SKIPPED_NAMED: usize = 10;
/// Past this many further matches, counting stops.
const MAX_COUNTED: usize = 10_000;
/// Most entries walked when looking for a word in the other files.
const MAX_WORD_WALK: usize = 2_000;
/// Most bytes of one file read when looking for a word in the other files.
const MAX_WORD_FILE_BYTES: u64 = 256 * 1024;

#[derive(Debug, Clone, Copy, Default)]
pub struct Search;

impl Tool for Search {
    fn writes(&self, _arguments: &Value, _root: &std::path::Path) -> super::Writes {
        super::Writes::Nothing
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SEARCH.into(),
            description: format!(
                "Search the workspace's text files for a regular expression (Rust regex syntax; (?i) for case-insensitive). Optional `path` (a directory or file to search in, default the root) and `glob` (e.g. \"*.rs\" or \"src/**/*.py\"). Returns up to {MAX_MATCHES} hits as `file:line: text`; files ignored by .gitignore are skipped."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "minLength": 1, "description": "regular expression"},
                    "path": {"type": "string", "description": "directory or file relative to the workspace root"},
                    "glob": {"type": "string", "minLength": 1, "description": "only files whose name or path matches this glob"}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let pattern = args::string(arguments, "pattern")?;
        let regex = Regex::new(pattern)
            .map_err(|e| ToolError::new(format!("invalid regular expression: {e}")))?;
        let raw_path = args::opt_string(arguments, "path")?.unwrap_or(".");
        let glob = match args::opt_string(arguments, "glob")? {
            Some(g) => Some(
                Glob::new(g)
                    .map_err(|e| ToolError::new(format!("invalid glob '{g}': {e}")))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let target = resolve(ctx.root, raw_path, Access::Read)?;
        let (confined, _) = open_start(ctx.root, &target, "file or directory")?;
        let (root, walker) = walk_from(ctx.root, &target, None)?;

        let mut hits = Hits::default();
        for entry in walker {
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::new("the search was cancelled"));
            }
            let Ok(entry) = entry else { continue };
            let Some(kind) = entry.file_type() else {
                continue;
            };
            // Directories are walked into; symlinks are never followed (list_dir shows them).
            if kind.is_dir() || kind.is_symlink() {
                continue;
            }
            let Ok(rel_path) = entry.path().strip_prefix(&root) else {
                continue;
            };
            let rel = display_rel(rel_path);
            if let Some(glob) = &glob {
                if !glob_matches(glob, rel_path) {
                    continue;
                }
            }
            let bytes = match confined.read(rel_path, MAX_SEARCH_FILE_BYTES) {
                Ok(bytes) => bytes,
                Err(refusal) => {
                    hits.skipped
                        .push(format!("{rel} ({})", skip_reason(&refusal)));
                    continue;
                }
            };
            if is_binary(&bytes) {
                continue;
            }
            hits.search_file(&rel, &String::from_utf8_lossy(&bytes), &regex);
            if hits.more >= MAX_COUNTED {
                break;
            }
        }
        Ok(hits.render(pattern, &target.rel))
    }
}

/// The workspace's text files named `*.EXT` (`ext`: the extension of `except`, a relative
/// path, which is left out) where `word` stands as a whole word, each with the lines it is
/// on, in the walk's sorted order: at most `max` files, from the first [`MAX_WORD_WALK`]
/// entries walked. Read as `search` reads (ignore rules, confined, no link followed, binary
/// skipped); empty when the workspace cannot be walked.
pub fn word_elsewhere(
    root: &Path,
    word: &str,
    except: &str,
    max: usize,
) -> Vec<(String, Vec<usize>)> {
    let ext = Path::new(except).extension();
    let Ok(regex) = Regex::new(&format!(r"\b{}\b", regex::escape(word))) else {
        return Vec::new();
    };
    let Ok(target) = resolve(root, ".", Access::Read) else {
        return Vec::new();
    };
    let (Ok((confined, _)), Ok((canonical, walker))) = (
        open_start(root, &target, "directory"),
        walk_from(root, &target, None),
    ) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in walker.take(MAX_WORD_WALK).flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel_path) = entry.path().strip_prefix(&canonical) else {
            continue;
        };
        let rel = display_rel(rel_path);
        if rel == except || rel_path.extension() != ext {
            continue;
        }
        let Ok(bytes) = confined.read(rel_path, MAX_WORD_FILE_BYTES) else {
            continue;
        };
        if is_binary(&bytes) {
            continue;
        }
        let lines: Vec<usize> = String::from_utf8_lossy(&bytes)
            .lines()
            .enumerate()
            .filter(|(_, line)| regex.is_match(line))
            .map(|(at, _)| at + 1)
            .collect();
        if !lines.is_empty() {
            found.push((rel, lines));
            if found.len() == max {
                break;
            }
        }
    }
    found
}

/// What a search found so far.
#[derive(Default)]
struct Hits {
    /// The matching lines shown, `path:line: text`, at most [`MAX_MATCHES`].
    lines: Vec<String>,
    /// Matching lines beyond those shown.
    more: usize,
    files_with_hits: usize,
    /// Files not searched, each with why.
    skipped: Vec<String>,
}

impl Hits {
    /// Adds the lines of `text` (the file `rel`) that `regex` matches.
    fn search_file(&mut self, rel: &str, text: &str, regex: &Regex) {
        let mut any = false;
        for (index, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            any = true;
            if self.lines.len() < MAX_MATCHES {
                self.lines
                    .push(format!("{rel}:{}: {}", index + 1, clip(line.trim_end())));
            } else {
                self.more += 1;
            }
        }
        self.files_with_hits += usize::from(any);
    }

    /// The tool's output: the lines shown, a note of those not shown, and of skipped files.
    fn render(self, pattern: &str, target: &str) -> String {
        let skipped_note = skipped_note(&self.skipped);
        if self.lines.is_empty() {
            return format!("no matches for /{pattern}/ in '{target}'{skipped_note}");
        }
        let mut out = self.lines.join("\n");
        if self.more > 0 {
            let counted = if self.more >= MAX_COUNTED {
                format!("{MAX_COUNTED}+")
            } else {
                self.more.to_string()
            };
            out.push_str(&format!(
                "\n[{counted} more match(es) not shown, in {} file(s) overall; narrow the search with `path`, `glob` or a more specific pattern]",
                self.files_with_hits
            ));
        }
        out.push_str(&skipped_note);
        out
    }
}

/// Why a file was not searched, in a few words.
fn skip_reason(refusal: &Refusal) -> String {
    match refusal {
        Refusal::TooLarge { size, limit } => {
            format!(
                "{size} bytes, over the {limit}-byte limit for search; use run_command with grep"
            )
        }
        Refusal::NotRegular(kind) => format!("a {kind}, not a regular file"),
        other => other.to_string(),
    }
}

/// The line that names the files not searched; empty when every file was searched.
fn skipped_note(skipped: &[String]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let shown = skipped
        .iter()
        .take(MAX_SKIPPED_NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("; ");
    let rest = skipped.len().saturating_sub(MAX_SKIPPED_NAMED);
    let more = if rest > 0 {
        format!("; and {rest} more")
    } else {
        String::new()
    };
    format!("\n[not searched, {} file(s): {shown}{more}]", skipped.len())
}

/// A glob matches a file by its workspace-relative path or by its file name.
fn glob_matches(glob: &GlobMatcher, rel: &Path) -> bool {
    glob.is_match(rel) || rel.file_name().is_some_and(|name| glob.is_match(name))
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(MAX_TEXT_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
