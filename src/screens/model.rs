//! The TUI's data: what the screens show and the messages and effects that change it.
//!
//! Plain values only, no behaviour beyond small accessors: every other ui module may import
//! this one, and it imports nothing of the ui, so data never depends on how it is drawn.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::error::ExitCode;
use crate::protocol::event::{ChangedFile, Event, RunStatus, Verification};
use crate::protocol::report::Report;
use crate::tools::approval::ApprovalDecision;
use crate::workspace::DiffModel;

/// What the person sees before and around a run: fixed by the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    pub repo: String,
    pub workspace: String,
    pub model: String,
    pub device: String,
    pub max_rounds: u32,
    pub sandbox: String,
    pub approval: String,
    pub verify: Option<String>,
    pub run_dir: String,
    pub ctx_size: u32,
    /// The branch of a worktree run (`--worktree`): the worker works there, not in `repo`.
    pub worktree: Option<String>,
    /// A round's wall-clock limit in seconds (`--round-timeout`), shown beside its time.
    pub round_timeout: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Asking for the objective.
    Editing,
    Running,
    /// Reviewing the finished run.
    Finished,
}

/// The run screen's panes that take the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pane {
    #[default]
    Stream,
    Reports,
    Changes,
    Objective,
}

impl Pane {
    pub fn next(self) -> Self {
        match self {
            Self::Stream => Self::Reports,
            Self::Reports => Self::Changes,
            Self::Changes => Self::Objective,
            Self::Objective => Self::Stream,
        }
    }

    pub fn previous(self) -> Self {
        match self {
            Self::Stream => Self::Objective,
            Self::Reports => Self::Stream,
            Self::Changes => Self::Reports,
            Self::Objective => Self::Changes,
        }
    }
}

/// A command waiting for the person's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub id: u64,
    pub round: u32,
    pub command: String,
    pub cwd: String,
}

/// One row of the reports list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportEntry {
    Accepted { round: u32, report: Report },
    Rejected { round: u32, reason: String },
    Failed { round: u32, error: String },
}

impl ReportEntry {
    pub fn round(&self) -> u32 {
        match self {
            Self::Accepted { round, .. }
            | Self::Rejected { round, .. }
            | Self::Failed { round, .. } => *round,
        }
    }
}

/// The files one round changed; `live` while the round runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundChanges {
    pub round: u32,
    pub files: Vec<ChangedFile>,
    pub live: bool,
    /// The round's changes could not be compared: never shown as "no changes".
    pub unknown: bool,
}

/// One row of the changes list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeRow {
    Round(usize),
    File(usize, usize),
}

/// Something loaded off the UI thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loadable<T> {
    Loading,
    Ready(T),
    Failed(String),
}

/// Which diff a diff view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffSource {
    /// A finished round, from its `diff.patch` in the run log.
    Round(u32),
    /// The current round while it runs: changes since the round started, in the files it touched.
    Live(u32),
    /// Everything the run changed, since the baseline taken right before it started.
    Review,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitState {
    NotYet,
    Committing,
    Done(String),
    Failed(String),
}

/// The finished run, as the review screen shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub status: RunStatus,
    pub rounds_started: u32,
    pub report: Option<Report>,
    pub last_valid: Option<Report>,
    pub error: Option<String>,
    pub verification: Option<Verification>,
    pub diff: Loadable<DiffModel>,
    pub file: usize,
    pub diff_scroll: usize,
    pub commit: CommitState,
    /// The run's warnings (e.g. git hooks or config changed during a round).
    pub warnings: Vec<String>,
    /// The files the person left out of the commit (paths as the diff lists them); space
    /// toggles. Every other listed file is chosen. It starts as the files changed outside
    /// the run, which are therefore never chosen by default.
    pub left_out: BTreeSet<String>,
    /// Files changed outside the run (someone else's edits during it): listed apart, after
    /// the run's own, and never chosen by default.
    pub outside: BTreeSet<String>,
    /// Gitlinks the list has shown (a repository nested in the work tree, a submodule moved):
    /// a separate repository whose config and hooks git runs once it is committed, so never
    /// chosen by default; each gets a row of words beneath its own.
    pub gitlinks: BTreeSet<String>,
    /// Files the list has shown that hold the person's changes from before the run too
    /// (`FileDiff::yours_before`): a commit takes whole files, so never chosen by default.
    pub yours: BTreeSet<String>,
    /// What the review itself took away (a discard, the worktree removed), said where the
    /// list of files is empty instead of "the run changed no files".
    pub emptied: Option<String>,
    /// The rounds reverted in the review: the commit message no longer describes them.
    pub reverted: BTreeSet<u32>,
}

