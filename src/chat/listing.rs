//! Listings: a file written out whole as its path alone on a line, then a fenced block holding
//! the whole file (the format aider calls "whole"). Small coder models follow it untaught,
//! and it spares them escaping code into a JSON string. The oneshot eval arm asks for it, the
//! round observation shows files in it, and so a worker answers in it too: every call format
//! reads a closed listing in a turn's prose as a `write_file` call ([`listing_at`]).
//!
//! Reading is forgiving about decoration small models add around a path (`**a.py**`,
//! `` `a.py` ``, `### a.py`, `a.py:`, `File: a.py`) and strict about everything that decides
//! what is written: a block without a path, or one whose fence never closes (an answer cut
//! off by the token cap), writes nothing. Which paths may be written is [`check_path`]'s
//! lexical rule; the caller also resolves them against the workspace. Pure functions, no I/O.

/// The shortest fence; one backtick more than any run at a line's start in a shown file.
const MIN_FENCE: usize = 3;
/// The longest path line read as a path, in bytes.
const MAX_PATH_BYTES: usize = 255;
/// A path as it appears in a problem or refusal: at most this many bytes.
const SHOWN_PATH_BYTES: usize = 120;

/// The fence the prompt uses: three backticks, or one more than the longest run of backticks
/// that starts a line of any shown file, so no file's own fences close a listing early.
pub fn fence_for<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    let longest = texts
        .into_iter()
        .flat_map(str::lines)
        .map(|line| line.trim_start().chars().take_while(|&c| c == '`').count())
        .max()
        .unwrap_or(0);
    "`".repeat(MIN_FENCE.max(longest + 1))
}

/// One listing: the path line, the opening fence, the text (with a final newline) and the
/// closing fence.
pub fn listing(path: &str, text: &str, fence: &str) -> String {
    let newline = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{path}\n{fence}\n{text}{newline}{fence}\n")
}

/// What an answer holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Path (as written) and whole new content, in answer order; a path written twice keeps
    /// its last content.
    pub files: Vec<(String, String)>,
    /// Blocks that were not read as files, and why (one sentence each).
    pub problems: Vec<String>,
}

/// Reads an answer. `known` says whether a path names a file of the repository, so a bare
/// name without a dot (`Makefile`) counts as a path line when it is one.
pub fn parse(answer: &str, known: &dyn Fn(&str) -> bool) -> Answer {
    let lines: Vec<&str> = answer.lines().collect();
    let mut out = Answer::default();
    // The last non-blank line outside a block: the candidate path line of the next block.
    let mut before: Option<&str> = None;
    let mut i = 0;
    while i < lines.len() {
        let Some((ticks, info)) = opening_fence(lines[i]) else {
            if !lines[i].trim().is_empty() {
                before = Some(lines[i]);
            }
            i += 1;
            continue;
        };
        let path = before
            .and_then(|line| path_in_line(line, known))
            .or_else(|| path_in_info(info, known));
        let close = (i + 1..lines.len()).find(|&j| closes(lines[j], ticks));
        let Some(close) = close else {
            out.problems.push(format!(
                "{}: its block (line {}) never closes, so the answer was cut off: not written",
                path.as_deref().map_or_else(|| "a block".to_string(), shown),
                i + 1
            ));
            break;
        };
        let mut body = &lines[i + 1..close];
        // No path line: a first line that is a comment naming a file of the repository
        // (`# stats.py`) names the block's file, and is not part of it.
        let path = path.or_else(|| {
            let named = body.first().and_then(|line| path_in_comment(line, known))?;
            body = &body[1..];
            Some(named)
        });
        match path {
            Some(path) => {
                let mut content = body.join("\n");
                if !body.is_empty() {
                    content.push('\n');
                }
                if let Some(at) = out.files.iter().position(|(p, _)| *p == path) {
                    out.problems.push(format!(
                        "{}: written twice; the later one is kept",
                        shown(&path)
                    ));
                    out.files.remove(at);
                }
                out.files.push((path, content));
            }
            None => out.problems.push(format!(
                "the block at line {} has no path line before it: not written",
                i + 1
            )),
        }
        before = None;
        i = close + 1;
    }
    out
}

