//! `edit_file`: replace exact text in a workspace file.
//!
//! The file is read through `confined` like `read_file` reads it, with the same size bound
//! checked before a byte is read, and written back through the same confined open as
//! `write_file`. `old` must occur exactly `count` times (default 1), compared byte for byte; any other
//! number of matches changes nothing and says how many there were, so the child can widen
//! `old` or fix `count`, except that a single word with no `count` whose every match stands
//! as a whole word is replaced at all of them (a misspelling, a name). Same confinement and
//! read-only rule as `write_file`.
//!
//! Small models' failed edits are an `old` that is not in the file, or one equal to `new`;
//! they write whole files reliably. So an `old` equal to `new` is refused pointing to
//! `write_file`, and an `old` not found is answered with the lines of the file nearest to it
//! (the window of lines most alike, line by line, with their numbers, bounded), saying when
//! they differ from it only in whitespace. An `old` that is only a block's first line (a
//! `def …:` line), with `new` that line and a body, is refused showing the block: made as
//! asked, the new body would go in above the old one, which would stay.

use std::path::Path;

use serde_json::{json, Value};

use super::args;
use super::confined::Refusal;
use super::nearest::{nearest, numbered};
use super::path::{open_root, Access};
use super::read_file::{is_binary, refused, MAX_FILE_BYTES};
use super::words::{
    asked_rename, line_at, line_list, line_numbers, lines_of, rename_word, renamed_word,
    stands_alone, word_everywhere, word_left,
};
use super::write_file::{allow_workspace_change, written};
use super::{AskedRenames, ALREADY_IN_PLACE};
use super::{Tool, ToolContext, ToolError, ToolSpec};
use crate::protocol::tool::EDIT_FILE;

#[derive(Debug, Clone, Copy, Default)]
pub struct EditFile;

impl Tool for EditFile {
    /// The file its `path` names.
    fn writes(&self, arguments: &Value, root: &std::path::Path) -> super::Writes {
        args::written_file(arguments, root)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: EDIT_FILE.into(),
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
        let given = args::opt_u64(arguments, "count")?.map(args::to_usize);
        // An empty `old` is refused before the file is read; `old` equal to `new` once it is,
        // to say whether the file holds that text already.
        let same = no_change(old, new);
        if let Some(why) = same.filter(|_| old.is_empty()) {
            return Err(ToolError::new(why));
        }
        let target = args::path(arguments, ctx.root, Access::Write)?;
        let root = open_root(ctx.root)?;
        let text = read_text(&root, &target)?;
        if let Some(why) = same {
            if let Some(asked) = AskedRename::copied(ctx.renames, &text, old) {
                return asked.make(ctx, &root, &target, &text);
            }
            return Err(ToolError::new(
                already_there(&target.rel, &text, old).unwrap_or_else(|| why.to_string()),
            ));
        }
        if let Some(asked) = given
            .is_none()
            .then(|| AskedRename::in_file(ctx.renames, &text, (old, new)))
            .flatten()
        {
            return asked.make(ctx, &root, &target, &text);
        }
        if let Some(done) = rename_done(ctx, &target.rel, &text, (old, new)) {
            return Err(ToolError::new(done));
        }
        let (count, everywhere) = replacements(ctx.root, &target.rel, &text, (old, new), given)?;
        if let Some(why) = header_only(&target.rel, &text, old, new).filter(|_| count == 1) {
            return Err(ToolError::new(why));
        }
        let whole = whole_block(&text, old, new).filter(|_| count == 1);
        let updated = match &whole {
            Some(block) => text.replacen(&block.old, &block.new, 1),
            None => text.replacen(old, new, count),
        };
        if let Some(broken) = super::syntax::refusal(ctx, &target.rel, Some(&text), &updated) {
            return Err(ToolError::new(broken));
        }
        allow_workspace_change(
            ctx,
            format!("edit_file {} ({count} replacement(s))", target.rel),
        )?;
        root.write(&target.path, updated.as_bytes())
            .map_err(|e| written(&target.rel, &e))?;
        Ok(match whole {
            Some(block) => format!(
                "replaced the whole block at {} of '{}': `new` starts with `{}`, the line that opens the block `old` is in, so it was taken for the whole of it",
                block.span,
                target.rel,
                crate::text::clip(&block.header, 80)
            ),
            None if everywhere => format!(
                "replaced the word `{}` with `{}` at all {count} places it stands in '{}' ({}): a single word given as `old` with no count is replaced wherever it stands as a whole word",
                crate::text::clip(old, 40),
                crate::text::clip(new, 40),
                target.rel,
                lines_of(&text, old, false)
            ),
            None => format!(
                "replaced {count} occurrence(s) in '{}'{}",
                target.rel,
                word_left(ctx.root, &target.rel, &updated, (old, new))
            ),
        })
    }
}

