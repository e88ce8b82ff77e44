//! The typed event stream: the only way the engine talks to the world.
//!
//! The TUI, the headless JSON Lines writer and the run log are all consumers of the same
//! `Event`s. The serialized form (`type` tag + fields + `ts`) is a public contract. The engine
//! stamps events (it owns the clock); this module only defines and serializes them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::report::Report;

/// How a round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundOutcome {
    /// The child reported; the report's status says what next.
    Reported,
    /// The child ended without a valid report, or failed.
    Failed,
    Cancelled,
}

/// How a run ended; the strings are the contract's `status` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    Complete,
    Blocked,
    BudgetLimited,
    Cancelled,
    RoundFailed,
    /// The run made no progress: rounds that changed nothing and said the same next steps,
    /// or a round over its wall-clock limit (`--round-timeout`).
    Stalled,
}

impl RunStatus {
    /// Whether the run ended on a worker's report: complete or blocked.
    pub fn is_worker_report(self) -> bool {
        matches!(self, Self::Complete | Self::Blocked)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Blocked => "blocked",
            Self::BudgetLimited => "budget-limited",
            Self::Cancelled => "cancelled",
            Self::RoundFailed => "round-failed",
            Self::Stalled => "stalled",
        }
    }

    /// A sentence a person cannot mistake for certification.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Complete => {
                "the worker reports the objective complete — not independently verified"
            }
            Self::Blocked => "the worker reports it is blocked — its own account, not verified",
            Self::BudgetLimited => "the round budget ran out before the worker reported completion",
            Self::Cancelled => "the run was cancelled",
            Self::RoundFailed => "a round ended without a valid report; the run stopped",
            Self::Stalled => {
                "the run stalled and was stopped; resuming it needs a note with new direction"
            }
        }
    }

    /// The whole outcome in one sentence: the worker's claim and, when `--verify` ran, its
    /// result (`… — the worker's claim; verify passed (exit 0)`). Without a verification it
    /// is [`Self::describe`].
    pub fn describe_with(self, verification: Option<&Verification>) -> String {
        let Some(v) = verification else {
            return self.describe().to_string();
        };
        let claim = match self {
            Self::Complete => "the worker reports the objective complete — the worker's claim",
            Self::Blocked => "the worker reports it is blocked — its own account",
            other => other.describe(),
        };
        let exit = match v.exit_code {
            Some(code) => format!("exit {code}"),
            None => "no exit code".to_string(),
        };
        let result = if v.passed { "passed" } else { "FAILED" };
        format!("{claim}; verify {result} ({exit})")
    }

    /// A claimed completion that `--verify` contradicts: shown in the error colour and said
    /// in the headless summary.
    pub fn contradicted_by(self, verification: Option<&Verification>) -> bool {
        self == Self::Complete && verification.is_some_and(|v| !v.passed)
    }
}

/// The result of `--verify`, shown beside the worker's claim; it never changes the status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verification {
    pub command: String,
    pub exit_code: Option<i32>,
    pub passed: bool,
    pub output_tail: String,
}

/// Where a person's note came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteSource {
    /// Typed in the TUI while the run was going (`n`).
    Tui,
    /// A line appended to the file `--notes FILE` names.
    File,
    /// `--resume RUN --note TEXT`.
    Resume,
    /// Sent back from the review (`b`).
    Review,
}

/// How a file changed; serialized as `added`, `modified`, `deleted`, `renamed`, `typechange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
    TypeChange,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Modified => "modified",
            Self::Deleted => "deleted",
            Self::Renamed => "renamed",
            Self::TypeChange => "typechange",
        }
    }

    /// One letter, as `git status --short` would show it.
    pub fn letter(self) -> &'static str {
        match self {
            Self::Added => "A",
            Self::Modified => "M",
            Self::Deleted => "D",
            Self::Renamed => "R",
            Self::TypeChange => "T",
        }
    }
}

/// A file changed in a round, for the live and per-round change lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    pub path: String,
    pub status: FileStatus,
    pub insertions: usize,
    pub deletions: usize,
    pub binary: bool,
    /// Changed by someone other than the worker's tools and commands (the person, another
    /// program): shown, never committed by default. Absent from the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_run: bool,
}

/// Why a round's last turn is a wrap-up turn, one that may only file the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WrapUpReason {
    /// The next turn is the round's last (`--max-turns`).
    Turns,
    /// The next turn might not fit the context window beside the report's reserve.
    Context,
    /// The next turn could cross the run's token budget.
    Budget,
    /// The worker made the same call three times with no file changed in between.
    Repetition,
}

impl WrapUpReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Turns => "turns",
            Self::Context => "context",
            Self::Budget => "budget",
            Self::Repetition => "repetition",
        }
    }

    /// What ran out, for a person.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Turns => "the round's turns ran out",
            Self::Context => "the context window is nearly full",
            Self::Budget => "the run's token budget is nearly spent",
            Self::Repetition => "the worker repeated the same call three times",
        }
    }
}

