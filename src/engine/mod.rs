//! The round loop.
//!
//! One run: an immutable objective, up to N rounds, each a fresh child that gets only the
//! fixed round prompt and the previous validated report. Inside a round the child runs a
//! turn loop (generate → parse calls → run tools → feed results back) until it files a valid
//! report, runs out of turns, or fails. The engine knows nothing about terminals: it emits
//! `Event`s, which the run log, the headless writer and the TUI consume.
//!
//! The engine is blocking and runs on its own OS thread, the same thread that owns the model
//! and every context (llama contexts are not `Sync`). Cancellation is one token for the run;
//! each round works under a child token.

pub mod event;
pub mod prompt;
pub mod report;
pub mod runlog;
pub mod verify;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatFormat, ParsedCall};
use crate::llm::{Backend, BackendError, Message, Request, Role, StopReason};
use crate::tools::approval::Approver;
use crate::tools::process::ProcessTracker;
use crate::tools::{Registry, ToolContext, ToolPolicy, REPORT_TOOL};
use crate::workspace::gitguard::GitFingerprint;
use crate::workspace::{Snapshot, Workspace};
use event::{Event, RoundOutcome, RunStatus, Stamped, Verification};
use report::Report;
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
    pub run_info: Value,
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

/// Where events and transcript lines go: the run log first, then the consumer.
pub struct Recorder {
    pub log: RunLog,
    pub sink: EventSink,
}

impl Recorder {
    pub fn new(log: RunLog, sink: EventSink) -> Self {
        Self { log, sink }
    }

    pub fn emit(&mut self, event: Event) {
        let stamped = Stamped::now(event);
        if let Err(e) = self.log.append_event(&stamped.to_line()) {
            tracing::error!("run log: {e}");
        }
        (self.sink)(&stamped);
    }

    fn transcript(&mut self, message: &Message) {
        let value = serde_json::to_value(message).unwrap_or(Value::Null);
        if let Err(e) = self.log.append_transcript(&value) {
            tracing::error!("transcript: {e}");
        }
    }
}

pub struct Engine<'a> {
    pub config: RunConfig,
    pub backend: &'a mut dyn Backend,
    pub format: &'a dyn ChatFormat,
    pub registry: &'a Registry,
    pub policy: ToolPolicy,
    pub approver: Arc<dyn Approver>,
    pub workspace: Workspace,
    pub rec: Recorder,
    pub cancel: CancellationToken,
    pub watch: Option<Box<dyn RoundWatch + 'a>>,
    /// Tokens generated so far in this run.
    pub generated_total: u64,
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Per-round totals for `round_finished`.
#[derive(Default)]
struct RoundTally {
    prompt_tokens: u32,
    generated_tokens: u32,
}