/// Why `raw` may not be written, when it may not: empty, absolute, leading out with `..`,
/// into `.git`, or holding control characters. Symlinks are the caller's to check.
pub fn check_path(raw: &str) -> Result<(), String> {
    if raw.is_empty() {
        return Err("the path is empty".into());
    }
    if raw.chars().any(char::is_control) {
        return Err("the path holds control characters".into());
    }
    if raw.starts_with('/') || raw.starts_with('\\') || raw.starts_with('~') {
        return Err("an absolute path; paths are relative to the repository root".into());
    }
    for part in raw.split(['/', '\\']) {
        if part == ".." {
            return Err("'..' leads outside the repository".into());
        }
        if part.eq_ignore_ascii_case(".git") {
            return Err("inside .git, which is not the answer's to change".into());
        }
    }
    Ok(())
}

/// A path fit for a message: cleaned as every terminal string is ([`crate::text::sanitize_line`]),
/// at most [`SHOWN_PATH_BYTES`].
pub fn shown(path: &str) -> String {
    let cut = crate::text::cut_at_char_boundary(path, SHOWN_PATH_BYTES);
    let mut out = crate::text::sanitize_line(cut);
    if cut.len() < path.len() {
        out.push('…');
    }
    format!("'{out}'")
}

/// `Some((ticks, info))` when `line` opens a fenced block: three or more backticks, then an
/// info string without backticks.
fn opening_fence(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start();
    let ticks = trimmed.chars().take_while(|&c| c == '`').count();
    let info = &trimmed[ticks..];
    (ticks >= MIN_FENCE && !info.contains('`')).then_some((ticks, info.trim()))
}

/// Whether `line` closes a block opened with `ticks` backticks: backticks alone, at least as
/// many.
pub(super) fn closes(line: &str, ticks: usize) -> bool {
    let t = line.trim();
    t.len() >= ticks && t.chars().all(|c| c == '`')
}

/// A listing found in a turn's prose by [`listing_at`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// Its fence closed: the path, where the listing starts (its path line), the whole file
    /// and where the listing ends (past the closing fence).
    Whole {
        path: String,
        from: usize,
        content: String,
        end: usize,
    },
    /// The text ends inside it (the file is still being written); where it starts.
    Open { from: usize },
}

impl Found {
    /// Where the listing starts: its path line (or its fence, when the path is in the fence).
    pub(crate) fn from(&self) -> usize {
        match self {
            Self::Whole { from, .. } | Self::Open { from } => *from,
        }
    }
}

/// File names without a dot that a path line may name in prose, where the repository's own
/// files are not known.
const BARE_NAMES: [&str; 6] = [
    "Makefile",
    "Dockerfile",
    "Justfile",
    "Gemfile",
    "Rakefile",
    "Procfile",
];

/// The listing whose opening fence starts at byte `fence` of `text`, when there is one: the
/// fence opens a line, and the line before it (blank lines skipped) or the fence's info
/// string names a path.
pub(crate) fn listing_at(text: &str, fence: usize) -> Option<Found> {
    let known = |p: &str| BARE_NAMES.contains(&p);
    let line_start = text[..fence].rfind('\n').map_or(0, |i| i + 1);
    if !text[line_start..fence].trim().is_empty() {
        return None;
    }
    let fence_end = text[fence..].find('\n').map_or(text.len(), |i| fence + i);
    let (ticks, info) = opening_fence(&text[line_start..fence_end])?;
    let before = text[..line_start].trim_end();
    let path_line_at = before.rfind('\n').map_or(0, |i| i + 1);
    let line = &before[path_line_at..];
    let (path, from) = if let Some(path) = path_in_line(line, &known) {
        (path, path_line_at)
    } else if let Some(path) = path_in_info(info, &known) {
        (path, line_start)
    } else {
        // The sentence stays prose; the listing starts at its fence.
        (announced_path(line, &known)?, line_start)
    };
    let mut at = fence_end;
    let mut body: Vec<&str> = Vec::new();
    while at < text.len() {
        let start = at + 1;
        let stop = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let line = &text[start..stop];
        if closes(line, ticks) {
            // An empty block is a fence opened and shut, not "make the file empty" (the 1.5B
            // wrote one after its path line and emptied the file it was fixing).
            if body.iter().all(|l| l.trim().is_empty()) {
                return None;
            }
            let mut content = body.join("\n");
            if !body.is_empty() {
                content.push('\n');
            }
            return Some(Found::Whole {
                path,
                from,
                content,
                end: stop,
            });
        }
        body.push(line);
        at = stop;
    }
    Some(Found::Open { from })
}