/// When the engine runs the repository's check (`--check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckPoint {
    /// Before the round's first turn, for the observation.
    RoundStart,
    /// On the worker's `complete` report: a failing check refuses the claim.
    Claim,
    /// After a worker's tool call changed files (`--check-on-change`): its result is added to
    /// the call's result, so the worker sees at once what its change did.
    Change,
}

/// What the check's run says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckVerdict {
    /// Exit 0, and the output does not say that no test ran.
    Passed,
    /// A non-zero exit, or a signal.
    Failed,
    /// Exit 0, but the runner ran no test: not a pass.
    NoTests,
    /// Stopped at its time limit.
    TimedOut,
    /// It could not be started (or the sandbox refused it).
    NotRun,
}

impl CheckVerdict {
    pub fn is_pass(self) -> bool {
        self == Self::Passed
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::NoTests => "ran no test",
            Self::TimedOut => "timed out",
            Self::NotRun => "not run",
        }
    }
}

/// One run of the check: the command, how it ended, how long it took, and its output
/// (bounded, the failure lines first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRun {
    pub command: String,
    pub exit_code: Option<i32>,
    pub verdict: CheckVerdict,
    /// Why the verdict is what it is, when the exit code alone does not say (`unittest ran
    /// 0 tests`, `timed out after 120 s`, `could not start: ...`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    pub wall_ms: u64,
    pub output: String,
}

/// How much of one file a round's observation shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// The whole text.
    Whole,
    /// Its first lines, with a note to read the rest.
    Head,
}

/// A file whose text a round's observation shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedFile {
    pub path: String,
    pub bytes: u64,
    pub lines: u64,
    pub shown: Shown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    RunStarted {
        run_id: String,
        objective: String,
        max_rounds: u32,
        workspace: String,
        backend: String,
        model: Option<String>,
        device: String,
        sandbox: String,
        run_dir: String,
    },
    RoundStarted {
        round: u32,
        max_rounds: u32,
        prompt_sha256: String,
        prompt_tokens: u32,
        /// Tokens of the run's fixed prefix restored into the round's fresh context instead of
        /// evaluated again: from memory in rounds 2..N, from the disk cache in round 1 when an
        /// earlier run stored it (0 with `--no-prefix-cache`, when nothing matching was
        /// stored, or when it changed).
        #[serde(default)]
        prefix_tokens_reused: u32,
    },
    /// The turn's prompt is being read (evaluated) and that takes longer than about a
    /// second: `done` of its `total` tokens are in the context (tokens kept from earlier turns
    /// and the restored prefix count as done). At most a few a second; the last of a turn has
    /// `done` = `total`.
    PromptProgress {
        round: u32,
        done: u32,
        total: u32,
    },
    Token {
        round: u32,
        text: String,
    },
    ToolCall {
        round: u32,
        name: String,
        arguments: Value,
    },
    ToolResult {
        round: u32,
        name: String,
        ok: bool,
        output: String,
    },
    /// The engine ran the repository's check (`--check`): at the round's start for the
    /// observation, or on a `complete` claim.
    CheckFinished {
        round: u32,
        at: CheckPoint,
        check: CheckRun,
    },
    /// What the round's observation gave the child after the fixed prompt: the files listed,
    /// those shown (whole or by their head) and the whole text given.
    RoundObserved {
        round: u32,
        /// Files in the listing (tracked and untracked-not-ignored).
        files_listed: u64,
        /// Files left out of the listing (over its bound).
        files_unlisted: u64,
        shown: Vec<ObservedFile>,
        /// The check's verdict in the observation, when a check ran.
        check: Option<CheckVerdict>,
        /// Exactly what the child was given after the fixed prompt.
        text: String,
    },
    /// The next turn is the round's last: it may only file the report.
    WrapUp {
        round: u32,
        reason: WrapUpReason,
    },
    ReportRejected {
        round: u32,
        reason: String,
    },
    ReportAccepted {
        round: u32,
        report: Report,
    },
    /// The workspace changed during a round (live, from the watcher); not every consumer cares.
    WorkspaceChanged {
        round: u32,
        files: Vec<ChangedFile>,
    },
    /// A command waits for the person's decision (`--approval ask`).
    ApprovalRequested {
        id: u64,
        round: u32,
        command: String,
        cwd: String,
    },
    /// A note from the person supervising the run, given to round `round` after the fixed
    /// prompt, marked as theirs. Never the worker's report, never evidence.
    Note {
        round: u32,
        /// The note as the person wrote it (verbatim; sanitized only where it is shown).
        text: String,
        /// When the person wrote it (RFC 3339, UTC).
        written_at: String,
        /// Where it came from: `tui`, `file` (`--notes FILE`), `resume` (`--resume --note`)
        /// or `review` (sent back from the review).
        source: NoteSource,
    },
    /// Something the person should know that does not stop the run.
    Warning {
        message: String,
    },
    /// The real context size of the round's conversation, counted by the backend before a
    /// turn (so after every tool result).
    ContextCounted {
        round: u32,
        tokens: u32,
    },
    /// One turn's generation ended: its token counts and times, and the context it leaves
    /// (the count before the turn plus what it generated).
    TurnFinished {
        round: u32,
        prompt_tokens: u32,
        generated_tokens: u32,
        /// From the request to the first generated token.
        prompt_ms: u64,
        /// From the first generated token to the last.
        gen_ms: u64,
        context_tokens: u32,
    },
    RoundFinished {
        round: u32,
        outcome: RoundOutcome,
        prompt_tokens: u32,
        generated_tokens: u32,
        wall_ms: u64,
        files_changed: usize,
        insertions: usize,
        deletions: usize,
        error: Option<String>,
        /// The round's changes could not be compared (a snapshot failed): the counts are 0
        /// because nothing could be looked at, not because nothing changed. Absent from the
        /// JSON when false.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        changes_unknown: bool,
    },
    RunFinished {
        status: RunStatus,
        rounds_started: u32,
        report: Option<Report>,
        last_valid_report: Option<Report>,
        error: Option<String>,
        worker_reported: bool,
        verification: Option<Verification>,
    },
}

