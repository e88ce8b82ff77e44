//! Typed errors for the edges of ralph-tui.
//!
//! Every error a person can meet has a `Display` fit to show them: it names the problem and,
//! where there is one, the fix. `ExitCode` maps a run's end onto the documented exit codes;
//! [`say`] is how a message reaches the person on stderr.

use std::io::Write;
use std::path::PathBuf;

use crate::protocol::event::{RunStatus, Verification};

/// One line on stderr for the person, behind the program's name. Sanitized here, the one
/// stderr sink: messages quote file names, worker text and server answers.
pub fn say(message: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "ralph-tui: {}",
        crate::text::sanitize(message)
    );
}

/// The process exit codes from the CLI contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    Complete = 0,
    Internal = 1,
    Usage = 2,
    Blocked = 3,
    BudgetLimited = 4,
    RoundFailed = 5,
    /// The worker reported completion and `--verify` failed.
    VerifyFailed = 6,
    /// The run stalled: rounds with no change and the same next steps, or a round over its
    /// wall-clock limit.
    Stalled = 7,
    Cancelled = 130,
}

impl ExitCode {
    pub fn code(self) -> i32 {
        self as i32
    }

    /// How a finished run exits: as its status says, except that a claimed completion that
    /// `--verify` contradicts exits [`ExitCode::VerifyFailed`].
    pub fn of_run(status: RunStatus, verification: Option<&Verification>) -> Self {
        if status.contradicted_by(verification) {
            Self::VerifyFailed
        } else {
            Self::from(status)
        }
    }
}

impl From<RunStatus> for ExitCode {
    fn from(status: RunStatus) -> Self {
        match status {
            RunStatus::Complete => Self::Complete,
            RunStatus::Blocked => Self::Blocked,
            RunStatus::BudgetLimited => Self::BudgetLimited,
            RunStatus::Cancelled => Self::Cancelled,
            RunStatus::RoundFailed => Self::RoundFailed,
            RunStatus::Stalled => Self::Stalled,
        }
    }
}

/// Problems with what the person asked for: bad options, objective, config, model, script.
/// All of them exit with code 2 and leave the workspace untouched.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("the objective is empty: pass it as an argument, with -f FILE, or type it in the TUI")]
    EmptyObjective,
    #[error("--headless needs the objective: pass it as an argument or with -f FILE (there is no TUI to type it in)")]
    HeadlessWithoutObjective,
    #[error("cannot read the objective file {path}: {source}")]
    ObjectiveFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("workspace {0} is not a directory: pass an existing directory with -C")]
    WorkspaceNotDir(PathBuf),
    #[error("{0} is not inside a git work tree: run `git init` there first, or pass another directory with -C")]
    NotGitRepo(PathBuf),
    #[error("config file {path}: {message}")]
    Config { path: PathBuf, message: String },
    #[error("script file {path}: {message}")]
    Script { path: PathBuf, message: String },
    #[error("model {path}: {message}")]
    Model { path: PathBuf, message: String },
    #[error("no model found: the default model would be {}; fetch it with `ralph-tui model fetch` (about 1.1 GB), or pass --model PATH to a GGUF file", .0.display())]
    NoModel(PathBuf),
    #[error("{0}")]
    Invalid(String),
}

/// A serde message in the person's words: a Rust type name becomes what the value should be
/// (`expected u32` → `expected a whole number of 0 or more`), and an untagged enum's name,
/// which says nothing to anyone outside the code, goes.
pub fn in_plain_words(message: &str) -> String {
    const TYPES: [(&str, &str); 12] = [
        ("usize", "a whole number of 0 or more"),
        ("u64", "a whole number of 0 or more"),
        ("u32", "a whole number of 0 or more"),
        ("u16", "a whole number of 0 or more"),
        ("u8", "a whole number of 0 or more"),
        ("isize", "a whole number"),
        ("i64", "a whole number"),
        ("i32", "a whole number"),
        ("i16", "a whole number"),
        ("i8", "a whole number"),
        ("f64", "a number"),
        ("f32", "a number"),
    ];
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    'outer: while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("expected ") {
            for (rust, plain) in TYPES {
                let ends = after
                    .strip_prefix(rust)
                    .filter(|tail| !tail.starts_with(|c: char| c.is_alphanumeric() || c == '_'));
                if let Some(tail) = ends {
                    out.push_str("expected ");
                    out.push_str(plain);
                    rest = tail;
                    continue 'outer;
                }
            }
        }
        if let Some(after) = rest.strip_prefix("data did not match any variant of untagged enum ") {
            out.push_str("it matches none of the shapes allowed here");
            rest = after.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
            continue;
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::in_plain_words;

    #[test]
    fn rust_type_names_become_what_the_value_should_be() {
        assert_eq!(
            in_plain_words("invalid type: string \"four\", expected u32"),
            "invalid type: string \"four\", expected a whole number of 0 or more"
        );
        assert_eq!(
            in_plain_words("invalid value: integer `-1`, expected u64 at line 1"),
            "invalid value: integer `-1`, expected a whole number of 0 or more at line 1"
        );
        assert_eq!(in_plain_words("expected f32"), "expected a number");
        assert_eq!(
            in_plain_words(
                "data did not match any variant of untagged enum ScriptRound at line 1 column 30"
            ),
            "it matches none of the shapes allowed here at line 1 column 30"
        );
        // Words that only start like a type stay.
        assert_eq!(
            in_plain_words("expected u32x or u8_t"),
            "expected u32x or u8_t"
        );
    }
}