/// Words that say a block shows what a file holds now, or a command's output, rather than
/// the file as it is to be written.
pub(super) const NOT_A_WRITE: [&str; 8] = [
    "current",
    "original",
    "existing",
    "before",
    "contains",
    "output",
    "error",
    "traceback",
];

/// The file a sentence before a block announces (`Here's the updated `slug.py` file:`, the
/// 1.5B's habit): a line ending in a colon that names exactly one file, in backticks where it
/// has any, and does not say the block is what the file holds now.
fn announced_path(line: &str, known: &dyn Fn(&str) -> bool) -> Option<String> {
    let text = line.trim().trim_end_matches(['*', ' ']).strip_suffix(':')?;
    // The words outside backticks (a `NotImplementedError` is a name, not an error shown).
    let said: String = text.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    let said = said.to_lowercase();
    if NOT_A_WRITE.iter().any(|w| said.contains(w)) {
        return None;
    }
    let ticked: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    let words: Vec<&str> = if ticked.is_empty() {
        text.split_whitespace().collect()
    } else {
        ticked
    };
    let mut paths: Vec<&str> = words
        .into_iter()
        .map(|w| w.trim_matches(|c: char| matches!(c, '*' | '"' | '\'' | '(' | ')' | ',')))
        .filter(|w| looks_like_path(w, known) && (known(w) || has_extension(w)))
        .collect();
    paths.dedup();
    match paths.as_slice() {
        [path] => Some((*path).to_string()),
        _ => None,
    }
}

/// Whether a path's last part ends in a file extension (`.py`, `.toml`).
fn has_extension(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=8).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// The path a path line names, with the decoration small models add taken off.
fn path_in_line(line: &str, known: &dyn Fn(&str) -> bool) -> Option<String> {
    let decoration = |c: char| matches!(c, '*' | '`' | '"' | '\'' | '#' | ':') || c.is_whitespace();
    let mut text = line.trim().trim_matches(decoration);
    for label in ["file:", "filename:", "path:"] {
        if text.len() >= label.len()
            && text.is_char_boundary(label.len())
            && text[..label.len()].eq_ignore_ascii_case(label)
        {
            text = text[label.len()..].trim_matches(decoration);
        }
    }
    looks_like_path(text, known).then(|| text.to_string())
}

/// A path in the opening fence's info string (```` ```python greet.py ````), used when the
/// block has no path line.
fn path_in_info(info: &str, known: &dyn Fn(&str) -> bool) -> Option<String> {
    info.split(|c: char| c.is_whitespace() || c == ':')
        .find(|word| looks_like_path(word, known))
        .map(String::from)
}

/// The file a comment line names (`# a.py`, `// src/lib.rs`, `<!-- a.md -->`), when it is a
/// file of the repository.
fn path_in_comment(line: &str, known: &dyn Fn(&str) -> bool) -> Option<String> {
    let text = line.trim();
    let inner = ["#", "//", "--", ";", "<!--"]
        .iter()
        .find_map(|open| text.strip_prefix(open))?
        .trim_end_matches("-->")
        .trim();
    known(inner).then(|| inner.to_string())
}

