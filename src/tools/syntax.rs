//! The syntax gate: a file tool does not write a file that parses now and would not after.
//!
//! A small model's change that breaks a file's syntax (a `def` line with the body after it
//! above the old body, a `return` pasted after an import) leaves the repository in a state it
//! then cannot reason about: on seed 1 the 1.5B blamed the test file's location for an
//! IndentationError it had made, for three rounds. SWE-agent's editor refuses such edits
//! (its linting guard); so does this one, for the languages it can parse cheaply: Python
//! (compiled, never run, by `python3` in the worker's sandbox), shell scripts (`sh -n` or
//! `bash -n`, in the sandbox), JSON and TOML (in process). A file that does not parse before
//! the change is not gated (the change may be a step toward fixing it), nor is a language
//! with no parser here, nor a parser that cannot start: the gate only ever refuses a change
//! it has seen break a file that parsed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::nearest::numbered;
use super::process::run_captured;
use super::{sandbox, ToolContext};

/// The most time a parser gets; past it the change is not gated.
const PARSE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most output of a parser kept.
const PARSE_OUTPUT: usize = 4 * 1024;
/// The lines shown on each side of the line a parser names.
const AROUND: usize = 3;
/// The exit status of [`PYTHON`] for a syntax error.
const PYTHON_BROKEN: i32 = 3;
/// Compiles the file named by its first argument without running it; on a syntax error
/// prints `LINE<TAB>KIND<TAB>MESSAGE` and exits [`PYTHON_BROKEN`].
const PYTHON: &str = "import sys\ntry:\n    compile(open(sys.argv[1], 'rb').read(), 'f', 'exec')\nexcept SyntaxError as e:\n    print(e.lineno or 0, type(e).__name__, e.msg, sep='\\t')\n    sys.exit(3)\n";

/// A language the gate parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Python,
    /// A shell script and the shell that reads it (`sh` or `bash`).
    Shell(&'static str),
    Json,
    Toml,
}

impl Language {
    /// The language of `rel` holding `text`: by its extension, or for a file without one,
    /// by a shell's `#!` line.
    fn of(rel: &str, text: &str) -> Option<Self> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let shebang = text.lines().next().filter(|l| l.starts_with("#!"));
        let shell = || {
            if shebang.is_some_and(|l| l.contains("bash")) {
                Self::Shell("bash")
            } else {
                Self::Shell("sh")
            }
        };
        match name.rsplit_once('.').map(|(_, ext)| ext) {
            Some("py") => Some(Self::Python),
            Some("sh") => Some(shell()),
            Some("bash") => Some(Self::Shell("bash")),
            Some("json") => Some(Self::Json),
            Some("toml") => Some(Self::Toml),
            Some(_) => None,
            None => shebang
                .filter(|l| {
                    let program = l.trim_start_matches("#!").trim();
                    ["sh", "bash"].iter().any(|s| {
                        program.ends_with(&format!("/{s}")) || program.ends_with(&format!(" {s}"))
                    })
                })
                .map(|_| shell()),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Python => "Python",
            Self::Shell(_) => "shell",
            Self::Json => "JSON",
            Self::Toml => "TOML",
        }
    }
}

/// What a parser said of a text.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    Fine,
    /// It does not parse: the 1-based line named (0 when none), and the parser's words.
    Broken {
        line: usize,
        what: String,
    },
    /// The parser could not say (not installed, timed out, refused).
    Unknown,
}

/// Why writing `after` to `rel` is refused, when it is: `rel` parses now (`before`; `None`
/// for a new file) and `after` would not, or, for Python, `after` uses a name it binds
/// nowhere that `before` did not and the file's last commit defined. `None` when the change
/// may go ahead.
pub(crate) fn refusal(
    ctx: &ToolContext<'_>,
    rel: &str,
    before: Option<&str>,
    after: &str,
) -> Option<String> {
    let language = Language::of(rel, after)?;
    let Parsed::Broken { line, what } = parse(ctx, language, after) else {
        // It parses (or cannot be told): a Python name it uses and binds nowhere still fails.
        return before
            .filter(|_| language == Language::Python)
            .and_then(|before| super::pynames::unbound_refusal(ctx.root, rel, before, after));
    };
    if let Some(before) = before {
        if parse(ctx, language, before) != Parsed::Fine {
            return None;
        }
    }
    Some(message(rel, language, before.is_some(), after, line, &what))
}