impl Review {
    /// Whether the file at `path` goes into the commit.
    pub fn is_chosen(&self, path: &str) -> bool {
        !self.left_out.contains(path)
    }

    /// How many listed files are left out of the commit.
    pub fn listed_left_out(&self) -> usize {
        match &self.diff {
            Loadable::Ready(diff) => diff
                .files
                .iter()
                .filter(|f| !self.is_chosen(&f.path))
                .count(),
            _ => 0,
        }
    }

    /// The listed files that go into the commit: path, and old path of a rename.
    pub fn chosen(&self) -> Vec<(&str, Option<&str>)> {
        match &self.diff {
            Loadable::Ready(diff) => diff
                .files
                .iter()
                .filter(|f| self.is_chosen(&f.path))
                .map(|f| (f.path.as_str(), f.old_path.as_deref()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether every listed file is chosen (then a commit takes all the run's changes).
    pub fn all_chosen(&self) -> bool {
        match &self.diff {
            Loadable::Ready(diff) => diff.files.iter().all(|f| self.is_chosen(&f.path)),
            _ => true,
        }
    }

    /// The index of the first file changed outside the run, when there is one (they come
    /// last in the list).
    pub fn outside_start(&self) -> Option<usize> {
        match &self.diff {
            Loadable::Ready(diff) => diff
                .files
                .iter()
                .position(|f| self.outside.contains(&f.path)),
            _ => None,
        }
    }

    /// The list row of file `index`: one more after the heading of the outside group, and
    /// `note_rows` more for the words beneath each gitlink before it.
    pub fn row_of(&self, index: usize, note_rows: usize) -> usize {
        let Loadable::Ready(diff) = &self.diff else {
            return index;
        };
        let gitlinks = diff.files.iter().take(index).filter(|f| f.gitlink).count();
        index
            + usize::from(self.outside_start().is_some_and(|start| index >= start))
            + gitlinks * note_rows
    }
}

/// Everything that changes the state.
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "engine events are most of the traffic; boxing them would allocate per token"
)]
pub enum Msg {
    Engine(Event),
    /// The approval broker asks (may also arrive as `Event::ApprovalRequested`).
    ApprovalAsked(Approval),
    /// The live watcher's list of files changed so far in a round that is still running.
    LiveChanges(u32, Vec<ChangedFile>),
    Key(crossterm::event::KeyEvent),
    Mouse(crossterm::event::MouseEvent),
    Paste(String),
    /// Time since the UI started.
    Tick(Duration),
    /// How far the model's load is, 0 to 1 (before `run_started`).
    ModelLoading(f32),
    DiffLoaded(DiffSource, Result<DiffModel, String>),
    /// What a review action did (the review handles it: `screens/review/results.rs`).
    Review(ReviewResult),
    /// The review's send-back: the run goes on (its new directory and cap), or why not.
    SentBack(Result<SentBack, String>),
    /// The process was asked to stop (SIGTERM, SIGHUP): cancel and quit when the run ends.
    Terminate,
}

/// A review action that changes the work tree or the repository: the event loop performs it
/// off the loop (`terminal/event_loop/reviewing.rs`) and answers with a [`ReviewResult`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewEffect {
    /// Commit with this message: the review's chosen files (all of them when every listed
    /// file is chosen).
    Commit(String),
    /// Apply this round's patch in reverse, if it still applies cleanly.
    RevertRound(u32),
    /// Put the baseline back, after the person confirmed the list of what is lost.
    Discard,
    /// A worktree run's apply, or the removal of its worktree and branch.
    Worktree(WorktreeAction),
}

impl ReviewEffect {
    /// What became of this action when it is not performed, for `why` (a replay is
    /// read-only).
    pub fn refused(self, why: &str) -> ReviewResult {
        let why = why.to_string();
        match self {
            Self::Commit(_) => ReviewResult::Committed(Err(why)),
            Self::RevertRound(round) => ReviewResult::Reverted(round, Err(why)),
            Self::Discard => ReviewResult::Discarded(Err(why)),
            Self::Worktree(action) => ReviewResult::WorktreeDone(action, Err(why)),
        }
    }
}

/// What a [`ReviewEffect`] did, or why it did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewResult {
    /// The commit: its line (`abc1234567 on main (…)`).
    Committed(Result<String, String>),
    /// A round's revert: the paths it changed, or why nothing was changed.
    Reverted(u32, Result<Vec<String>, String>),
    /// The discard: the paths restored or removed, or why nothing was changed.
    Discarded(Result<Vec<String>, String>),
    /// A worktree action (apply, discard) ended: what to tell the person.
    WorktreeDone(WorktreeAction, Result<String, String>),
}

/// A run sent back to work from the review: where it goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentBack {
    pub run_dir: String,
    /// The round it goes on at, and its new cap.
    pub round: u32,
    pub max_rounds: u32,
}

