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
mod guard;
pub mod prompt;
pub mod report;
pub mod run_info;
pub mod runlog;
pub mod verify;

mod record;
mod round;
mod turn;
pub mod wrapup;

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::chat::ChatFormat;
use crate::llm::Backend;
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
        }
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

        let mut last_valid: Option<Report> = start.previous;
        let mut rounds_started = first_round - 1;
        let mut error = None;
        let mut final_report = None;
        let mut status = RunStatus::BudgetLimited;
        for round in first_round..=self.config.max_rounds {
            if self.cancel.is_cancelled() {
                status = RunStatus::Cancelled;
                break;
            }
            rounds_started = round;
            match self.round(round, last_valid.as_ref(), info.ctx_size, info.max_tokens) {
                RoundEnd::Reported(report) => {
                    let report_status = report.status;
                    last_valid = Some(report.clone());
                    match report_status {
                        ReportStatus::Continue => {
                            if round == self.config.max_rounds {
                                final_report = Some(report);
                            }
                        }
                        ReportStatus::Complete => {
                            status = RunStatus::Complete;
                            final_report = Some(report);
                            break;
                        }
                        ReportStatus::Blocked => {
                            status = RunStatus::Blocked;
                            final_report = Some(report);
                            break;
                        }
                    }
                }
                RoundEnd::Failed(reason) => {
                    status = RunStatus::RoundFailed;
                    error = Some(format!("round {round}: {reason}"));
                    break;
                }
                RoundEnd::OutOfBudget => {
                    status = RunStatus::BudgetLimited;
                    error = Some(format!("round {round}: the run's token budget is spent"));
                    break;
                }
                RoundEnd::Cancelled => {
                    status = RunStatus::Cancelled;
                    break;
                }
            }
        }

        let verification = self.verify(status);
        self.rec.emit(Event::RunFinished {
            status,
            rounds_started,
            report: final_report.clone(),
            last_valid_report: last_valid.clone(),
            error: error.clone(),
            worker_reported: status.is_worker_report(),
            verification: verification.clone(),
        });
        self.write_run_json(Some(status), rounds_started, &started_at);
        RunSummary {
            status,
            rounds_started,
            report: final_report,
            last_valid_report: last_valid,
            error,
            verification,
            run_dir: self.rec.log.dir().to_path_buf(),
            hook_warnings: Vec::new(),
        }
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
