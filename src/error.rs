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
        }
    }
}

/// Problems with what the person asked for: bad options, objective, config, model, script.
/// All of them exit with code 2 and leave the workspace untouched.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("the objective is empty: pass it as an argument, with -f FILE, or type it in the TUI")]
    EmptyObjective,
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
    #[error("no model found: run `make model` to fetch the default model, or pass --model PATH to a GGUF file")]
    NoModel,
    #[error("{0}")]
    Invalid(String),
}
