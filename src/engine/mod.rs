//! The run loop.
//!
//! One run: an immutable objective, up to N rounds, each a fresh child that gets only the
//! fixed round prompt and the previous validated report. This file owns the run: its settings,
//! how it is built (`Engine::new`), and the loop over rounds that decides how the run ends.
//! `round` owns one round (prompt, scratch space, diff, `round_finished`), `turn` the child's
//! turn loop inside it, `record` where events, transcript lines and `run.json` go. The engine
//! knows nothing about terminals: it emits `Event`s, which the run log, the headless writer
//! and the TUI consume.
//!
//! The engine is blocking and runs on its own OS thread, the same thread that owns the model
//! and every context (llama contexts are not `Sync`). Cancellation is one token for the run;
//! each round works under a child token.

mod announce;
mod changes;
pub mod check;
mod conversation;
mod guard;
pub mod notes;
pub mod observe;
pub mod probe;
pub mod prompt;
mod pytrace;
pub mod report;
pub mod run_info;
pub mod runlog;
pub mod verify;

mod record;
mod round;
mod stall;
pub mod testrun;
mod turn;
mod undo;
pub mod wrapup;

#[cfg(test)]
mod testing;

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::chat::ChatFormat;
use crate::llm::{Backend, BackendInfo};
use crate::protocol::event::{Event, RunStatus, Stamped, Verification};
use crate::protocol::report::{Report, ReportStatus};
use crate::tools::approval::Approver;
use crate::tools::{Registry, ToolPolicy};
use crate::workspace::{Snapshot, Workspace};
use record::Recorder;
use run_info::RunInfo;
use runlog::RunLog;

/// How many rejected reports a child may correct within one round.
pub const MAX_REPORT_ATTEMPTS: u32 = 3;
/// Most bytes of serialized arguments one tool call may carry.
pub const MAX_ARGUMENT_BYTES: usize = 256 * 1024;

/// Receives every event after the run log has it.
pub type EventSink = Box<dyn FnMut(&Stamped) + Send>;

/// The engine's part of the settings.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub run_id: String,
    pub objective: String,
    pub max_rounds: u32,
    pub max_turns: u32,
    /// Most tokens generated over the whole run (`None`: unbounded).
    pub token_budget: Option<u64>,
    pub verify: Option<String>,
    /// The repository's check command (`--check`, `auto` already resolved): run at each
    /// round's start and on a `complete` claim. `None`: no check.
    pub check: Option<String>,
    /// Run the check after each worker call that changes files, its result added to the
    /// call's (`--check-on-change`).
    pub check_on_change: bool,
    /// Give each round the workspace observation after the fixed prompt (`--observe`).
    pub observe: bool,
    /// Rounds in a row that change nothing and say the same next steps before the run ends
    /// `stalled` (`--stall-rounds`; 0: never).
    pub stall_rounds: u32,
    /// A round's wall-clock limit (`--round-timeout`); past it the run ends `stalled`.
    pub round_timeout: Option<std::time::Duration>,
    /// Things the person should know, emitted as `warning` events right after `run_started`.
    pub warnings: Vec<String>,
    /// Extra facts for `run.json` (settings, model sha256, ...).
    pub run_info: RunInfo,
}

/// How a run ended, for the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub status: RunStatus,
    pub rounds_started: u32,
    pub report: Option<Report>,
    pub last_valid_report: Option<Report>,
    pub error: Option<String>,
    pub verification: Option<Verification>,
    pub run_dir: PathBuf,
    /// Hooks that failed after `run_finished` (`on_finish`): no event can say so any more,
    /// so the caller shows them (the TUI's review; stderr headless).
    pub hook_warnings: Vec<String>,
}

/// Where a run's round loop begins: round 1 with no report for a fresh run; for a resumed
/// run, the round after the old run's last started one, given its last valid report.
#[derive(Debug, Clone, PartialEq)]
pub struct StartAt {
    pub round: u32,
    pub previous: Option<Report>,
}

impl StartAt {
    /// A fresh run: round 1, no earlier report.
    pub fn fresh() -> Self {
        Self {
            round: 1,
            previous: None,
        }
    }
}

