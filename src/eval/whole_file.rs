//! The whole-file edit format of the oneshot arm: how the prompt shows the repository, how
//! the model is taught to answer, and how its answer is read back into files.
//!
//! One file is a *listing*: its path alone on a line, then a fenced block holding the whole
//! file (the format aider calls "whole"; small coder models follow it without tools). The
//! prompt shows the repository in the same shape it asks for, with one short example. Reading
//! an answer is forgiving about decoration small models add around a path (`**a.py**`,
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

/// One file of the repository as the prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing<'a> {
    /// Shown whole.
    Whole { path: &'a str, text: &'a str },
    /// Named only, with why (binary, too large for the prompt).
    Named { path: &'a str, why: &'a str },
}

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

/// The system message: the task, the format and one example.
pub fn system_prompt(fence: &str) -> String {
    let example = listing(
        "greet.py",
        "def greet(name):\n    return f\"Hello, {name}!\"\n",
        fence,
    );
    format!(
        "You are an expert software engineer. You change a repository by writing whole files. \
You cannot run commands, and you answer once.\n\n\
Answer with every file you create or change, each written out in full in this format:\n\n\
{path_example}\n\n\
Rules:\n\
- The line before the opening {fence} is the file's path relative to the repository root, and nothing else.\n\
- Write the whole file, every line, also the lines that stay the same: no \"...\", no diffs.\n\
- Files you do not write stay as they are; do not write files you do not change.\n\
- Keep any explanation short and put it before the files.\n\n\
Example: asked to make greet() in greet.py greet the name it is given, you answer:\n\n\
{example}",
        path_example = listing(
            "path/to/file.ext",
            "the complete new content of the file\n",
            fence
        )
        .trim_end(),
    )
}

/// The user message: the objective, then every file of the repository.
pub fn user_prompt(objective: &str, files: &[Listing<'_>], fence: &str) -> String {
    let mut out = format!(
        "Objective:\n{}\n\nThe repository's files:\n\n",
        objective.trim()
    );
    if files.is_empty() {
        out.push_str("(the repository has no files)\n\n");
    }
    for file in files {
        match file {
            Listing::Whole { path, text } => out.push_str(&listing(path, text, fence)),
            Listing::Named { path, why } => out.push_str(&format!("{path} ({why})\n")),
        }
        out.push('\n');
    }
    out.push_str("Now write every file you create or change, in full, in the format shown above.");
    out
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
fn closes(line: &str, ticks: usize) -> bool {
    let t = line.trim();
    t.len() >= ticks && t.chars().all(|c| c == '`')
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

    #[test]
    fn the_prompt_teaches_the_format_it_reads() {
        let fence = fence_for(["x = 1\n"]);
        let system = system_prompt(&fence);
        let example = system.split("you answer:\n\n").nth(1).unwrap();
        assert_eq!(
            files(example),
            [(
                "greet.py".to_string(),
                "def greet(name):\n    return f\"Hello, {name}!\"\n".to_string()
            )]
        );
        let user = user_prompt(
            "  Fix it. ",
            &[
                Listing::Whole {
                    path: "a.py",
                    text: "x = 1\n",
                },
                Listing::Named {
                    path: "logo.png",
                    why: "binary, 10 bytes, not shown",
                },
            ],
            &fence,
        );
        assert!(user.starts_with("Objective:\nFix it.\n\n"), "{user}");
        assert!(user.contains("a.py\n```\nx = 1\n```\n\nlogo.png (binary, 10 bytes, not shown)\n"));
        // The repository as shown reads back as its own files.
        assert_eq!(files(&user), [("a.py".to_string(), "x = 1\n".to_string())]);
    }
}
