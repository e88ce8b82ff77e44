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
use super::nearest::{nearest, numbered};
use super::path::{open_root, Access};
use super::ALREADY_IN_PLACE;
use super::{Tool, ToolContext, ToolError, ToolSpec};
use crate::protocol::policy::{ApprovalPolicy, SandboxMode};
use crate::protocol::tool::WRITE_FILE;

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

impl Tool for WriteFile {
    /// The file its `path` names.
    fn writes(&self, arguments: &Value, root: &std::path::Path) -> super::Writes {
        args::written_file(arguments, root)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: WRITE_FILE.into(),
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
        let given = args::string(arguments, "content")?;
        let (given, header) = without_read_header(given, &target.rel);
        let (content, stray) = without_stray_fence(given);
        if let Some(echo) = echoed_result(content) {
            return Err(ToolError::new(format!(
                "nothing written: the content starts with `{}`, which is what ralph-tui answered an earlier call, not a line of '{}'. Write the file's own lines: its whole new content",
                crate::text::clip(echo, 120),
                target.rel
            )));
        }
        let root = open_root(ctx.root)?;
        let (existed, before) = current(&root, &target)?;
        let asked = admitted(ctx, &target.rel, existed, before.as_deref(), content)?;
        let content = asked
            .as_ref()
            .map_or(content, |(renamed, _)| renamed.as_str());
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
        out.push_str(&taken_otherwise(
            asked.as_ref().map(|(_, lines)| lines.as_slice()),
            header,
            stray,
        ));
        if let Some(gone) = before
            .as_deref()
            .and_then(|b| dropped_definitions(b, content))
        {
            out.push_str(&gone);
        }
        if let Some(before) = before.as_deref() {
            out.push_str(&super::words::word_left_after_write(
                ctx.root,
                &target.rel,
                before,
                content,
            ));
        }
        Ok(out)
    }
}

/// Why `content` is not written over the file (`before`, its text, where it `existed` and is
/// known), or, when the write makes the objective's rename in part, the content renamed
/// wherever the word stands and the lines where it did.
fn admitted(
    ctx: &ToolContext<'_>,
    rel: &str,
    existed: bool,
    before: Option<&str>,
    content: &str,
) -> Result<Option<(String, Vec<usize>)>, ToolError> {
    if let Some(why) = before.and_then(|b| {
        refused_over(rel, b, content)
            .or_else(|| super::words::slips_beside_rename(ctx.renames, rel, b, content))
    }) {
        return Err(ToolError::new(why));
    }
    let asked = before.and_then(|b| super::words::asked_rename_written(ctx.renames, b, content));
    let content = asked
        .as_ref()
        .map_or(content, |(renamed, _)| renamed.as_str());
    // A file too large to compare, or not UTF-8, is not known to parse now: not gated.
    if !existed || before.is_some() {
        if let Some(broken) = super::syntax::refusal(ctx, rel, before, content) {
            return Err(ToolError::new(broken));
        }
    }
    Ok(asked)
}

/// What the answer says of the content written other than as given: the objective's rename
/// made at the lines it left, read_file's heading left out, a stray closing fence left out.
fn taken_otherwise(renamed: Option<&[usize]>, header: Option<&str>, stray: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(lines) = renamed {
        out.push_str(&format!(
            ". The rename the objective asks for, which this content made in part, was made at its other places too ({})",
            super::words::line_list(lines)
        ));
    }
    if let Some(header) = header {
        out.push_str(&format!(
            ". Its first line, `{}`, is read_file's heading, not a line of the file, so it was left out",
            crate::text::clip(header, 80)
        ));
    }
    if let Some(fence) = stray {
        out.push_str(&format!(
            ". Its last line, `{fence}`, closed no block in the file, so it was taken for \
             markup around the content and left out"
        ));
    }
    out
}

/// Whether the file `target` exists, and its text when it is UTF-8 within
/// [`COMPARED_BYTES`] (what a new content is compared with).
fn current(
    root: &super::confined::Root,
    target: &super::path::Resolved,
) -> Result<(bool, Option<String>), ToolError> {
    match root.open_read(&target.path) {
        Ok(Opened::File { file, len }) => Ok((
            true,
            super::confined::read_bounded(file, len, COMPARED_BYTES)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok()),
        )),
        Ok(Opened::Dir(_)) | Err(Refusal::Directory) => Err(ToolError::new(format!(
            "'{}' is a directory; give a file path",
            target.rel
        ))),
        Err(Refusal::NotFound) => Ok((false, None)),
        Err(e) => Err(e.about(&target.rel)),
    }
}