/// One word, not too long, naming a known file or with a `.` or `/` in it (and not ending a
/// sentence).
fn looks_like_path(text: &str, known: &dyn Fn(&str) -> bool) -> bool {
    !text.is_empty()
        && text.len() <= MAX_PATH_BYTES
        && !text.chars().any(char::is_whitespace)
        && (known(text)
            || ((text.contains('.') || text.contains('/'))
                && !text.ends_with(['.', ',', ';', '!', '?'])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> bool {
        false
    }

    fn files(answer: &str) -> Vec<(String, String)> {
        parse(answer, &none).files
    }

    #[test]
    fn a_listing_reads_back_as_the_same_file() {
        for text in ["a\nb\n", "", "no newline at the end", "```\nnested\n```\n"] {
            let fence = fence_for([text]);
            let answer = format!("Here you are.\n\n{}", listing("dir/f.md", text, &fence));
            let want = if text.is_empty() || text.ends_with('\n') {
                text.to_string()
            } else {
                format!("{text}\n")
            };
            assert_eq!(files(&answer), [("dir/f.md".to_string(), want)], "{text:?}");
        }
    }

    #[test]
    fn the_fence_outgrows_the_files_own_fences() {
        assert_eq!(fence_for(["plain\n"]), "```");
        assert_eq!(fence_for(["a\n  ```sh\nx\n```\n"]), "````");
        assert_eq!(fence_for(["`````\n", "x"]), "``````");
    }

    #[test]
    fn decorated_path_lines_and_language_tags_are_understood() {
        let answer = "**a.py**\n```python\nA\n```\n`b/c.txt`:\n```\nB\n```\n### File: d.sh\n```sh\nD\n```\n```python e.py\nE\n```\nMakefile\n```\nM\n```\n";
        let known = |p: &str| p == "Makefile";
        let got = parse(answer, &known);
        let paths: Vec<&str> = got.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["a.py", "b/c.txt", "d.sh", "e.py", "Makefile"]);
        assert_eq!(got.files[1].1, "B\n");
        assert!(got.problems.is_empty(), "{:?}", got.problems);
    }

    #[test]
    fn a_comment_naming_a_known_file_opens_a_block_without_a_path_line() {
        let known = |p: &str| p == "stats.py" || p == "src/lib.rs";
        let got = parse(
            "Fixed:\n```python\n# stats.py\nx = 1\n```\n```rust\n// src/lib.rs\nfn f() {}\n```\n```\n# other.py\ny\n```\n",
            &known,
        );
        assert_eq!(
            got.files,
            [
                ("stats.py".to_string(), "x = 1\n".to_string()),
                ("src/lib.rs".to_string(), "fn f() {}\n".to_string())
            ]
        );
        // A comment naming a file the repository does not have is only a comment.
        assert_eq!(got.problems.len(), 1, "{:?}", got.problems);
    }

    #[test]
    fn prose_before_a_block_is_not_a_path() {
        let got = parse(
            "Run the tests:\n```sh\npython3 -m unittest\n```\nDone.\n```\nx\n```\n",
            &none,
        );
        assert!(got.files.is_empty(), "{:?}", got.files);
        assert_eq!(got.problems.len(), 2, "{:?}", got.problems);
        assert!(got.problems[0].contains("no path line"));
    }

    #[test]
    fn a_block_cut_off_writes_nothing_and_says_so() {
        let got = parse("a.py\n```\nA\n```\nb.py\n```\ndef half(", &none);
        assert_eq!(got.files, [("a.py".to_string(), "A\n".to_string())]);
        assert_eq!(got.problems.len(), 1);
        assert!(got.problems[0].starts_with("'b.py': its block (line 6) never closes"));
    }

    #[test]
    fn the_last_of_two_listings_of_a_path_wins() {
        let got = parse("a.py\n```\n1\n```\na.py\n```\n2\n```\n", &none);
        assert_eq!(got.files, [("a.py".to_string(), "2\n".to_string())]);
        assert_eq!(
            got.problems,
            ["'a.py': written twice; the later one is kept"]
        );
    }

    #[test]
    fn a_listing_in_prose_is_found_from_its_fence() {
        let text =
            "I will fix it.\n\n**app.py**\n```python\ndef add(a, b):\n    return a + b\n```\nDone.";
        let fence = text.find("```").unwrap();
        let Some(Found::Whole {
            path,
            from,
            content,
            end,
        }) = listing_at(text, fence)
        else {
            panic!("no listing in {text:?}");
        };
        assert_eq!(path, "app.py");
        assert_eq!(&text[from..fence], "**app.py**\n");
        assert_eq!(content, "def add(a, b):\n    return a + b\n");
        assert_eq!(&text[end..], "\nDone.");
        // The path in the info string, and a Makefile by name.
        let text = "```sh greet.sh\necho hi\n```";
        assert!(
            matches!(listing_at(text, 0), Some(Found::Whole { path, from: 0, .. }) if path == "greet.sh")
        );
        let text = "Makefile\n```\ntest:\n\tpytest\n```";
        assert!(
            matches!(listing_at(text, 9), Some(Found::Whole { path, .. }) if path == "Makefile")
        );
    }

    #[test]
    fn an_empty_block_after_a_path_line_writes_nothing() {
        for text in ["docs/guide.md\n```\n```\n", "a.py\n```python\n\n```"] {
            let fence = text.find("```").unwrap();
            assert_eq!(listing_at(text, fence), None, "{text:?}");
        }
    }

    #[test]
    fn a_sentence_that_announces_one_file_names_the_listing() {
        // The 1.5B's words before the right slug.py, lost before this was read.
        let text = "We need to replace the `NotImplementedError`. Here's the updated `slug.py` file:\n\n```python\nimport re\n```\n";
        let fence = text.find("```").unwrap();
        assert!(matches!(
            listing_at(text, fence),
            Some(Found::Whole { path, from, .. }) if path == "slug.py" && from == fence
        ));
        for line in [
            "Here is the current `slug.py`:",
            "The output of `python3 -m unittest test_slug.py`:",
            "Change `a.py` and `b.py` like this:",
            "Here's the updated `slug.py` file.",
            "Let me look at it:",
        ] {
            let text = format!("{line}\n```python\nx = 1\n```\n");
            let fence = text.find("```").unwrap();
            assert_eq!(listing_at(&text, fence), None, "{line}");
        }
    }

    #[test]
    fn a_listing_still_being_written_is_open_and_a_fence_without_a_path_is_none() {
        let text = "a.py\n```\ndef half(";
        assert_eq!(listing_at(text, 5), Some(Found::Open { from: 0 }));
        // A longer fence closes only at as many backticks: the file's own fence stays in it.
        let text = "README.md\n````\n```sh\nmake\n```\n````\n";
        assert!(
            matches!(listing_at(text, 10), Some(Found::Whole { content, .. }) if content == "```sh\nmake\n```\n")
        );
        for text in [
            "Run the tests:\n```sh\nmake test\n```",
            "```\nx\n```",
            "see a.py ```python\nx\n```",
        ] {
            let fence = text.find("```").unwrap();
            assert_eq!(listing_at(text, fence), None, "{text:?}");
        }
    }

    #[test]
    fn paths_that_leave_the_repository_are_refused() {
        for bad in [
            "/etc/passwd",
            "~/x",
            "../x",
            "a/../../x",
            "a/..",
            ".git/config",
            "sub/.GIT/hooks/pre-commit",
            "a\u{1b}[2J",
            "",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
        for good in ["a.py", "dir/b.txt", ".gitignore", "a..b", "x/.github/w.yml"] {
            assert_eq!(check_path(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn shown_paths_are_short_and_free_of_controls() {
        assert_eq!(shown("a\u{1b}b"), "'a\u{fffd}b'");
        let long = "x".repeat(500);
        assert_eq!(shown(&long).len(), SHOWN_PATH_BYTES + 2 + '…'.len_utf8());
    }
}