/// How one round ended.
enum RoundEnd {
    Reported(Report),
    Failed(String),
    /// The run's token budget ran out inside the round.
    OutOfBudget,
    /// The round ran past its wall-clock limit (`--round-timeout`).
    TimedOut(std::time::Duration),
    Cancelled,
}

/// Live-change hook: told where each round starts so it can diff against it.
pub trait RoundWatch: Send {
    fn round_started(&self, round: u32, base: Snapshot);
    fn round_ended(&self);
}

/// The tools a child may call and the rules they run under.
pub struct Toolbox<'a> {
    pub registry: &'a Registry,
    pub policy: ToolPolicy,
    pub approver: Arc<dyn Approver>,
}

/// One run, ready to go: built with [`Engine::new`], started with [`Engine::run`].
pub struct Engine<'a> {
    config: RunConfig,
    backend: &'a mut dyn Backend,
    format: &'a dyn ChatFormat,
    tools: Toolbox<'a>,
    workspace: Workspace,
    rec: Recorder,
    cancel: CancellationToken,
    watch: Option<Box<dyn RoundWatch + 'a>>,
    /// Tokens generated so far in this run.
    generated_total: u64,
    /// Snapshots over the run and whose changes they show.
    changes: changes::RunChanges,
    /// The person's notes waiting for the next round.
    notes: notes::NoteInbox,
    /// The rounds in a row that made no progress, and the reason once they are too many.
    stall: stall::StallWatch,
    stalled: Option<String>,
}

impl<'a> Engine<'a> {
    /// A run of `config` in `workspace`, logged to `log`; `sink` hears every event after the
    /// log has it. Without [`Engine::with_cancel`] nothing outside can cancel it.
    pub fn new(
        config: RunConfig,
        backend: &'a mut dyn Backend,
        format: &'a dyn ChatFormat,
        tools: Toolbox<'a>,
        workspace: Workspace,
        log: RunLog,
        sink: EventSink,
    ) -> Self {
        let stall = stall::StallWatch::new(config.stall_rounds);
        Self {
            config,
            backend,
            format,
            tools,
            workspace,
            rec: Recorder::new(log, sink),
            cancel: CancellationToken::new(),
            watch: None,
            generated_total: 0,
            changes: changes::RunChanges::default(),
            notes: notes::NoteInbox::default(),
            stall,
            stalled: None,
        }
    }

    /// Gives each round the notes waiting in `notes` when it starts.
    #[must_use]
    pub fn with_notes(mut self, notes: notes::NoteInbox) -> Self {
        self.notes = notes;
        self
    }

    /// Runs under `cancel`: cancelling it ends the run as `cancelled`.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Tells `watch` where each round starts and when it ends.
    #[must_use]
    pub fn with_watch(mut self, watch: Box<dyn RoundWatch + 'a>) -> Self {
        self.watch = Some(watch);
        self
    }

    /// Runs the whole loop and returns how it ended. The last event is always `run_finished`.
    pub fn run(self) -> RunSummary {
        self.run_from(StartAt::fresh())
    }

    /// Runs the loop from `start` (a resumed run goes on with the old run's round numbers and
    /// last valid report); `max_rounds` counts absolute round numbers.
    pub fn run_from(mut self, start: StartAt) -> RunSummary {
        let started_at = chrono::Utc::now().to_rfc3339();
        let first_round = start.round.max(1);
        self.write_run_json(None, first_round - 1, &started_at);
        let info = self.backend.info();
        self.announce_run(&info);
        let end = self.run_rounds(first_round, start.previous, &info);
        let verification = self.verify(end.status);
        self.rec.emit(Event::RunFinished {
            status: end.status,
            rounds_started: end.rounds_started,
            report: end.final_report.clone(),
            last_valid_report: end.last_valid.clone(),
            error: end.error.clone(),
            worker_reported: end.status.is_worker_report(),
            verification: verification.clone(),
        });
        self.write_run_json(Some(end.status), end.rounds_started, &started_at);
        RunSummary {
            status: end.status,
            rounds_started: end.rounds_started,
            report: end.final_report,
            last_valid_report: end.last_valid,
            error: end.error,
            verification,
            run_dir: self.rec.log.dir().to_path_buf(),
            hook_warnings: Vec::new(),
        }
    }