/// The refusal: what the parser said, and the lines around the line it named as they would
/// read.
fn message(
    rel: &str,
    language: Language,
    existed: bool,
    after: &str,
    line: usize,
    what: &str,
) -> String {
    let now = if existed { ", and it parses now" } else { "" };
    let at = if line > 0 {
        format!(" at line {line}")
    } else {
        String::new()
    };
    let what = crate::text::clip(what.trim(), 200);
    let mut out = format!(
        "nothing written: with this change '{rel}' would not parse as {}{now}: {what}{at}.",
        language.name()
    );
    let lines: Vec<&str> = after.lines().collect();
    if line > 0 && !lines.is_empty() {
        let named = line.min(lines.len()) - 1;
        let start = named.saturating_sub(AROUND);
        let end = (named + AROUND + 1).min(lines.len());
        let (span, shown) = numbered(&lines, start, end - start, 2 * AROUND + 1);
        out.push_str(&format!("\nIts {span} would read:\n{shown}"));
    } else {
        out.push('\n');
    }
    if language == Language::Python {
        out.push_str("In Python a block's body goes on the lines under its `def …:` or `if …:` line, indented one level more, and replaces the old body rather than going above it. ");
    }
    out.push_str("Give the change so that the file still parses");
    out
}

fn parse(ctx: &ToolContext<'_>, language: Language, text: &str) -> Parsed {
    match language {
        Language::Json => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(_) => Parsed::Fine,
            Err(e) => Parsed::Broken {
                line: e.line(),
                what: e.to_string(),
            },
        },
        Language::Toml => match text.parse::<toml::Table>() {
            Ok(_) => Parsed::Fine,
            Err(e) => Parsed::Broken {
                line: e.span().map_or(0, |s| {
                    text[..s.start.min(text.len())].matches('\n').count() + 1
                }),
                what: e.message().to_string(),
            },
        },
        Language::Python => confined(ctx, text, "py", |file| {
            format!("python3 -I -B -c {} {file}", quoted(PYTHON))
        })
        .map_or(Parsed::Unknown, |(code, output)| {
            if code != PYTHON_BROKEN {
                return if code == 0 {
                    Parsed::Fine
                } else {
                    Parsed::Unknown
                };
            }
            let mut parts = output.trim().splitn(3, '\t');
            let line = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            let kind = parts.next().unwrap_or("SyntaxError");
            let msg = parts.next().unwrap_or_default();
            Parsed::Broken {
                line,
                what: format!("{kind}: {msg}"),
            }
        }),
        Language::Shell(shell) => confined(ctx, text, "sh", |file| format!("{shell} -n {file}"))
            .map_or(Parsed::Unknown, |(code, output)| match code {
                0 => Parsed::Fine,
                // Both shells exit 2 on a syntax error; 127 is a shell that is not there.
                2 => shell_error(&output),
                _ => Parsed::Unknown,
            }),
    }
}

/// `sh -n`'s first complaint, its file name taken off: dash says `FILE: 5: Syntax error: …`,
/// bash `FILE: line 5: syntax error: …`.
fn shell_error(output: &str) -> Parsed {
    let Some(first) = output.lines().find(|l| !l.trim().is_empty()) else {
        return Parsed::Unknown;
    };
    let rest = first.split_once(": ").map_or(first, |(_, rest)| rest);
    let numbered = rest.strip_prefix("line ").unwrap_or(rest);
    let digits = numbered.chars().take_while(char::is_ascii_digit).count();
    match numbered[digits..].strip_prefix(": ") {
        Some(what) if digits > 0 => Parsed::Broken {
            line: numbered[..digits].parse().unwrap_or(0),
            what: what.to_string(),
        },
        _ => Parsed::Broken {
            line: 0,
            what: rest.to_string(),
        },
    }
}