/// An edit that makes, in one place or none, the rename the objective asks for, where the
/// file has the old word in other places: it renames the word wherever it stands in the
/// file. Seeds 1 and 3, 09 at 4b2c978: the 1.5B renamed `get_usr` one call at a time
/// (`get_usr(user_id)` → `get_user(user_id)`) or gave the definition's line as `old` in
/// every file, never the one-word edit it was shown, and ran out of rounds with the rename
/// half made.
struct AskedRename {
    was: String,
    now: String,
    /// What the edit's `old` was, said in the answer.
    old: &'static str,
    /// The file renamed, and the lines where the word stood.
    updated: String,
    lines: Vec<usize>,
}

impl AskedRename {
    fn in_file(renames: &AskedRenames, text: &str, (old, new): (&str, &str)) -> Option<Self> {
        let (was, now) = asked_rename(renames, old, new)?;
        let found = text.matches(old).count();
        // Made as given, the edit renames its one place; the word's others are renamed too.
        let literal = if found == 1 {
            text.replacen(old, new, 1)
        } else {
            text.to_string()
        };
        let (updated, _) = rename_word(&literal, was, now)?;
        Some(Self {
            was: was.to_string(),
            now: now.to_string(),
            old: match found {
                0 => "is not in the file as given",
                1 => "is one of them",
                _ => "matches several times",
            },
            updated,
            lines: line_numbers(text, was, true),
        })
    }

    /// An edit whose `new` is its `old`, a text of the file that holds the word the objective
    /// asks to rename: the rename it meant. Seeds 1 and 2, 02 at b743a97: the guide's line 5
    /// given as both `old` and `new`, `recieve` copied into `new`, in every round.
    fn copied(renames: &AskedRenames, text: &str, old: &str) -> Option<Self> {
        if !text.contains(old) {
            return None;
        }
        renames.iter().find_map(|(was, now)| {
            line_numbers(old, was, true).first()?;
            let (updated, lines) = rename_word(text, was, now)?;
            Some(Self {
                was: was.to_string(),
                now: now.to_string(),
                old: "and `new` are the same, both with the old word",
                updated,
                lines,
            })
        })
    }

    fn make(
        self,
        ctx: &ToolContext<'_>,
        root: &super::confined::Root,
        target: &super::path::Resolved,
        text: &str,
    ) -> Result<String, ToolError> {
        let rel = &target.rel;
        if let Some(broken) = super::syntax::refusal(ctx, rel, Some(text), &self.updated) {
            return Err(ToolError::new(broken));
        }
        allow_workspace_change(
            ctx,
            format!("edit_file {rel} (`{}` renamed `{}`)", self.was, self.now),
        )?;
        root.write(&target.path, self.updated.as_bytes())
            .map_err(|e| written(rel, &e))?;
        Ok(format!(
            "renamed `{}` to `{}` wherever it stood as a whole word in '{rel}' ({}), the rename the objective asks for; this edit's `old` {}{}",
            crate::text::clip(&self.was, 40),
            crate::text::clip(&self.now, 40),
            line_list(&self.lines),
            self.old,
            word_left(ctx.root, rel, &self.updated, (self.was.as_str(), self.now.as_str()))
        ))
    }
}

/// The answer to an edit that makes the rename the objective asks for in a file where it is
/// made: the old word stands nowhere in it, `old` is not there, the new word is. Seed 3, 02 at
/// e7773b0: the guide fixed whole by the edit before, then `old` = `recieve`, `new` =
/// `receive`, told `no match` and "read the file first"; it then wrote the guide whole with
/// the read's header as its first line.
fn rename_done(
    ctx: &ToolContext<'_>,
    rel: &str,
    text: &str,
    (old, new): (&str, &str),
) -> Option<String> {
    let (was, now) = asked_rename(ctx.renames, old, new)?;
    if text.contains(old) || !line_numbers(text, was, true).is_empty() {
        return None;
    }
    let at = line_numbers(text, now, true);
    at.first()?;
    let elsewhere = word_left(ctx.root, rel, text, (was, now));
    let then = if elsewhere.is_empty() {
        ". Do not make it again: check the work, then call ralph_report".to_string()
    } else {
        format!("{elsewhere}. Do not make this edit again")
    };
    Some(format!(
        "{ALREADY_IN_PLACE}the rename the objective asks for is made in '{rel}': `{}` stands nowhere in it, and `{}` at {}; nothing changed{then}",
        crate::text::clip(was, 40),
        crate::text::clip(now, 40),
        lines_of(text, now, true),
    ))
}