    /// Emits `run_started`, then a `warning` for each of the run's warnings.
    fn announce_run(&mut self, info: &BackendInfo) {
        let sandbox = serde_json::to_value(self.tools.policy.sandbox)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        self.rec.emit(Event::RunStarted {
            run_id: self.config.run_id.clone(),
            objective: self.config.objective.clone(),
            max_rounds: self.config.max_rounds,
            workspace: self.workspace.root().display().to_string(),
            backend: info.name.clone(),
            model: info.model.clone(),
            device: info.device.clone(),
            sandbox,
            run_dir: self.rec.log.dir().display().to_string(),
        });
        for message in self.config.warnings.clone() {
            self.rec.emit(Event::Warning { message });
        }
    }

    /// Runs rounds from `first_round` until a report ends the run, a round fails, the budget
    /// is spent, the run is cancelled or `max_rounds` is reached.
    fn run_rounds(
        &mut self,
        first_round: u32,
        previous: Option<Report>,
        info: &BackendInfo,
    ) -> LoopEnd {
        let mut end = LoopEnd {
            status: RunStatus::BudgetLimited,
            rounds_started: first_round - 1,
            last_valid: previous,
            final_report: None,
            error: None,
        };
        for round in first_round..=self.config.max_rounds {
            if self.cancel.is_cancelled() {
                end.status = RunStatus::Cancelled;
                break;
            }
            end.rounds_started = round;
            let last_valid = end.last_valid.as_ref();
            let round_end = self.round(round, last_valid, info.ctx_size, info.max_tokens);
            let is_last = round == self.config.max_rounds;
            if end.take(round, round_end, is_last) {
                break;
            }
            if let Some(reason) = self.stalled.take() {
                end.stalled(reason);
                break;
            }
        }
        end
    }
    /// `--verify`'s check of a run that ended `complete`; `None` otherwise.
    fn verify(&self, status: RunStatus) -> Option<Verification> {
        let command = self.config.verify.as_deref()?;
        (status == RunStatus::Complete).then(|| {
            verify::run(
                command,
                self.workspace.root(),
                &self.tools.policy,
                &self.config.run_id,
                &self.cancel,
            )
        })
    }
}

/// Where the round loop stopped, and what the run carries out of it.
struct LoopEnd {
    status: RunStatus,
    rounds_started: u32,
    /// The last report the engine accepted, from this run or the one it resumes.
    last_valid: Option<Report>,
    /// The report that ended the run (or the last round's, when the rounds ran out).
    final_report: Option<Report>,
    error: Option<String>,
}

impl LoopEnd {
    /// The run stalls here, for `reason`; its last report is the one it stops on.
    fn stalled(&mut self, reason: String) {
        self.status = RunStatus::Stalled;
        self.final_report = self.last_valid.clone();
        self.error = Some(reason);
    }

    /// Takes round `round`'s end into account; true when the run stops here.
    fn take(&mut self, round: u32, round_end: RoundEnd, is_last: bool) -> bool {
        match round_end {
            RoundEnd::Reported(report) => {
                let report_status = report.status;
                self.last_valid = Some(report.clone());
                match report_status {
                    ReportStatus::Continue => {
                        if is_last {
                            self.final_report = Some(report);
                        }
                        false
                    }
                    ReportStatus::Complete => {
                        self.status = RunStatus::Complete;
                        self.final_report = Some(report);
                        true
                    }
                    ReportStatus::Blocked => {
                        self.status = RunStatus::Blocked;
                        self.final_report = Some(report);
                        true
                    }
                }
            }
            RoundEnd::Failed(reason) => {
                self.status = RunStatus::RoundFailed;
                self.error = Some(format!("round {round}: {reason}"));
                true
            }
            RoundEnd::OutOfBudget => {
                self.status = RunStatus::BudgetLimited;
                self.error = Some(format!("round {round}: the run's token budget is spent"));
                true
            }
            RoundEnd::TimedOut(limit) => {
                self.status = RunStatus::Stalled;
                self.error = Some(format!(
                    "round {round} ran past its wall-clock limit of {} s (--round-timeout) and was stopped",
                    limit.as_secs()
                ));
                true
            }
            RoundEnd::Cancelled => {
                self.status = RunStatus::Cancelled;
                true
            }
        }
    }
}