/// Why `content` is not written over `before`, the file's text: it is that text already, one
/// part of it, or it defines nothing where the file defines something.
fn refused_over(rel: &str, before: &str, content: &str) -> Option<String> {
    if before == content {
        return Some(format!(
            "{ALREADY_IN_PLACE}'{rel}' already has exactly this content ({} lines); nothing changed. If it is what the objective needs, that part is done: do not write it again; check the work, then call ralph_report",
            content.lines().count()
        ));
    }
    part_for_whole(rel, before, content)
        .or_else(|| loses_every_definition(rel, before, content))
        .or_else(|| drops_a_used_name(rel, before, content))
}

/// Most dropped names a refusal names.
const NAMED_NAMES: usize = 3;

/// Why a Python file written whole is refused when its new content drops a name the file
/// bound at its top level (a table, an import, a function) and still uses it: run, it would
/// stop at a `NameError` (seed 3, 09 at 1b2c3f5: `USERS` dropped from `shop/users.py`, which
/// the 1.5B then blamed on the rename it was making). The answer names each such line, so the
/// next write can keep it.
fn drops_a_used_name(rel: &str, before: &str, after: &str) -> Option<String> {
    if !rel.ends_with(".py") {
        return None;
    }
    let dropped = super::pynames::dropped_but_used(before, after, NAMED_NAMES);
    if dropped.is_empty() {
        return None;
    }
    let lines: Vec<String> = dropped
        .iter()
        .map(|(name, at, line)| format!("`{name}` (line {at}: `{}`)", crate::text::clip(line, 80)))
        .collect();
    Some(format!(
        "nothing written: this content uses {}, which '{rel}' defines and this content no longer does, so the file would stop with a NameError. write_file replaces the whole file: give every line of the file as it must read, those lines included, or change one part with edit_file",
        lines.join(", ")
    ))
}

/// `content` without a first line that is `read_file`'s heading for this path
/// (`docs/guide.md (lines 1-16 of 16):`), and that line: seed 3, 02 at e7773b0 wrote the
/// guide whole with the heading of the read before as its first line.
fn without_read_header<'c>(content: &'c str, path: &str) -> (&'c str, Option<&'c str>) {
    let Some((first, rest)) = content.split_once('\n') else {
        return (content, None);
    };
    let heading = first
        .trim_end()
        .strip_prefix(path)
        .and_then(|r| r.strip_prefix(" (lines "))
        .and_then(|r| r.strip_suffix("):"))
        .and_then(|r| r.split_once(" of "))
        .is_some_and(|(span, total)| {
            let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
            digits(total)
                && span
                    .split_once('-')
                    .is_some_and(|(a, b)| digits(a) && digits(b))
        });
    if heading && !path.is_empty() {
        (rest, Some(first.trim_end()))
    } else {
        (content, None)
    }
}

/// `content` without a fence line that ends it and closes no block in it (the 1.5B wrote a
/// file whole with a trailing ```` ``` ```` or ```` ```markdown ```` line, the end of the
/// listing it had in mind), and that line; `content` itself when its fences pair up.
fn without_stray_fence(content: &str) -> (&str, Option<&str>) {
    let is_fence = |line: &str| {
        let t = line.trim();
        t.starts_with("```")
            && t.trim_start_matches('`')
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_+-.".contains(c))
    };
    let body = content.trim_end();
    let start = body.rfind('\n').map_or(0, |i| i + 1);
    let last = &body[start..];
    if !is_fence(last) || content.lines().filter(|l| is_fence(l)).count() % 2 == 0 {
        return (content, None);
    }
    (&content[..start], Some(last.trim()))
}