/// An event with its timestamp, as written to stdout and `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stamped {
    pub ts: String,
    #[serde(flatten)]
    pub event: Event,
}

impl Stamped {
    /// `ts` is an RFC 3339 UTC time with milliseconds, as the engine's clock writes it.
    pub fn new(ts: String, event: Event) -> Self {
        Self { ts, event }
    }

    /// One JSON line, without the newline (terminal controls escaped, see [`json_line`]).
    pub fn to_line(&self) -> String {
        match serde_json::to_string(self) {
            Ok(line) => json_line(line),
            Err(e) => format!(
                r#"{{"type":"warning","ts":"{}","message":"unserializable event: {e}"}}"#,
                self.ts
            ),
        }
    }
}

/// A serialized JSON value made safe as one line for every reader and every terminal it is
/// piped to. serde_json escapes only C0 controls, and leaves raw DEL, the C1 controls (U+009B
/// is a CSI on many terminals, U+009D an OSC), the bidi marks, overrides and isolates
/// (U+202E, U+2066–U+2069) and U+2028/U+2029 (where `splitlines` and JavaScript cut a line)
/// inside strings. Each becomes `\uXXXX`, which means the same character to a JSON reader:
/// outside strings serde_json writes only printable ASCII, so every one of them is inside a
/// string, and all of them are in the Basic Multilingual Plane.
pub fn json_line(line: String) -> String {
    if !line.chars().any(crate::text::is_unsafe_on_a_terminal) {
        return line;
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if crate::text::is_unsafe_on_a_terminal(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_carry_no_raw_terminal_control() {
        let text: String = ['a', '\u{7f}', '\u{85}', '\u{9b}', '\u{9d}', '\u{202e}']
            .into_iter()
            .chain('\u{2066}'..='\u{2069}')
            .chain([
                '\u{200e}', '\u{061c}', '\u{2028}', '\u{2029}', '\u{1b}', 'é', 'z',
            ])
            .collect();
        let event = Stamped::new(
            "t".into(),
            Event::Token {
                round: 1,
                text: text.clone(),
            },
        );
        let line = event.to_line();
        assert!(
            !line.chars().any(crate::text::is_unsafe_on_a_terminal),
            "{line:?}"
        );
        for escaped in [
            "\\u007f", "\\u009b", "\\u009d", "\\u202e", "\\u2066", "\\u2069",
        ] {
            assert!(line.contains(escaped), "{escaped} in {line}");
        }
        let back: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["text"], Value::String(text));
        // Nothing to escape: the line is serde_json's own.
        let plain = Stamped::new(
            "t".into(),
            Event::Token {
                round: 1,
                text: "é\"\\n".into(),
            },
        );
        assert_eq!(plain.to_line(), serde_json::to_string(&plain).unwrap());
    }

    #[test]
    fn file_status_serializes_as_its_contract_word() {
        for status in [
            FileStatus::Added,
            FileStatus::Modified,
            FileStatus::Deleted,
            FileStatus::Renamed,
            FileStatus::TypeChange,
        ] {
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, Value::String(status.as_str().into()));
            let back: FileStatus = serde_json::from_value(json).unwrap();
            assert_eq!(back, status);
        }
    }

    #[test]
    fn changed_file_keeps_its_event_fields() {
        let file = ChangedFile {
            path: "a.txt".into(),
            status: FileStatus::TypeChange,
            insertions: 1,
            deletions: 2,
            binary: false,
            outside_run: false,
        };
        assert_eq!(
            serde_json::to_value(&file).unwrap(),
            serde_json::json!({"path": "a.txt", "status": "typechange", "insertions": 1, "deletions": 2, "binary": false})
        );
    }
}