/// Side effects update asks the event loop for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    StartRun(String),
    CancelRun,
    Answer(u64, ApprovalDecision),
    LoadDiff(DiffSource),
    /// A review action on the work tree or the repository, performed off the loop; its
    /// result comes back as [`Msg::Review`].
    Review(ReviewEffect),
    /// Give this note (checked) to the running run's next round.
    Note(String),
    /// Resume the reviewed run with this note, its round cap raised by `rounds`.
    SendBack {
        note: String,
        rounds: u32,
    },
    Quit(ExitCode),
}

/// Where a replay (`ralph-tui replay`) is: the screens say it is one, at what speed, where
/// and whether it is paused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayMark {
    pub speed: f64,
    /// Events played so far, of `total`.
    pub position: usize,
    pub total: usize,
    pub paused: bool,
}

impl ReplayMark {
    /// `REPLAY ×2 · 120/340 · paused`.
    pub fn label(&self) -> String {
        let paused = if self.paused { " · paused" } else { "" };
        format!(
            "REPLAY ×{} · {}/{}{paused}",
            self.speed, self.position, self.total
        )
    }
}

/// What became of a worktree run's worktree and branch during the review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorktreeGone {
    /// The commit applied the run's changes to the person's work tree and removed them: the
    /// review goes on there (the files left out of the commit can still be discarded).
    Committed,
    /// `X X` removed them: nothing of the run is left to act on.
    Removed,
}

/// What the review of a worktree run can do besides committing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorktreeAction {
    /// Merge the run's changes into the person's work tree.
    Apply,
    /// Remove the worktree and the branch.
    Discard,
}

/// After a Ctrl-C that confirmed the cancel, another one this long after quits at once.
pub const FORCE_QUIT_AFTER: Duration = Duration::from_secs(3);

/// A prompt being read, from its `prompt_progress` events: the first and the latest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PromptGauge {
    pub done: u32,
    pub total: u32,
    /// The first event's `done` and when it came (UI time).
    first: (u32, std::time::Duration),
    /// When the latest came.
    at: std::time::Duration,
}

impl PromptGauge {
    /// The gauge after an event: `None` once the prompt is read; a new gauge for another
    /// prompt (another total, or fewer tokens done than before).
    pub fn update(
        old: Option<Self>,
        done: u32,
        total: u32,
        now: std::time::Duration,
    ) -> Option<Self> {
        if done >= total {
            return None;
        }
        let first = match old {
            Some(g) if g.total == total && done >= g.done => g.first,
            _ => (done, now),
        };
        Some(Self {
            done,
            total,
            first,
            at: now,
        })
    }

    /// Tokens a second read so far; `None` before two events.
    pub fn rate(&self) -> Option<f64> {
        let read = self.done.checked_sub(self.first.0).filter(|n| *n > 0)?;
        let took = self.at.checked_sub(self.first.1).filter(|d| !d.is_zero())?;
        Some(f64::from(read) / took.as_secs_f64())
    }

    /// The time left at the rate seen so far; `None` before two events.
    pub fn left(&self) -> Option<std::time::Duration> {
        let read = self.done.checked_sub(self.first.0).filter(|n| *n > 0)?;
        let took = self.at.checked_sub(self.first.1).filter(|d| !d.is_zero())?;
        let per_token = took.as_secs_f64() / f64::from(read);
        Some(std::time::Duration::from_secs_f64(
            per_token * f64::from(self.total - self.done),
        ))
    }

    /// The time left at `now`: [`Self::left`] less the time since the latest event, so the
    /// estimate counts down between batches; `None` once it has run out (the batch is late).
    pub fn left_at(&self, now: std::time::Duration) -> Option<std::time::Duration> {
        let left = self.left()?.checked_sub(now.saturating_sub(self.at))?;
        (!left.is_zero()).then_some(left)
    }
}