/// The first line of `content` when it is one of ralph-tui's own answers to a file tool
/// (`replaced 'guide.md' (392 bytes, 16 lines)`, `replaced 3 occurrence(s) in 'guide.md'`,
/// `not run again: …`): the 1.5B, its write answered, wrote that answer as the file's next
/// content, and then built on it, until the file held nothing of its own.
fn echoed_result(content: &str) -> Option<&str> {
    let first = content.lines().map(str::trim).find(|l| !l.is_empty())?;
    let wrote = (first.starts_with("replaced '") || first.starts_with("created '"))
        && first.contains(" bytes, ")
        && first.contains(" lines)");
    let edited = first.starts_with("replaced ") && first.contains(" occurrence(s) in '");
    let refused = [
        "not run again: ",
        "no match for `old` in '",
        "`old` matches ",
        ALREADY_IN_PLACE,
        "nothing written: ",
    ]
    .iter()
    .any(|own| first.starts_with(own));
    (wrote || edited || refused).then_some(first)
}

/// A replaced file of fewer lines than this is never taken to be cut down to one part.
const PART_MIN_LINES: usize = 6;
/// New content of at most this share of the file's lines may be a part of it.
const PART_MAX_SHARE: usize = 4;
/// New content this alike to a window of the file, line by line, is that window rewritten.
const PART_MIN_SCORE: f64 = 0.8;

/// Why a write of `content` over `before` is refused as one part of the file written as if it
/// were the whole: `before` has at least [`PART_MIN_LINES`] lines, `content` at most a
/// [`PART_MAX_SHARE`]th of them, and its lines are at least [`PART_MIN_SCORE`] alike to a
/// window of the file's. The 1.5B, its edit of a line refused, wrote that one line as the
/// whole of a 16-line guide (seed 1, 02), and the other 15 were gone. The answer shows the
/// window, so the worker can make it an `edit_file` of exactly those lines.
fn part_for_whole(rel: &str, before: &str, content: &str) -> Option<String> {
    let file: Vec<&str> = before.lines().collect();
    let given = content.lines().count();
    let blank = content.lines().all(|l| l.trim().is_empty());
    if file.len() < PART_MIN_LINES || blank || given * PART_MAX_SHARE > file.len() {
        return None;
    }
    let near = nearest(&file, content.trim_matches('\n')).filter(|n| n.score >= PART_MIN_SCORE)?;
    let (span, shown) = numbered(&file, near.start, near.len, file.len());
    Some(format!(
        "nothing written: write_file replaces the whole file, and this content is {} line(s) where '{rel}' has {}: it reads like {span} of the file ({:.0}% alike), so the other lines would be lost. The file's {span}:\n{shown}To change only that, call edit_file with `old` copied from these lines and `new` as they must read; to replace the file, give its whole new content",
        given,
        file.len(),
        near.score * 100.0
    ))
}

/// Most bytes of a replaced file compared with its new content.
const COMPARED_BYTES: u64 = 256 * 1024;
/// Most dropped lines named.
const NAMED_DROPS: usize = 4;

/// A note naming the definitions of `before` (`def f`, `class C`, `fn f`, `function f`, ...:
/// an unindented line that opens with a definition keyword and a name) that `after` no
/// longer defines at all. Small models asked for a whole file often write back only the
/// part they changed; the note lets the next turn see that it deleted the rest. A changed
/// line of prose or configuration is not a definition and is never named.
fn dropped_definitions(before: &str, after: &str) -> Option<String> {
    let defined: std::collections::HashSet<String> = after.lines().filter_map(definition).collect();
    let mut gone: Vec<&str> = Vec::new();
    for line in before.lines() {
        if let Some(key) = definition(line) {
            if !defined.contains(&key) && !gone.contains(&line.trim_end()) {
                gone.push(line.trim_end());
            }
        }
    }
    if gone.is_empty() {
        return None;
    }
    Some(format!(
        ". The new content no longer defines {}, which the file had. If that was not meant, write the whole file again with them",
        named(&gone)
    ))
}