/// The file's text, read through the confined root: a file that is not there or is binary
/// is refused saying what to do instead.
fn read_text(
    root: &super::confined::Root,
    target: &super::path::Resolved,
) -> Result<String, ToolError> {
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
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// How many matches of `old` the edit replaces (the `count` given, else 1, else every
/// match of a word given alone) and whether that is the word everywhere; the refusal when
/// the edit is already made or the matches are not that many.
fn replacements(
    root: &Path,
    rel: &str,
    text: &str,
    (old, new): (&str, &str),
    given: Option<usize>,
) -> Result<(usize, bool), ToolError> {
    if already_made(text, old, new) {
        return Err(ToolError::new(format!(
            "{ALREADY_IN_PLACE}'{rel}' already has `new` wherever `old` matches (the edit is already made: `old` is part of `new`); nothing changed. Do not make it again: check the work, then call ralph_report"
        )));
    }
    let found = text.matches(old).count();
    if found == 0 {
        if let Some(made) = made_before(rel, text, old, new, Some(root)) {
            return Err(ToolError::new(made));
        }
    }
    let everywhere = given.is_none() && found > 1 && word_everywhere(text, old, new);
    let count = if everywhere {
        found
    } else {
        given.unwrap_or(1)
    };
    if found != count {
        return Err(ToolError::new(mismatch(
            rel,
            text,
            (old, new),
            found,
            count,
        )));
    }
    Ok((count, everywhere))
}

/// An edit read as the replacement of the whole block its `old` is in.
#[derive(Debug, PartialEq, Eq)]
struct WholeBlock {
    /// The block's text in the file, and what replaces it.
    old: String,
    new: String,
    /// Its lines (`lines 4-5`) and first line.
    span: String,
    header: String,
}

/// The whole block an edit means, when `old` lies inside the body of a definition (`raise
/// NotImplementedError` under `def slugify(text):`) and `new` starts with that same
/// definition's line: made as asked, the new definition would be nested inside the old one.
/// The 1.5B wrote the demo's fix so (`new` the whole function, `old` its one-line body),
/// three rounds running. `None` for any other edit.
fn whole_block(text: &str, old: &str, new: &str) -> Option<WholeBlock> {
    use super::blocks::{block_end, defined_name, indent, reindented, with_docstring};
    let new_first = new.lines().find(|l| !l.trim().is_empty())?;
    let name = defined_name(new_first)?;
    let old_first = old.lines().find(|l| !l.trim().is_empty())?;
    if defined_name(old_first) == Some(name) {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let at = text[..text.find(old)?].matches('\n').count();
    let old_last = at + old.trim_end_matches('\n').matches('\n').count();
    // The nearest line above `old` that is less indented: the line opening its block.
    let depth = indent(lines.get(at)?);
    let header = (0..at)
        .rev()
        .find(|&i| !lines[i].trim().is_empty() && indent(lines[i]) < depth)?;
    let last = block_end(&lines, header);
    if defined_name(lines[header]) != Some(name) || last < old_last {
        return None;
    }
    let with_endings: Vec<&str> = text.split_inclusive('\n').collect();
    let block = with_endings[header..=last].concat();
    let block = block.trim_end_matches(['\n', '\r']).to_string();
    let (span, _) = super::nearest::numbered(&lines, header, last + 1 - header, 0);
    let new = with_docstring(
        &block,
        &reindented(new, indent(lines[header]), indent(new_first)),
    );
    Some(WholeBlock {
        old: block,
        new,
        span,
        header: lines[header].trim().to_string(),
    })
}

/// Whether every match of `old` in `text` lies inside an occurrence of `new`, which holds
/// `old`: the edit was made already, and making it again would nest `new` inside itself (the
/// 1.5B replaced `port = 80` with `port = 8080` once a round, and the file ended up with
/// `port = 80808080808080`).
fn already_made(text: &str, old: &str, new: &str) -> bool {
    if old.is_empty() || !new.contains(old) {
        return false;
    }
    let made: Vec<(usize, usize)> = text
        .match_indices(new)
        .map(|(at, m)| (at, at + m.len()))
        .collect();
    let mut matches = text.match_indices(old).peekable();
    matches.peek().is_some()
        && matches.all(|(at, m)| {
            made.iter()
                .any(|&(start, end)| at >= start && at + m.len() <= end)
        })
}

/// The shortest `new` (trimmed) that [`made_before`] takes as proof of an edit already made:
/// a short one (`return x`) may be in the file for another reason.
const MADE_BEFORE_BYTES: usize = 16;

/// An `old` the file no longer has, where it has `new` once: the edit was made already, by
/// an earlier call or round. Seed 2, 02 at 4e61f06: round 3 repeated the fix of line 5 that
/// round 2 had made, was told `no match`, and its claim was refused as resting on a failed
/// change, with the file as the objective wanted. An edit that renames a word whose old
/// spelling still stands elsewhere in the file is not in place: the rest of it is still to
/// make (seed 1, 02 at fb9124e: line 5's `recieve` found fixed, the one on line 9 left, and
/// the guide claimed fixed). Where the renamed word is gone from this file but stands in the
/// workspace's other files of its kind (looked for under `root`), the answer names them:
/// seed 1, 09 at 2637331 renamed the definition in round 1, was told in round 2 only that
/// the edit was made before, and claimed the rename done. `None` otherwise.
fn made_before(rel: &str, text: &str, old: &str, new: &str, root: Option<&Path>) -> Option<String> {
    let trimmed = new.trim();
    if trimmed.len() < MADE_BEFORE_BYTES || text.matches(trimmed).count() != 1 {
        return None;
    }
    let line = line_at(text, text.find(trimmed)?);
    if text.contains(old.trim()) && !old.trim().is_empty() {
        return None;
    }
    let left = renamed_word(old, new).filter(|(was, _)| {
        text.match_indices(was)
            .any(|(at, _)| stands_alone(text, at, was.len()))
    });
    Some(match left {
        Some((was, now)) => format!(
            "'{rel}' already reads as `new` (from line {line}), but the word `{}` this edit renames still stands in it at {}: that change is still to make there; nothing changed. To change it everywhere in the file, give `old` = `{}` and `new` = `{}` alone",
            crate::text::clip(was, 40),
            lines_of(text, was, true),
            crate::text::clip(was, 40),
            crate::text::clip(now, 40),
        ),
        None => {
            let elsewhere = root.map_or_else(String::new, |root| word_left(root, rel, text, (old, new)));
            let then = if elsewhere.is_empty() {
                ". Do not make it again: check the work, then call ralph_report".to_string()
            } else {
                format!("{elsewhere}. Do not make this edit again")
            };
            format!(
                "{ALREADY_IN_PLACE}'{rel}' already reads as `new` (from line {line}) and `old` is no longer in it: this edit was made before; nothing changed{then}"
            )
        }
    })
}

/// Why replacing `old` with `new` cannot change anything, if it cannot.
fn no_change(old: &str, new: &str) -> Option<&'static str> {
    if old.is_empty() {
        return Some("`old` is empty; give the exact text to replace");
    }
    (old == new).then_some(
        "`old` and `new` are the same; nothing would change. To change the file, write it whole with write_file (path and the complete new content)",
    )
}

/// For an edit whose `old` equals `new`: that the file already holds that text, and where,
/// when it does (the 1.5B, given a finished fix, wrote the fixed line as both `old` and `new`
/// three times), and what to put in `new` when the line must still change (seed 1, 02: it
/// also wrote the unfixed line as both, and took "that part is done" for a fix two rounds
/// running). `None` when the text is not in the file.
fn already_there(rel: &str, text: &str, old: &str) -> Option<String> {
    let line = line_at(text, text.find(old)?);
    // Seed 1, 02 again at 3771537: three rounds gave the unfixed line as both, while the
    // one-shot arm, writing the guide whole, fixed it on every seed.
    let how = if text.lines().count() <= WHOLE_FILE_LINES {
        format!("write '{rel}' whole (every line, as it must read after the change)")
    } else {
        "give in `new` the text as it must read after the change".to_string()
    };
    Some(format!(
        "{ALREADY_IN_PLACE}'{rel}' already has this text (line {line}): `old` and `new` are the same, so nothing would change. If line {line} must change, {how}. If it already reads as the objective needs, that part is done: do not edit it again; check the work, then call ralph_report"
    ))
}

/// The most lines of a block the answer to a header-only edit shows.
const BLOCK_LINES: usize = 40;

/// Why an edit whose `old` is only the first line of a block (a `def …:` or `fn … {` line
/// with an indented body under it) and whose `new` is that line with a body, under it or
/// after it on the same line, is refused: made as asked, the new body goes in ahead of the
/// block's own, which all stays. The 1.5B did this to replace a function (seed 1, 05, twice:
/// the docstring ended up below the new code and the doctest ran no test; 06, three times:
/// `median` kept its old `return` under the new one), and wrote the body on the `def` line
/// itself (06 and 08 at b315e69: `def median(values):    return …` above the old body, an
/// IndentationError). The answer shows the block, to copy whole as `old`. `None` for any
/// other edit, a comment added after the header included.
fn header_only(rel: &str, text: &str, old: &str, new: &str) -> Option<String> {
    let header = old.trim_end_matches('\n');
    let opens = header.trim_end().ends_with(':') || header.trim_end().ends_with('{');
    let added = new.strip_prefix(header)?.trim_start_matches('\r');
    let same_line = !added.starts_with('\n');
    let comment = ["#", "//"]
        .iter()
        .any(|c| added.trim_start().starts_with(c));
    if header.contains('\n') || !opens || added.trim().is_empty() || (same_line && comment) {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let first = text[..text.find(old)?].matches('\n').count();
    if lines.get(first)?.trim() != header.trim() {
        return None;
    }
    let last = super::blocks::block_end(&lines, first);
    if last == first {
        return None;
    }
    let (span, shown) = numbered(&lines, first, last + 1 - first, BLOCK_LINES);
    let adds = if same_line {
        "puts a body after it on the same line, so that body would go in ahead of the block's own lines, which would all stay under it"
    } else {
        "adds lines under it, so they would go in ahead of the block's own lines, which would all stay"
    };
    Some(format!(
        "nothing changed: `old` is only the first line of the block at {span} of '{rel}', and `new` {adds}. The block:\n{shown}To replace it, give as `old` the whole block copied from these lines and as `new` all of it as it must read; to add lines inside it, give as `old` the line they go after and as `new` that line followed by them"
    ))
}

fn mismatch(rel: &str, text: &str, (old, new): (&str, &str), found: usize, count: usize) -> String {
    if found == 0 {
        return match renamed_here(text, old, new) {
            Some(hint) => {
                format!("no match for `old` in '{rel}' (expected {count}); nothing changed. {hint}")
            }
            None => not_found(rel, text, old, count),
        };
    }
    format!(
        "`old` matches {found} times in '{rel}' but count is {count}; nothing changed. Include more surrounding text to pick the right one, or set count={found} to replace them all"
    )
}

/// Where the word a missing `old` renames stands in the file, and how to rename it there:
/// the 1.5B, renaming `get_usr`, gave `from shop.users import get_usr` for a file that has
/// `from shop import users` and `users.get_usr(user_id)` (seed 1, 09), and was told only
/// that nothing matched.
fn renamed_here(text: &str, old: &str, new: &str) -> Option<String> {
    let (was, now) = renamed_word(old, new)?;
    let at = line_numbers(text, was, true);
    if at.is_empty() {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let shown: String = at
        .iter()
        .take(SHOWN_LINES)
        .map(|line| format!("{line:>5} | {}\n", lines.get(line - 1).unwrap_or(&"")))
        .collect();
    Some(format!(
        "The word `{was}` this edit renames stands in the file at {}:\n{shown}To rename it everywhere in this file, give `old` = `{was}` and `new` = `{now}` alone.",
        lines_of(text, was, true)
    ))
}

/// A file of at most this many lines is best changed by writing it whole.
const WHOLE_FILE_LINES: usize = 150;
/// The most lines of the file the nearest text shows.
const SHOWN_LINES: usize = 12;

/// No match: says so, points out CRLF endings or surrounding whitespace, and shows the lines
/// of the file nearest to `old` (with a note when they differ from it only in whitespace).
fn not_found(rel: &str, text: &str, old: &str, count: usize) -> String {
    let mut message = format!("no match for `old` in '{rel}' (expected {count}); nothing changed");
    if text.contains("\r\n") && !old.contains('\r') {
        message.push_str(" (this file uses CRLF line endings)");
    } else if text.contains(old.trim()) && !old.trim().is_empty() {
        message.push_str(" (the text matches when leading/trailing whitespace is dropped)");
    }
    message.push('.');
    let lines: Vec<&str> = text.lines().collect();
    match nearest(&lines, old) {
        Some(near) => {
            let (span, shown) = numbered(&lines, near.start, near.len, SHOWN_LINES);
            message.push_str(&format!(
                "\nThe nearest text in the file, {span} ({:.0}% alike):\n{shown}",
                near.score * 100.0
            ));
            if !near.whitespace_only.is_empty() {
                let numbers: Vec<String> = near
                    .whitespace_only
                    .iter()
                    .map(|i| (i + 1).to_string())
                    .collect();
                message.push_str(&format!(
                    "Line(s) {} differ from `old` only in whitespace (indentation, tabs or spaces): copy them exactly.\n",
                    numbers.join(", ")
                ));
            }
        }
        None => message.push_str(" Nothing in the file is close to it: read the file first.\n"),
    }
    if lines.len() <= WHOLE_FILE_LINES {
        message.push_str(&format!(
            "Copy `old` exactly from the file, or, simpler for a file of {} lines, write it whole with write_file (path and the complete new content).",
            lines.len()
        ));
    } else {
        message.push_str("Copy `old` exactly from the file, whitespace and indentation included.");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocks_first_line_given_with_a_new_body_under_it_is_refused_showing_the_block() {
        // Seed 1, 06: `old` the `def` line, `new` it with a body; made, the old body stays.
        let stats = "\"\"\"Tiny statistics helpers.\"\"\"\n\n\ndef mean(values):\n    return sum(values) / len(values)\n\n\ndef median(values):\n    \"\"\"The middle value.\"\"\"\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return ordered[middle]\n";
        let new = "def median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]";
        let why = header_only("stats.py", stats, "def median(values):", new).unwrap();
        assert!(
            why.starts_with(
                "nothing changed: `old` is only the first line of the block at lines 8-12 of 'stats.py'"
            ),
            "{why}"
        );
        assert!(
            why.contains("    8 | def median(values):")
                && why.contains("   12 |     return ordered[middle]")
                && !why.contains("mean"),
            "{why}"
        );
        // A brace block's closing line is part of it.
        let rust = "fn leap(y: u32) -> bool {\n    y % 400 == 0\n}\n\nfn main() {}\n";
        let why = header_only(
            "src/lib.rs",
            rust,
            "fn leap(y: u32) -> bool {",
            "fn leap(y: u32) -> bool {\n    y % 4 == 0\n",
        )
        .unwrap();
        assert!(why.contains("lines 1-3 of 'src/lib.rs'"), "{why}");
        // The body written on the header's own line (06 and 08 at b315e69): made, the old
        // body would sit indented under a one-line def.
        let why = header_only(
            "stats.py",
            stats,
            "def median(values):",
            "def median(values):    return sorted(values)[len(values) // 2]",
        )
        .unwrap();
        assert!(
            why.contains("lines 8-12 of 'stats.py'") && why.contains("on the same line"),
            "{why}"
        );
        // Any other edit is left to the usual rules: a line that opens no block, a header
        // with nothing under it, a `new` that does not start with `old` or adds nothing, and
        // an `old` of several lines.
        let others = [
            (
                stats,
                "    middle = len(ordered) // 2",
                "    middle = len(ordered) // 2\n    x = 1",
            ),
            ("class A:\n", "class A:", "class A:\n    pass"),
            (
                stats,
                "def median(values):",
                "def middle(values):\n    pass",
            ),
            (stats, "def median(values):", "def median(values):\n"),
            (
                stats,
                "def median(values):",
                "def median(values):  # the middle",
            ),
            (
                stats,
                "def median(values):\n    \"\"\"The middle value.\"\"\"",
                "def median(values):\n    \"\"\"The middle.\"\"\"\n    x = 1",
            ),
        ];
        for (text, old, new) in others {
            assert_eq!(
                header_only("a.py", text, old, new),
                None,
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn a_new_definition_given_for_its_own_body_replaces_the_whole_block() {
        // The demo at 4bc40ff, seed 1, round 2, as the 1.5B wrote it.
        let slug = "\"\"\"Turn titles into URL slugs.\"\"\"\n\n\ndef slugify(text):\n    raise NotImplementedError\n";
        let new = "def slugify(text):\n    return text.lower().replace(' ', '-')";
        let block = whole_block(slug, "raise NotImplementedError", new).unwrap();
        assert_eq!(
            block,
            WholeBlock {
                old: "def slugify(text):\n    raise NotImplementedError".into(),
                new: new.into(),
                span: "lines 4-5".into(),
                header: "def slugify(text):".into(),
            }
        );
        // A method keeps its indentation.
        let class = "class A:\n    def size(self):\n        return 1\n\n    def other(self):\n        pass\n";
        let block =
            whole_block(class, "        return 1", "def size(self):\n    return 2").unwrap();
        assert_eq!(block.old, "    def size(self):\n        return 1");
        assert_eq!(block.new, "    def size(self):\n        return 2");
        // Another name, a `new` that is not a definition, or an `old` that is the definition
        // line itself are left to the usual rules.
        for (old, new) in [
            (
                "raise NotImplementedError",
                "def other(text):\n    return text",
            ),
            ("raise NotImplementedError", "return text.lower()"),
            ("def slugify(text):\n    raise NotImplementedError", new),
            (
                "\"\"\"Turn titles into URL slugs.\"\"\"",
                "def slugify(text):\n    pass",
            ),
        ] {
            assert_eq!(whole_block(slug, old, new), None, "{old:?}");
        }
    }

    #[test]
    fn an_edit_made_before_is_said_to_be_in_place() {
        // Seed 2, 02 at 4e61f06, round 3: line 5 fixed in round 2, the fix asked again.
        let guide = "# Guide\n\nRun `sync` to receive new messages.\n";
        let why = made_before(
            "docs/guide.md",
            guide,
            "Run `sync` to recieve new messages.",
            "Run `sync` to receive new messages.",
            None,
        )
        .unwrap();
        assert!(
            why.starts_with(ALREADY_IN_PLACE) && why.contains("from line 3"),
            "{why}"
        );
        // A short `new`, one found twice, or an `old` still there are no proof.
        assert_eq!(made_before("a", "x = 1\n", "x = 2", "x = 1", None), None);
        let twice = "Run `sync` to receive new messages.\n".repeat(2);
        assert_eq!(
            made_before(
                "a",
                &twice,
                "Run `sync` to recieve it",
                "Run `sync` to receive new messages.",
                None,
            ),
            None
        );
        // Seed 1, 02 at fb9124e: line 3 fixed, the same misspelling left on line 5.
        let half = format!("{guide}\nFilters sort messages as you recieve them.\n");
        let why = made_before(
            "docs/guide.md",
            &half,
            "Run `sync` to recieve new messages.",
            "Run `sync` to receive new messages.",
            None,
        )
        .unwrap();
        assert!(!why.starts_with(ALREADY_IN_PLACE), "{why}");
        assert_eq!(
            why,
            "'docs/guide.md' already reads as `new` (from line 3), but the word `recieve` this edit renames still stands in it at line 5: that change is still to make there; nothing changed. To change it everywhere in the file, give `old` = `recieve` and `new` = `receive` alone"
        );
    }

    #[test]
    fn only_a_word_standing_alone_everywhere_is_replaced_everywhere() {
        let text = "get(x)\nlet y = get(z);\n";
        assert!(word_everywhere(text, "get", "fetch"));
        assert!(word_everywhere("a-b a-b", "a-b", "c"));
        // Inside a longer word, with spaces, or a `new` that is not a word.
        assert!(!word_everywhere("get target", "get", "fetch"));
        assert!(!word_everywhere("get get_x", "get", "fetch"));
        assert!(!word_everywhere("a b a b", "a b", "c"));
        assert!(!word_everywhere("get get", "get", "fetch it"));
        assert!(!word_everywhere("get get", "get", ""));
        assert_eq!(lines_of(text, "get", false), "lines 1, 2");
        assert_eq!(lines_of("get get", "get", false), "line 1");
        assert_eq!(lines_of("target\nget\n", "get", true), "line 2");
    }

    #[test]
    fn a_rename_made_in_one_place_says_where_the_word_is_left() {
        assert_eq!(
            renamed_word("get_usr(user_id)", "get_user(user_id)"),
            Some(("get_usr", "get_user"))
        );
        assert_eq!(
            renamed_word("to recieve new", "to receive new"),
            Some(("recieve", "receive"))
        );
        // Two words changed, a word added, a number changed, or nothing: not a rename.
        assert_eq!(renamed_word("a(b)", "c(d)"), None);
        assert_eq!(renamed_word("f(x)", "f(x, y)"), None);
        assert_eq!(renamed_word("port = 80", "port = 8080"), None);
        assert_eq!(renamed_word("a b", "a b"), None);
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        std::fs::create_dir_all(dir.join("shop")).unwrap();
        std::fs::write(
            dir.join("shop/cli.py"),
            "from shop.users import get_usr\nget_usr(1)\n",
        )
        .unwrap();
        std::fs::write(dir.join("shop/README.md"), "get_usr\n").unwrap();
        std::fs::write(dir.join("shop/users.py"), "def get_usrs():\n").unwrap();
        let updated =
            "from shop.users import get_usr\n\nget_user(user_id)\nreturn get_usr(o)\nget_usrs()\n";
        std::fs::write(dir.join("shop/orders.py"), updated).unwrap();
        let left = word_left(
            dir,
            "shop/orders.py",
            updated,
            ("get_usr(user_id)", "get_user(user_id)"),
        );
        assert_eq!(
            left,
            ". The word `get_usr` this change renamed still stands in 'shop/orders.py' at lines 1, 4; to change it everywhere in a file, give that file's path with `old` = `get_usr` and `new` = `get_user` alone"
        );
        // Done here, the other files of its kind are named.
        let done = "from shop.users import get_user\nget_usrs()\n";
        assert_eq!(
            word_left(dir, "shop/orders.py", done, ("get_usr(1)", "get_user(1)")),
            ". The word `get_usr` this change renamed still stands in 'shop/cli.py' at lines 1, 2; to change it everywhere in a file, give that file's path with `old` = `get_usr` and `new` = `get_user` alone"
        );
        // Gone from the file and the others of its kind (a longer name that starts with it is
        // another word, a Markdown file another kind): nothing.
        std::fs::write(dir.join("shop/cli.py"), "get_user(1)\n").unwrap();
        assert_eq!(
            word_left(
                dir,
                "shop/orders.py",
                "get_user(1)\nget_usrs()\n",
                ("get_usr(1)", "get_user(1)")
            ),
            ""
        );
    }

    #[test]
    fn mismatch_messages_say_how_many() {
        let m = mismatch("a.rs", "x x x", ("x", ""), 3, 1);
        assert!(
            m.contains("matches 3 times") && m.contains("count=3"),
            "{m}"
        );
        let m = mismatch("a.rs", "fn main() {}", ("  fn main()", ""), 0, 1);
        assert!(
            m.contains("no match") && m.contains("whitespace is dropped"),
            "{m}"
        );
    }

    const APP: &str = "import sys\n\n\ndef add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\n\nif __name__ == \"__main__\":\n    print(add(1, 2))\n";

    #[test]
    fn a_missing_old_that_renames_a_word_shows_where_the_word_stands() {
        let billing = "\"\"\"Invoices.\"\"\"\n\nfrom shop import users\n\n\ndef invoice(user_id):\n    user = users.get_usr(user_id)\n    return user\n";
        let m = mismatch(
            "shop/billing.py",
            billing,
            (
                "from shop.users import get_usr",
                "from shop.users import get_user",
            ),
            0,
            1,
        );
        assert_eq!(
            m,
            "no match for `old` in 'shop/billing.py' (expected 1); nothing changed. The word `get_usr` this edit renames stands in the file at line 7:\n    7 |     user = users.get_usr(user_id)\nTo rename it everywhere in this file, give `old` = `get_usr` and `new` = `get_user` alone."
        );
        // A word the file does not have: the nearest lines, as for any missing `old`.
        let m = mismatch(
            "shop/billing.py",
            billing,
            ("get_usx(1)", "get_user(1)"),
            0,
            1,
        );
        assert!(!m.contains("this edit renames"), "{m}");
    }

    #[test]
    fn a_missing_old_shows_the_nearest_lines_with_their_numbers() {
        let old = "def add(a, b):\n    return a + c\n";
        let m = mismatch("app.py", APP, (old, ""), 0, 1);
        assert!(m.starts_with("no match for `old` in 'app.py'"), "{m}");
        assert!(
            m.contains("lines 4-5 (")
                && m.contains("    4 | def add(a, b):\n    5 |     return a - b\n"),
            "{m}"
        );
        assert!(!m.contains("def sub"), "{m}");
        assert!(!m.contains("only in whitespace"), "{m}");
        assert!(m.contains("write it whole with write_file"), "{m}");
    }

    #[test]
    fn whitespace_only_differences_are_pointed_out() {
        // The model dropped the indentation of the body.
        let old = "def sub(a, b):\nreturn a - b";
        let m = mismatch("app.py", APP, (old, ""), 0, 1);
        assert!(m.contains("lines 8-9 (100% alike)"), "{m}");
        assert!(
            m.contains("Line(s) 9 differ from `old` only in whitespace"),
            "{m}"
        );
        // Tabs for spaces, one line.
        let near = nearest(&APP.lines().collect::<Vec<_>>(), "\treturn a - b").unwrap();
        assert_eq!(
            (near.start, near.len, near.whitespace_only),
            (4, 1, vec![4])
        );
    }

    #[test]
    fn nothing_alike_shows_no_lines_and_the_window_is_bounded() {
        let m = mismatch("app.py", APP, ("class Zebra(Exception): pass", ""), 0, 1);
        assert!(m.contains("Nothing in the file is close"), "{m}");
        assert!(!m.contains(" | "), "{m}");
        // A long `old` shows at most SHOWN_LINES lines, and a long file is not offered whole.
        let text: String = (1..=400).map(|i| format!("value_{i} = {i}\n")).collect();
        let old: String = (100..=130)
            .map(|i| format!("value_{i} = {}\n", i + 1))
            .collect();
        let m = mismatch("v.py", &text, (&old, ""), 0, 1);
        assert!(m.contains("lines 100-130"), "{m}");
        assert!(m.contains("  100 | value_100 = 100\n"), "{m}");
        assert!(
            m.contains("(19 more lines)") && !m.contains("  112 |"),
            "{m}"
        );
        assert!(!m.contains("write_file"), "{m}");
    }

    #[test]
    fn an_edit_already_made_is_not_made_again() {
        // The 1.5B's round-after-round edit of a port.
        assert!(already_made(
            "[server]\nport = 8080\n",
            "port = 80",
            "port = 8080"
        ));
        assert!(already_made(
            "x = greet(name)!\n",
            "greet(name)",
            "x = greet(name)!"
        ));
        // Not made yet, or made in one place and still to make in another.
        assert!(!already_made("port = 80\n", "port = 80", "port = 8080"));
        assert!(!already_made(
            "port = 8080\nport = 80\n",
            "port = 80",
            "port = 8080"
        ));
        // `new` does not hold `old`: an ordinary edit.
        assert!(!already_made("a = 1\n", "a = 1", "a = 2"));
        assert!(!already_made("", "a", "ab"));
    }

    #[test]
    fn an_old_equal_to_new_points_to_write_file() {
        let why = no_change("x = 1", "x = 1").unwrap();
        assert!(
            why.contains("are the same; nothing would change") && why.contains("write_file"),
            "{why}"
        );
        assert!(no_change("", "x").unwrap().contains("empty"));
        assert_eq!(no_change("x = 1", "x = 2"), None);
    }

    #[test]
    fn an_old_equal_to_new_that_the_file_holds_says_where_it_is() {
        let text = "# Guide\n\nRun `sync` to receive mail.\n";
        let why = already_there("docs/guide.md", text, "to receive mail").unwrap();
        assert!(why.starts_with(ALREADY_IN_PLACE), "{why}");
        assert!(
            why.contains("'docs/guide.md' already has this text (line 3)"),
            "{why}"
        );
        assert!(why.contains("do not edit it again"), "{why}");
        let change = why
            .find("If line 3 must change, write 'docs/guide.md' whole (every line, as it must read after the change)")
            .unwrap();
        assert!(change < why.find("that part is done").unwrap(), "{why}");
        // A file too long to write whole is changed through `new`.
        let long = format!(
            "{}Run `sync` to receive mail.\n",
            "x\n".repeat(WHOLE_FILE_LINES)
        );
        let why = already_there("docs/guide.md", &long, "to receive mail").unwrap();
        assert!(
            why.contains("If line 151 must change, give in `new` the text as it must read"),
            "{why}"
        );
        assert_eq!(
            already_there("docs/guide.md", text, "to recieve mail"),
            None
        );
    }
}