impl Engine<'_> {
    fn write_run_json(&self, status: Option<RunStatus>, rounds: u32, started: &str) {
        let mut value = json!({
            "run_id": self.config.run_id,
            "objective": self.config.objective,
            "max_rounds": self.config.max_rounds,
            "workspace": self.workspace.root().display().to_string(),
            "started_at": started,
            "finished_at": status.map(|_| chrono::Utc::now().to_rfc3339()),
            "status": status.map(RunStatus::as_str),
            "rounds_started": rounds,
            "worker_reported": true,
        });
        if let (Value::Object(map), Value::Object(extra)) = (&mut value, &self.config.run_info) {
            for (k, v) in extra {
                map.insert(k.clone(), v.clone());
            }
        }
        if let Err(e) = self.rec.log.write_run_json(&value) {
            tracing::error!("run.json: {e}");
        }
    }

    /// Runs the whole loop and returns how it ended. The last event is always `run_finished`.
    pub fn run(mut self) -> RunSummary {
        let started_at = chrono::Utc::now().to_rfc3339();
        self.write_run_json(None, 0, &started_at);
        let info = self.backend.info();
        let sandbox = serde_json::to_value(self.policy.sandbox)
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

        let mut last_valid: Option<Report> = None;
        let mut rounds_started = 0;
        let mut error = None;
        let mut final_report = None;
        let mut status = RunStatus::BudgetLimited;
        for round in 1..=self.config.max_rounds {
            if self.cancel.is_cancelled() {
                status = RunStatus::Cancelled;
                break;
            }
            rounds_started = round;
            match self.round(round, last_valid.as_ref(), info.ctx_size) {
                RoundEnd::Reported(report) => {
                    let report_status = report.status;
                    last_valid = Some(report.clone());
                    match report_status {
                        report::ReportStatus::Continue => {
                            if round == self.config.max_rounds {
                                final_report = Some(report);
                            }
                        }
                        report::ReportStatus::Complete => {
                            status = RunStatus::Complete;
                            final_report = Some(report);
                            break;
                        }
                        report::ReportStatus::Blocked => {
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

        let verification = match (&self.config.verify, status) {
            (Some(command), RunStatus::Complete) => {
                let command = command.clone();
                Some(verify::run(&command, self.workspace.root(), &self.cancel))
            }
            _ => None,
        };
        self.rec.emit(Event::RunFinished {
            status,
            rounds_started,
            report: final_report.clone(),
            last_valid_report: last_valid.clone(),
            error: error.clone(),
            worker_reported: true,
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
        }
    }

    fn snapshot(&self) -> Option<Snapshot> {
        match self.workspace.snapshot() {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!("snapshot: {e}");
                None
            }
        }
    }

    /// One round: a fresh child from nothing but the round prompt.
    fn round(&mut self, round: u32, previous: Option<&Report>, ctx_size: u32) -> RoundEnd {
        let started = Instant::now();
        let base = self.snapshot();
        if let (Some(watch), Some(base)) = (&self.watch, base) {
            watch.round_started(round, base);
        }
        let tools = self.registry.specs();
        let agents = prompt::agent_instructions(self.workspace.root());
        let tool_instructions = self.format.tool_instructions(&tools);
        let messages = prompt::RoundPrompt {
            objective: &self.config.objective,
            round,
            max_rounds: self.config.max_rounds,
            previous,
            agents: agents.as_deref(),
            tool_instructions: &tool_instructions,
        }
        .messages();
        let prompt_json = serde_json::to_vec_pretty(&json!({
            "round": round,
            "max_rounds": self.config.max_rounds,
            "chat_format": self.format.name(),
            "messages": messages,
            "tools": tools,
        }))
        .unwrap_or_default();
        if let Err(e) = self.rec.log.begin_round(round, &prompt_json) {
            tracing::error!("run log: {e}");
        }

        let git_before = GitFingerprint::take(self.workspace.root());
        let processes = ProcessTracker::new();
        let round_tmp = crate::tools::run_command::round_tmp_dir(&self.config.run_id, round);
        let _ = std::fs::create_dir_all(&round_tmp);
        let round_cancel = self.cancel.child_token();
        let mut tally = RoundTally::default();
        let end = self.child_turns(
            round,
            messages,
            &tools,
            &prompt_json,
            ctx_size,
            &processes,
            &round_tmp,
            &round_cancel,
            &mut tally,
        );
        processes.kill_all();
        let _ = std::fs::remove_dir_all(&round_tmp);
        let git_after = GitFingerprint::take(self.workspace.root());
        if let Some(message) = git_before.warning(&git_after, round) {
            self.rec.emit(Event::Warning { message });
        }
        self.rec.log.end_round();
        if let Some(watch) = &self.watch {
            watch.round_ended();
        }

        // A failure while cancelling is the cancel's doing; an accepted report stays accepted.
        let end = match end {
            RoundEnd::Failed(_) if self.cancel.is_cancelled() => RoundEnd::Cancelled,
            other => other,
        };
        if let RoundEnd::Reported(report) = &end {
            let text = serde_json::to_vec_pretty(report).unwrap_or_default();
            if let Err(e) = self.rec.log.write_round_file(round, "report.json", &text) {
                tracing::error!("report.json: {e}");
            }
        }
        let diff = match (base, self.snapshot()) {
            (Some(a), Some(b)) => self.workspace.diff(&a, &b).ok(),
            _ => None,
        }
        .unwrap_or_default();
        if let Err(e) = self
            .rec
            .log
            .write_round_file(round, "diff.patch", diff.patch.as_bytes())
        {
            tracing::error!("diff.patch: {e}");
        }
        if !diff.files.is_empty() {
            self.rec.emit(Event::WorkspaceChanged {
                round,
                files: diff.changed_files(),
            });
        }
        let (outcome, error) = match &end {
            RoundEnd::Reported(_) => (RoundOutcome::Reported, None),
            RoundEnd::Failed(reason) => (RoundOutcome::Failed, Some(reason.clone())),
            RoundEnd::OutOfBudget => (
                RoundOutcome::Failed,
                Some("the run's token budget is spent".to_string()),
            ),
            RoundEnd::Cancelled => (RoundOutcome::Cancelled, None),
        };
        self.rec.emit(Event::RoundFinished {
            round,
            outcome,
            prompt_tokens: tally.prompt_tokens,
            generated_tokens: tally.generated_tokens,
            wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            files_changed: diff.files_changed(),
            insertions: diff.insertions,
            deletions: diff.deletions,
            error,
        });
        end
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one call site; a struct would only rename these"
    )]
    fn child_turns(
        &mut self,
        round: u32,
        mut messages: Vec<Message>,
        tools: &[crate::tools::ToolSpec],
        prompt_json: &[u8],
        ctx_size: u32,
        processes: &ProcessTracker,
        round_tmp: &std::path::Path,
        cancel: &CancellationToken,
        tally: &mut RoundTally,
    ) -> RoundEnd {
        // The child borrows the backend for the round; events go through a local buffer so the
        // engine can keep emitting while it is alive.
        let mut child = match self.backend.new_child(round) {
            Ok(child) => child,
            Err(e) => {
                let reason = e.to_string();
                return RoundEnd::Failed(reason);
            }
        };
        let prompt_tokens = child
            .count_prompt_tokens(Request {
                messages: &messages,
                tools,
            })
            .unwrap_or(0);
        self.rec.emit(Event::RoundStarted {
            round,
            max_rounds: self.config.max_rounds,
            prompt_sha256: sha256_hex(prompt_json),
            prompt_tokens,
        });
        for m in &messages {
            self.rec.transcript(m);
        }

        let mut rejections = 0;
        for _turn in 0..self.config.max_turns {
            if cancel.is_cancelled() {
                return RoundEnd::Cancelled;
            }
            let request = Request {
                messages: &messages,
                tools,
            };
            if self
                .config
                .token_budget
                .is_some_and(|budget| self.generated_total >= budget)
            {
                return RoundEnd::OutOfBudget;
            }
            if let Ok(used) = child.count_prompt_tokens(request) {
                if used >= ctx_size {
                    return RoundEnd::Failed(format!(
                        "the context window is full ({used} of {ctx_size} tokens) before a valid report"
                    ));
                }
            }
            let rec = &mut self.rec;
            let generation = child.generate(
                request,
                &mut |piece| {
                    rec.emit(Event::Token {
                        round,
                        text: piece.to_string(),
                    })
                },
                cancel,
            );
            let generation = match generation {
                Ok(g) => g,
                Err(BackendError::Exhausted(reason)) => {
                    return RoundEnd::Failed(format!(
                        "the child ended without a valid report ({reason})"
                    ))
                }
                Err(e) => return RoundEnd::Failed(e.to_string()),
            };
            self.generated_total = self
                .generated_total
                .saturating_add(u64::from(generation.generated_tokens));
            tally.prompt_tokens = tally.prompt_tokens.saturating_add(generation.prompt_tokens);
            tally.generated_tokens = tally
                .generated_tokens
                .saturating_add(generation.generated_tokens);
            let assistant = Message::new(Role::Assistant, generation.text.clone());
            self.rec.transcript(&assistant);
            messages.push(assistant);
            if generation.stop == StopReason::Cancelled || cancel.is_cancelled() {
                return RoundEnd::Cancelled;
            }

            let parsed = self.format.parse(&generation.text);
            if parsed.calls.is_empty() {
                if generation.stop == StopReason::ContextFull {
                    return RoundEnd::Failed(
                        "the context window filled up before a valid report".into(),
                    );
                }
                let reminder = Message::new(Role::User, prompt::NO_CALL_REMINDER);
                self.rec.transcript(&reminder);
                messages.push(reminder);
                continue;
            }
            for call in parsed.calls {
                if cancel.is_cancelled() {
                    return RoundEnd::Cancelled;
                }
                let (name, arguments) = match call {
                    ParsedCall::Call { name, arguments } => (name, arguments),
                    ParsedCall::Malformed { raw, reason } => {
                        self.rec.emit(Event::ToolCall {
                            round,
                            name: "(malformed)".into(),
                            arguments: Value::String(raw),
                        });
                        let output = format!("malformed tool call: {reason}");
                        self.rec.emit(Event::ToolResult {
                            round,
                            name: "(malformed)".into(),
                            ok: false,
                            output: output.clone(),
                        });
                        let result = self.format.tool_result("(malformed)", &output);
                        self.rec.transcript(&result);
                        messages.push(result);
                        continue;
                    }
                };
                self.rec.emit(Event::ToolCall {
                    round,
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
                if name == REPORT_TOOL {
                    match report::validate(&arguments) {
                        Ok(report) => {
                            // The engine boundary checks again what it is about to carry over.
                            if let Err(rejection) = report::check_rules(&report) {
                                return RoundEnd::Failed(format!(
                                    "report failed the engine's check: {rejection}"
                                ));
                            }
                            self.rec.emit(Event::ToolResult {
                                round,
                                name,
                                ok: true,
                                output: "report accepted; the round ends here".into(),
                            });
                            self.rec.emit(Event::ReportAccepted {
                                round,
                                report: report.clone(),
                            });
                            return RoundEnd::Reported(report);
                        }
                        Err(rejection) => {
                            rejections += 1;
                            let reason = rejection.0;
                            let left = MAX_REPORT_ATTEMPTS.saturating_sub(rejections);
                            let output = format!(
                                "report rejected: {reason}. Fix it and call {REPORT_TOOL} again ({left} attempt(s) left)."
                            );
                            self.rec.emit(Event::ToolResult {
                                round,
                                name: name.clone(),
                                ok: false,
                                output: output.clone(),
                            });
                            self.rec.emit(Event::ReportRejected {
                                round,
                                reason: reason.clone(),
                            });
                            if rejections >= MAX_REPORT_ATTEMPTS {
                                return RoundEnd::Failed(format!(
                                    "the report was rejected {rejections} times; last reason: {reason}"
                                ));
                            }
                            let result = self.format.tool_result(&name, &output);
                            self.rec.transcript(&result);
                            messages.push(result);
                            continue;
                        }
                    }
                }
                let size = arguments.to_string().len();
                if size > MAX_ARGUMENT_BYTES {
                    let output = format!(
                        "the arguments of {name} are {size} bytes; the limit is {MAX_ARGUMENT_BYTES}: split the work into smaller calls"
                    );
                    self.rec.emit(Event::ToolResult {
                        round,
                        name: name.clone(),
                        ok: false,
                        output: output.clone(),
                    });
                    let message = self.format.tool_result(&name, &output);
                    self.rec.transcript(&message);
                    messages.push(message);
                    continue;
                }
                let ctx = ToolContext {
                    root: self.workspace.root(),
                    round,
                    round_tmp,
                    cancel,
                    policy: &self.policy,
                    processes,
                    approver: self.approver.as_ref(),
                };
                let result = self.registry.call(&name, &arguments, &ctx);
                self.rec.emit(Event::ToolResult {
                    round,
                    name: name.clone(),
                    ok: result.ok,
                    output: result.output.clone(),
                });
                let message = self.format.tool_result(&name, &result.output);
                self.rec.transcript(&message);
                messages.push(message);
            }
            if generation.stop == StopReason::ContextFull {
                return RoundEnd::Failed(
                    "the context window filled up before a valid report".into(),
                );
            }
        }
        RoundEnd::Failed(format!(
            "the child used all {} turns without a valid report",
            self.config.max_turns
        ))
    }
}