/// At most [`NAMED_DROPS`] definitions in backticks, then how many more there are:
/// `` `def a`, `def b` and 3 more ``.
fn named(definitions: &[impl AsRef<str>]) -> String {
    let shown: Vec<String> = definitions
        .iter()
        .take(NAMED_DROPS)
        .map(|d| format!("`{}`", crate::text::clip(d.as_ref(), 80)))
        .collect();
    let more = definitions.len().saturating_sub(NAMED_DROPS);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Why a content that defines nothing is not written over a file that defines something:
/// written whole it would lose every definition (seed 1 at 133b4c6, 08: the 1.5B wrote the
/// one line `total: 14.60` over a 20-line `report.py` holding two functions; 07: four
/// numbered lines over `src/lib.rs`). `None` when the content defines something too.
fn loses_every_definition(rel: &str, before: &str, after: &str) -> Option<String> {
    if after.lines().any(|l| definition(l).is_some()) {
        return None;
    }
    let mut defined: Vec<String> = Vec::new();
    for key in before.lines().filter_map(definition) {
        if !defined.contains(&key) {
            defined.push(key);
        }
    }
    if defined.is_empty() {
        return None;
    }
    Some(format!(
        "nothing written: '{rel}' ({} lines) defines {}, and this content ({} lines) defines nothing, so written whole it would lose them all. write_file replaces the whole file: give every line of the file as it must read, with the change made, or change one part with edit_file",
        before.lines().count(),
        named(&defined),
        after.lines().count()
    ))
}

/// `keyword name` when `line` is an unindented definition (`def mean(values):` → `def mean`).
fn definition(line: &str) -> Option<String> {
    const KEYWORDS: [&str; 12] = [
        "def",
        "class",
        "async",
        "fn",
        "pub",
        "function",
        "func",
        "struct",
        "enum",
        "impl",
        "interface",
        "type",
    ];
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let mut words = line.split(|c: char| !(c.is_alphanumeric() || c == '_'));
    let first = words.next()?;
    if !KEYWORDS.contains(&first) {
        return None;
    }
    // `pub fn name`, `async def name`: the keyword and the first name after the modifiers.
    let name = words.find(|w| !w.is_empty() && !KEYWORDS.contains(w))?;
    Some(format!("{first} {name}"))
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
    use super::{
        dropped_definitions, echoed_result, loses_every_definition, part_for_whole, refused_over,
        without_stray_fence,
    };

    #[test]
    fn a_python_file_written_whole_without_a_name_it_still_uses_is_refused() {
        let users = "\"\"\"Users.\"\"\"\n\nUSERS = {1: \"Ada\"}\n\n\ndef get_usr(user_id):\n    return USERS[user_id]\n";
        let renamed = "def get_user(user_id):\n    return USERS[user_id]";
        let refused = refused_over("shop/users.py", users, renamed).unwrap();
        assert!(
            refused.starts_with("nothing written: this content uses `USERS` (line 3: `USERS = {1: \"Ada\"}`), which 'shop/users.py' defines and this content no longer does"),
            "{refused}"
        );
        let kept = users.replace("def get_usr", "def get_user");
        assert_eq!(refused_over("shop/users.py", users, &kept), None);
        // Not Python: not read as Python.
        assert_eq!(refused_over("users.txt", users, renamed), None);
    }

    #[test]
    fn content_that_defines_nothing_is_not_written_over_a_file_of_definitions() {
        let report = "\"\"\"Reports.\"\"\"\n\n\ndef format_cents(cents):\n    return f\"{cents // 100}.{cents % 100:02d}\"\n\n\ndef stock_report(store):\n    return \"total\"\n";
        let why = loses_every_definition("inventory/report.py", report, "total: 14.60").unwrap();
        assert_eq!(
            why,
            "nothing written: 'inventory/report.py' (9 lines) defines `def format_cents`, `def stock_report`, and this content (1 lines) defines nothing, so written whole it would lose them all. write_file replaces the whole file: give every line of the file as it must read, with the change made, or change one part with edit_file"
        );
        // A content that defines something, or a file that defined nothing, is written.
        assert_eq!(
            loses_every_definition("r.py", report, "def stock_report(store):\n    return 1\n"),
            None
        );
        assert_eq!(loses_every_definition("notes.md", "# Notes\n", "x\n"), None);
    }

    #[test]
    fn content_that_starts_with_a_file_tools_answer_is_taken_for_an_echo() {
        // As the 1.5B wrote them, after a write and an edit were answered.
        for echo in [
            "replaced 'docs/guide.md' (392 bytes, 16 lines)",
            "replaced 'docs/guide.md' (44 bytes, 1 lines)\n\n# Mailbox user guide\n",
            "\ncreated 'hello.txt' (14 bytes, 1 lines)",
            "replaced 3 occurrence(s) in 'docs/guide.md'",
            "not run again: this exact write_file call already succeeded",
        ] {
            assert!(echoed_result(echo).is_some(), "{echo}");
        }
        // A file's own lines, even about replacing things, are written.
        for own in [
            "# Mailbox user guide\n",
            "replaced the old parser (see CHANGES)\n",
            "created 'x' by hand\n",
            "",
        ] {
            assert_eq!(echoed_result(own), None, "{own}");
        }
    }

    #[test]
    fn one_part_of_a_file_written_as_its_whole_is_refused() {
        // Seed 1, 02: line 5 of the 16-line guide, fixed, written as the whole file.
        let guide = "# Mailbox user guide\n\n## Getting started\n\nRun `mailbox sync` to recieve new messages. The first sync can take a while.\n\n## Filters\n\nFilters sort messages as you recieve them.\n\n    from:*@example.com -> Work\n\n## Notifications\n\nYou can choose to recieve a notification.\nTurn them off with `mailbox notify off`.\n";
        let line = "Run `mailbox sync` to receive new messages. The first sync can take a while.";
        let why = part_for_whole("docs/guide.md", guide, line).unwrap();
        assert!(why.starts_with("nothing written: "), "{why}");
        assert!(
            why.contains(
                "this content is 1 line(s) where 'docs/guide.md' has 16: it reads like line 5"
            ),
            "{why}"
        );
        assert!(
            why.contains("    5 | Run `mailbox sync` to recieve new messages.")
                && why.contains("call edit_file"),
            "{why}"
        );
        // Two lines of it are a part too, shown as a window.
        let two = "## Filters\n\nFilters sort messages as you receive them.\n";
        let why = part_for_whole("docs/guide.md", guide, two).unwrap();
        assert!(why.contains("lines 7-9"), "{why}");
        // A new, short file that is not like any part of the old one is a replacement.
        assert_eq!(
            part_for_whole("docs/guide.md", guide, "Moved to the wiki.\n"),
            None
        );
        // Content of more than a quarter of the lines, or a file too short to be cut down,
        // is written as given.
        let half: String = guide.lines().take(8).map(|l| format!("{l}\n")).collect();
        assert_eq!(part_for_whole("docs/guide.md", guide, &half), None);
        assert_eq!(part_for_whole("a.txt", "one\ntwo\nthree\n", "one\n"), None);
        assert_eq!(part_for_whole("docs/guide.md", guide, "\n\n"), None);
    }

    #[test]
    fn a_fence_that_ends_a_file_and_closes_no_block_is_left_out() {
        let fixed = "# Guide\n\nReceive the mail.\n";
        assert_eq!(
            without_stray_fence(&format!("{fixed}```\n")),
            (fixed, Some("```"))
        );
        assert_eq!(
            without_stray_fence(&format!("{fixed}```markdown\n\n")),
            (fixed, Some("```markdown"))
        );
        // Fences that pair up are the file's own: a README's example stays whole.
        let readme = "# Use\n\n```sh\nmake run\n```\n";
        assert_eq!(without_stray_fence(readme), (readme, None));
        assert_eq!(without_stray_fence(fixed), (fixed, None));
        assert_eq!(without_stray_fence(""), ("", None));
        // A line that only starts with backticks is text, not a fence.
        let code = "x = 1\n```not a fence```\n";
        assert_eq!(without_stray_fence(code), (code, None));
    }

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
        // A changed signature still defines the name; prose and settings are no definitions.
        assert_eq!(
            dropped_definitions("def mean(values):\n", "def mean(xs, w=None):\n"),
            None
        );
        assert_eq!(
            dropped_definitions(
                "Run it to recieve mail.\nport = 80\n",
                "Run it to receive mail.\nport = 8080\n"
            ),
            None
        );
        let rust = dropped_definitions(
            "pub fn is_leap(y: u32) -> bool {\n}\nfn helper() {}\n",
            "pub fn is_leap(y: u32) -> bool {\n}\n",
        )
        .unwrap();
        assert!(
            rust.contains("`fn helper() {}`") && !rust.contains("is_leap"),
            "{rust}"
        );
    }
}