/// Runs the parser `command` makes for a file holding `text` (written to the round's scratch
/// directory, removed after) in the worker's sandbox; its exit code and output. `None` when
/// it could not run or did not exit.
fn confined(
    ctx: &ToolContext<'_>,
    text: &str,
    extension: &str,
    command: impl Fn(&str) -> String,
) -> Option<(i32, String)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::fs::create_dir_all(ctx.round_tmp).ok()?;
    let file = ctx.round_tmp.join(format!(
        "ralph-syntax-{}-{n}.{extension}",
        std::process::id()
    ));
    std::fs::write(&file, text).ok()?;
    let shown = file.to_str().map(quoted);
    let result = shown.and_then(|shown| {
        let cmd = sandbox::command(ctx.policy, ctx.root, ctx.round_tmp, &command(&shown));
        run_captured(
            cmd,
            PARSE_TIMEOUT,
            ctx.cancel,
            PARSE_OUTPUT,
            Some(ctx.processes),
        )
        .ok()
    });
    let _ = std::fs::remove_file(&file);
    let captured = result?;
    Some((captured.exit_code?, captured.output))
}

/// `text` as one shell word.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_known_by_extension_or_a_shells_first_line() {
        assert_eq!(Language::of("a/stats.py", ""), Some(Language::Python));
        assert_eq!(
            Language::of("greet.sh", "echo hi\n"),
            Some(Language::Shell("sh"))
        );
        assert_eq!(
            Language::of("greet.sh", "#!/bin/bash\necho hi\n"),
            Some(Language::Shell("bash"))
        );
        assert_eq!(
            Language::of("bin/run", "#!/usr/bin/env bash\n"),
            Some(Language::Shell("bash"))
        );
        assert_eq!(
            Language::of("bin/run", "#!/bin/sh\n"),
            Some(Language::Shell("sh"))
        );
        assert_eq!(Language::of("bin/run", "#!/usr/bin/env python3\n"), None);
        assert_eq!(Language::of("Cargo.toml", ""), Some(Language::Toml));
        assert_eq!(Language::of("package.json", ""), Some(Language::Json));
        assert_eq!(Language::of("README.md", ""), None);
        assert_eq!(Language::of("Makefile", "all:\n"), None);
        assert_eq!(Language::of("src/lib.rs", ""), None);
    }

    #[test]
    fn shell_complaints_give_their_line_without_the_file_name() {
        assert_eq!(
            shell_error("/tmp/x/ralph-syntax-1-0.sh: 4: Syntax error: end of file unexpected (expecting \"fi\")\n"),
            Parsed::Broken {
                line: 4,
                what: "Syntax error: end of file unexpected (expecting \"fi\")".into()
            }
        );
        assert_eq!(
            shell_error("/tmp/x.sh: line 7: syntax error: unexpected end of file\n"),
            Parsed::Broken {
                line: 7,
                what: "syntax error: unexpected end of file".into()
            }
        );
        assert_eq!(shell_error(""), Parsed::Unknown);
    }

    #[test]
    fn the_refusal_shows_the_lines_around_the_one_named_as_they_would_read() {
        let after = "a\nb\nc\ndef median(values):    return 1\n    \"\"\"Doc.\"\"\"\n    return 2\ng\nh\ni\n";
        let m = message(
            "stats.py",
            Language::Python,
            true,
            after,
            5,
            "IndentationError: unexpected indent",
        );
        assert!(
            m.starts_with("nothing written: with this change 'stats.py' would not parse as Python, and it parses now: IndentationError: unexpected indent at line 5.\nIts lines 2-8 would read:\n"),
            "{m}"
        );
        assert!(
            m.contains("    4 | def median(values):    return 1\n")
                && m.contains("    8 | h\n")
                && !m.contains("| i"),
            "{m}"
        );
        // A new file says nothing of how it parses now; a line past the end shows the last.
        let m = message(
            "x.json",
            Language::Json,
            false,
            "{\n",
            9,
            "EOF while parsing",
        );
        assert!(
            m.contains(
                "as JSON: EOF while parsing at line 9.\nIts line 1 would read:\n    1 | {\n"
            ),
            "{m}"
        );
        assert!(!m.contains("In Python"), "{m}");
    }
}
