//! The child's turn loop inside one round, in named steps.
//!
//! Each turn: `WrapUpWatch::before_turn` (in `wrapup`: is the context full, is the budget
//! spent, must this turn be the wrap-up), [`ChildTurns::generate_turn`] (a cancel check, then
//! one streamed generation), parse the calls, and hand each to
//! [`ChildTurns::handle_report_call`] or [`ChildTurns::handle_tool_call`]. Every tool outcome,
//! whatever produced it, reaches the child the same way: `Conversation::tool_message` emits
//! `tool_result` and renders the message the child reads next; a result too large for what is
//! left of the context is cut first (`wrapup::fit_tool_result`). The loop ends on an
//! accepted report, a failure, the budget or a cancel; the round's last turn is always a
//! wrap-up turn that may only report.
//!
//! The report is validated here, at the engine boundary, with `report::validate` (schema, text
//! and status rules, size): whatever the grammar or the format let through, nothing unvalidated
//! is carried to the next round.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::changes::RunChanges;
use super::check::{Standing, Worse};
use super::conversation::Conversation;
use super::guard::{CallLog, Repeat, REPEATS_BEFORE_WRAP_UP};
use super::record::Recorder;
use super::undo::Saved;
use super::wrapup::{self, WrapUpWatch};
use super::{prompt, report, Engine, RoundEnd, RunConfig, Toolbox};
use super::{MAX_ARGUMENT_BYTES, MAX_REPORT_ATTEMPTS};
use crate::chat::ParsedCall;
use crate::llm::{BackendError, Child, Generation, Output, Request, StopReason};
use crate::protocol::event::{CheckPoint, CheckRun, CheckVerdict, Event, WrapUpReason};
use crate::protocol::message::{Message, Role};
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};
use crate::tools::process::ProcessTracker;
use crate::tools::{AskedRenames, ToolContext, ToolResult, Writes};
use crate::workspace::Workspace;

/// Why a round fails when generation stopped at a full context window.
const CONTEXT_FILLED: &str = "the context window filled up before a valid report";
/// Most bytes of the check's output added to the result of a call that changed files.
const CHANGE_CHECK_BYTES: usize = 1024;
/// Most bytes of the check's output in the answer to a change put back for breaking tests.
const UNDONE_OUTPUT_BYTES: usize = 800;
/// The answer to a `blocked` report the engine turned into `continue`
/// ([`CallLog::overruled_block`]): the call itself, in the record, keeps what the worker wrote.
const OVERRULED_BLOCK: &str = "report accepted as status \"continue\", not \"blocked\": what this round's own work left undone (a claim refused, or the check failing after its change) is work for the next round, not a blocker; the round ends here";

/// Per-round totals for `round_finished`.
#[derive(Default)]
pub(super) struct RoundTally {
    pub(super) prompt_tokens: u32,
    pub(super) generated_tokens: u32,
}

/// What the round set up for its child.
pub(super) struct RoundScope<'r> {
    pub(super) round: u32,
    pub(super) tools: &'r [ToolSpec],
    /// The round prompt as written to the run log (its hash goes into `round_started`).
    pub(super) prompt_json: &'r [u8],
    pub(super) ctx_size: u32,
    /// Most tokens one ordinary turn may generate.
    pub(super) max_tokens: u32,
    /// The round's own cap on a turn, above `--max-tokens`, so a file its observation shows
    /// whole can be written back whole (`None`: `--max-tokens`).
    pub(super) turn_tokens: Option<u32>,
    pub(super) processes: &'r ProcessTracker,
    pub(super) round_tmp: &'r Path,
    pub(super) cancel: &'r CancellationToken,
    /// Events said right after `round_started`: the check's run and the observation.
    pub(super) opening: Vec<Event>,
    /// What the check at the round's start showed.
    pub(super) standing: Standing,
    /// The check's verdict at the round's start (`None`: no check).
    pub(super) start_verdict: Option<CheckVerdict>,
}

impl Engine<'_> {
    /// Starts the round's child and runs its turns until the round ends.
    pub(super) fn child_turns(
        &mut self,
        scope: &RoundScope<'_>,
        messages: Vec<Message>,
        tally: &mut RoundTally,
    ) -> RoundEnd {
        // The child borrows the backend for the round; the turn loop borrows the rest of the
        // engine beside it.
        let mut child = match self.backend.new_child(scope.round) {
            Ok(child) => child,
            Err(e) => return RoundEnd::Failed(e.to_string()),
        };
        let mut turns = ChildTurns {
            config: &self.config,
            tools: &self.tools,
            workspace: &self.workspace,
            convo: Conversation {
                format: self.format,
                rec: &mut self.rec,
                round: scope.round,
                tools: scope.tools,
                ctx_size: scope.ctx_size,
                messages,
            },
            changes: &mut self.changes,
            generated_total: &mut self.generated_total,
            scope,
            rejections: 0,
            wrap_up: WrapUpWatch {
                current: None,
                max_turns: self.config.max_turns,
                token_budget: self.config.token_budget,
                max_tokens: scope.max_tokens,
            },
            calls: CallLog::default(),
            tally,
            standing: scope.standing,
            renames: AskedRenames::of(&self.config.objective),
        };
        if let (Some(command), Some(verdict)) = (self.config.check.as_deref(), scope.start_verdict)
        {
            turns.calls.round_checked(command, verdict);
        }
        turns.run(child.as_mut())
    }
}

/// One round's conversation with its child, and the parts of the engine it works with.
struct ChildTurns<'t, 'a> {
    config: &'t RunConfig,
    tools: &'t Toolbox<'a>,
    workspace: &'t Workspace,
    /// The messages so far, and the recorder that writes them.
    convo: Conversation<'t, 'a>,
    /// Whose changes the workspace shows: the tool calls' snapshots go here.
    changes: &'t mut RunChanges,
    generated_total: &'t mut u64,
    scope: &'t RoundScope<'t>,
    /// Reports rejected so far this round.
    rejections: u32,
    /// When the round must wrap up, and its wrap-up once it has begun.
    wrap_up: WrapUpWatch,
    /// The round's calls so far (the loop guard and the claims check read it).
    calls: CallLog,
    tally: &'t mut RoundTally,
    /// What the check's latest run this round showed (a change that makes it worse is put
    /// back).
    standing: Standing,
    /// The renames the objective asks for, read once for the round's tool calls.
    renames: AskedRenames,
}

impl ChildTurns<'_, '_> {
    fn run(&mut self, child: &mut dyn Child) -> RoundEnd {
        self.announce(child);
        for turn in 1.. {
            let generated = *self.generated_total;
            if let Err(end) = self
                .wrap_up
                .before_turn(&mut self.convo, child, turn, generated)
            {
                return end;
            }
            let generation = match self.generate_turn(child) {
                Ok(generation) => generation,
                Err(end) => return end,
            };
            let parsed = self.convo.format.parse(&generation.text);
            if parsed.calls.is_empty() {
                if generation.stop == StopReason::ContextFull {
                    return RoundEnd::Failed(CONTEXT_FILLED.into());
                }
                let reminder = if self.wrap_up.is_on() {
                    prompt::WRAP_UP_REMINDER
                } else {
                    prompt::NO_CALL_REMINDER
                };
                self.convo.push(Message::new(Role::User, reminder));
                continue;
            }
            for call in parsed.calls {
                if self.scope.cancel.is_cancelled() {
                    return RoundEnd::Cancelled;
                }
                if let Some(end) = self.handle_call(child, call) {
                    return end;
                }
            }
            if generation.stop == StopReason::ContextFull {
                return RoundEnd::Failed(CONTEXT_FILLED.into());
            }
        }
        RoundEnd::Failed("the round ran out of turns without a valid report".into())
    }

    /// Emits `round_started` and writes the prompt's messages to the transcript.
    fn announce(&mut self, child: &mut dyn Child) {
        let request = Request::new(&self.convo.messages, self.scope.tools);
        let prompt_tokens = child.count_prompt_tokens(request).unwrap_or(0);
        let prefix_tokens_reused = child.prepare(request).unwrap_or(0);
        self.convo.rec.emit(Event::RoundStarted {
            round: self.scope.round,
            max_rounds: self.config.max_rounds,
            prompt_sha256: crate::text::sha256_hex(self.scope.prompt_json),
            prompt_tokens,
            prefix_tokens_reused,
        });
        for event in &self.scope.opening {
            self.convo.rec.emit(event.clone());
        }
        for m in &self.convo.messages {
            self.convo.rec.transcript(m);
        }
    }

    /// One turn of generation (report only during the wrap-up), streamed as `token` events,
    /// its text kept in the conversation. `Err` is how the round ends instead: cancelled, or
    /// the child failed. The budget and context checks come first, in `before_turn`.
    fn generate_turn(&mut self, child: &mut dyn Child) -> Result<Generation, RoundEnd> {
        let cancel = self.scope.cancel;
        if cancel.is_cancelled() {
            return Err(RoundEnd::Cancelled);
        }
        let request = Request {
            messages: &self.convo.messages,
            tools: self.scope.tools,
            report_only: self.wrap_up.is_on(),
            max_tokens: self.scope.turn_tokens,
        };
        let rec = &mut *self.convo.rec;
        let counted = count_context(child, request, rec, self.scope)?;
        let started = Instant::now();
        let (generation, first_token) = stream_generation(child, request, rec, self.scope);
        let generation = match generation {
            Ok(g) => g,
            Err(BackendError::Exhausted(reason)) => {
                return Err(RoundEnd::Failed(format!(
                    "the child ended without a valid report ({reason})"
                )))
            }
            Err(e) => return Err(RoundEnd::Failed(e.to_string())),
        };
        self.tally_turn(&generation, counted, started, first_token);
        self.convo
            .push(Message::new(Role::Assistant, generation.text.clone()));
        if generation.stop == StopReason::Cancelled || cancel.is_cancelled() {
            return Err(RoundEnd::Cancelled);
        }
        Ok(generation)
    }

    /// Emits `turn_finished` (prompt and generation times, the context the turn filled) and
    /// adds the turn's tokens to the run's and the round's totals.
    fn tally_turn(
        &mut self,
        generation: &Generation,
        counted: Option<u32>,
        started: Instant,
        first_token: Option<Instant>,
    ) {
        let ended = Instant::now();
        let first_token = first_token.unwrap_or(ended);
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.convo.rec.emit(Event::TurnFinished {
            round: self.scope.round,
            prompt_tokens: generation.prompt_tokens,
            generated_tokens: generation.generated_tokens,
            prompt_ms: millis(first_token.duration_since(started)),
            gen_ms: millis(ended.duration_since(first_token)),
            context_tokens: counted
                .unwrap_or(generation.prompt_tokens)
                .saturating_add(generation.generated_tokens),
        });
        *self.generated_total = self
            .generated_total
            .saturating_add(u64::from(generation.generated_tokens));
        self.tally.prompt_tokens = self
            .tally
            .prompt_tokens
            .saturating_add(generation.prompt_tokens);
        self.tally.generated_tokens = self
            .tally
            .generated_tokens
            .saturating_add(generation.generated_tokens);
    }

    /// Emits `tool_call` and handles one parsed call; `Some` ends the round.
    fn handle_call(&mut self, child: &mut dyn Child, call: ParsedCall) -> Option<RoundEnd> {
        let round = self.scope.round;
        match call {
            ParsedCall::Malformed { raw, reason } => {
                const MALFORMED: &str = "(malformed)";
                self.convo.rec.emit(Event::ToolCall {
                    round,
                    name: MALFORMED.into(),
                    arguments: Value::String(raw),
                });
                self.convo.push_tool_result(
                    MALFORMED,
                    ToolResult {
                        ok: false,
                        output: format!("malformed tool call: {reason}"),
                    },
                );
                None
            }
            ParsedCall::Call { name, arguments } => {
                self.convo.rec.emit(Event::ToolCall {
                    round,
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
                if name == REPORT_TOOL {
                    self.handle_report_call(&arguments)
                } else if self.wrap_up.is_on() {
                    self.convo.push_tool_result(&name, wrapup::refusal(&name));
                    None
                } else {
                    match self.calls.check(&name, &arguments) {
                        Repeat::Fresh => self.handle_tool_call(child, &name, &arguments),
                        Repeat::Refused { result, times } => {
                            self.convo.push_tool_result(&name, result);
                            if times >= REPEATS_BEFORE_WRAP_UP {
                                self.wrap_up
                                    .begin(&mut self.convo, WrapUpReason::Repetition);
                            }
                        }
                    }
                    None
                }
            }
        }
    }

    /// Validates a report at the engine boundary: an accepted one ends the round; a rejected
    /// one goes back to the child to correct, up to `MAX_REPORT_ATTEMPTS` times a round.
    fn handle_report_call(&mut self, arguments: &Value) -> Option<RoundEnd> {
        let round = self.scope.round;
        let parsed = report::validate(arguments);
        let valid = parsed.as_ref().ok().cloned();
        let checked = parsed.and_then(|report| {
            if let Some(goes_on) = self.calls.overruled_block(&report) {
                return Ok((goes_on, OVERRULED_BLOCK));
            }
            let contradicted = self.calls.contradiction(&report);
            if let Some(reason) = &contradicted {
                self.calls.claim_refuted(reason);
            }
            let refusal = contradicted.or_else(|| self.calls.question_block(&report));
            let refusal = refusal
                .or_else(|| self.check_claim(&report))
                .or_else(|| self.probe_claim(&report));
            match refusal {
                Some(reason) => Err(crate::protocol::report::Rejection(reason)),
                None => Ok((report, "report accepted; the round ends here")),
            }
        });
        match checked {
            Ok((report, output)) => {
                self.convo.emit_tool_result(
                    REPORT_TOOL,
                    &ToolResult {
                        ok: true,
                        output: output.into(),
                    },
                );
                self.convo.rec.emit(Event::ReportAccepted {
                    round,
                    report: report.clone(),
                });
                Some(RoundEnd::Reported(report))
            }
            Err(rejection) => {
                self.rejections += 1;
                let reason = rejection.0;
                let left = MAX_REPORT_ATTEMPTS.saturating_sub(self.rejections);
                let message = self.convo.tool_message(
                    REPORT_TOOL,
                    ToolResult {
                        ok: false,
                        output: format!(
                            "report rejected: {reason}. Fix it and call {REPORT_TOOL} again ({left} attempt(s) left)."
                        ),
                    },
                );
                self.convo.rec.emit(Event::ReportRejected {
                    round,
                    reason: reason.clone(),
                });
                if self.rejections >= MAX_REPORT_ATTEMPTS {
                    if let Some(goes_on) = valid.and_then(|r| self.calls.refused_goes_on(&r)) {
                        self.convo.rec.emit(Event::ReportAccepted {
                            round,
                            report: goes_on.clone(),
                        });
                        return Some(RoundEnd::Reported(goes_on));
                    }
                    return Some(RoundEnd::Failed(format!(
                        "the report was rejected {} times; last reason: {reason}",
                        self.rejections
                    )));
                }
                self.convo.push(message);
                None
            }
        }
    }

    /// Runs the check on a `complete` claim (emitting `check_finished`); why it refuses the
    /// claim, quoting its output, when it does not pass. `None`: no check, another status,
    /// or the check passed.
    fn check_claim(&mut self, report: &crate::protocol::report::Report) -> Option<String> {
        let command = self.config.check.as_deref()?;
        if report.status != crate::protocol::report::ReportStatus::Complete {
            return None;
        }
        let run = self.run_check(command, CheckPoint::Claim);
        let refusal = (!run.verdict.is_pass()).then(|| super::check::refusal(&run));
        if refusal.is_some() {
            self.calls.check_refused(command, run.verdict.as_str());
        }
        refusal
    }

    /// On a `complete` claim, with the observation on, runs the commands the objective names
    /// and says what they must print; why it refuses the claim when one prints otherwise
    /// (`probe::refusal`). `None`: another status, no such command, or each one met.
    fn probe_claim(&self, report: &crate::protocol::report::Report) -> Option<String> {
        if !self.config.observe || report.status != crate::protocol::report::ReportStatus::Complete
        {
            return None;
        }
        let root = self.workspace.root();
        let mut probes =
            super::probe::commands(&self.config.objective, root, self.config.check.as_deref());
        probes.retain(|probe| probe.expected.is_some());
        if probes.is_empty() {
            return None;
        }
        let ran = super::probe::run(
            &probes,
            root,
            &self.tools.policy,
            (&self.config.run_id, self.scope.round),
            self.scope.cancel,
        );
        super::probe::refusal(&ran)
    }

    /// Runs the check `command` in the worker's sandbox, as this round's check `at` that point,
    /// and emits `check_finished`.
    fn run_check(&mut self, command: &str, at: CheckPoint) -> CheckRun {
        let run = super::check::run(
            command,
            self.workspace.root(),
            &self.tools.policy,
            &self.config.run_id,
            self.scope.round,
            self.scope.cancel,
        );
        self.convo.rec.emit(Event::CheckFinished {
            round: self.scope.round,
            at,
            check: run.clone(),
        });
        run
    }

    /// With `--check-on-change`, runs the check after a call that changed files (emitting
    /// `check_finished`) and adds what it found to the call's `result`, so the worker sees
    /// at once what its change did to the repository's tests. A file tool's change after
    /// which the check is worse (it ran no test where before it ran some, or fewer tests
    /// pass) is put back (`saved`: the files as they were) and answered as a failed call.
    fn check_change(
        &mut self,
        mut result: ToolResult,
        call: (&str, &Value),
        saved: Option<Saved>,
    ) -> ToolResult {
        let Some(command) = self
            .config
            .check
            .as_deref()
            .filter(|_| self.config.check_on_change)
        else {
            return result;
        };
        let run = self.run_check(command, CheckPoint::Change);
        if let (Some(worse), Some(saved)) = (self.standing.worse(&run), saved) {
            if saved.restore(self.workspace.root()).is_ok() {
                return self.undone(result, call, &saved, (command, &run), worse);
            }
        }
        self.standing = Standing::of(&run);
        self.calls.change_checked(command, &run);
        result.output.push_str("\n\n");
        result.output.push_str(&super::check::describe(
            &run,
            "after this change",
            CHANGE_CHECK_BYTES,
        ));
        result
    }

    /// The answer to a change that was put back because the check was `worse` after it: the
    /// call's own answer, why it was undone, and the files it touched, now as they were (with
    /// what the check printed, when tests broke). The call is recorded again as a failed
    /// change of those files.
    fn undone(
        &mut self,
        result: ToolResult,
        (name, arguments): (&str, &Value),
        saved: &Saved,
        (command, run): (&str, &CheckRun),
        worse: Worse,
    ) -> ToolResult {
        let done = result.output.lines().next().unwrap_or_default();
        let command = crate::text::sanitize_line(command);
        let names = saved.names();
        let output = match worse {
            Worse::NoTest => {
                let what = if run.note.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", run.note)
                };
                format!(
                    "undone: {done}; but after it the check `{command}` ran no test{what}, where before it ran some, so the change removed the tests or what runs them. {names} is back as it was before this call. Keep every test and the lines around them as they are, and change only the code they test"
                )
            }
            Worse::Fewer { before, after } => {
                let printed = super::check::shown(&run.output, UNDONE_OUTPUT_BYTES);
                let fence = crate::chat::listing::fence_for([printed.as_str()]);
                format!(
                    "undone: {done}; but after it the check `{command}` passed {} where {} passed before, so the change broke what worked. {names} is back as it was before this call. What the check printed after the change:\n{fence}\n{}\n{fence}\nChange only what the failing tests need, and keep everything that works as it is",
                    tests(after),
                    tests(before),
                    printed.trim_end()
                )
            }
        };
        let undone = ToolResult { ok: false, output };
        self.changes
            .wrote(self.workspace, &saved.paths(self.workspace.root()));
        self.calls.record(name, arguments, &undone, true);
        undone
    }

    /// Runs a workspace tool (arguments over `MAX_ARGUMENT_BYTES` are refused unrun) and gives
    /// the child its outcome. What the call can change is recorded as the worker's: the files
    /// a file tool names, or whatever changed between snapshots taken around a command. A
    /// result that would eat into the report's reserve is cut to fit.
    fn handle_tool_call(&mut self, child: &mut dyn Child, name: &str, arguments: &Value) {
        let size = arguments.to_string().len();
        let outcome = if size > MAX_ARGUMENT_BYTES {
            ToolResult {
                ok: false,
                output: format!(
                    "the arguments of {name} are {size} bytes; the limit is {MAX_ARGUMENT_BYTES}: split the work into smaller calls"
                ),
            }
        } else {
            let round = self.scope.round;
            let writes = self
                .tools
                .registry
                .writes(name, arguments, self.workspace.root());
            // What a file tool is about to replace, to put back if the change makes the check
            // worse.
            let checked = self.config.check_on_change && self.config.check.is_some();
            let saved = match &writes {
                Writes::Files(files) if checked && self.standing.can_lose() => {
                    Saved::take(self.workspace.root(), files)
                }
                _ => None,
            };
            let before = (writes == Writes::Anything)
                .then(|| {
                    self.changes
                        .before_tool(self.workspace, self.convo.rec, round)
                })
                .flatten();
            let approver = super::announce::Announcing {
                inner: self.tools.approver.as_ref(),
                rec: std::sync::Mutex::new(&mut *self.convo.rec),
            };
            let ctx = ToolContext {
                root: self.workspace.root(),
                renames: &self.renames,
                round: self.scope.round,
                round_tmp: self.scope.round_tmp,
                cancel: self.scope.cancel,
                policy: &self.tools.policy,
                processes: self.scope.processes,
                approver: &approver,
            };
            let result = self.tools.registry.call(name, arguments, &ctx);
            let changed = match writes {
                Writes::Nothing => false,
                Writes::Files(files) => {
                    self.changes.wrote(self.workspace, &files);
                    result.ok && !files.is_empty()
                }
                Writes::Anything => {
                    self.changes
                        .after_tool(self.workspace, self.convo.rec, round, before)
                }
            };
            self.calls.record(name, arguments, &result, changed);
            if changed && result.ok {
                self.check_change(result, (name, arguments), saved)
            } else {
                result
            }
        };
        let outcome = wrapup::fit_tool_result(&mut self.convo, child, name, outcome);
        self.convo.push_tool_result(name, outcome);
    }
}

/// Counts the prompt as this turn sends it (a wrap-up's instruction included) for the context
/// meter (`context_counted`); a full context window ends the round. The budget and the
/// context were checked in `before_turn`. `None`: the backend cannot say.
fn count_context(
    child: &mut dyn Child,
    request: Request<'_>,
    rec: &mut Recorder,
    scope: &RoundScope<'_>,
) -> Result<Option<u32>, RoundEnd> {
    let ctx_size = scope.ctx_size;
    let counted = child.count_prompt_tokens(request).ok();
    if let Some(used) = counted {
        rec.emit(Event::ContextCounted {
            round: scope.round,
            tokens: used,
        });
        if used >= ctx_size {
            return Err(RoundEnd::Failed(format!(
                "the context window is full ({used} of {ctx_size} tokens) before a valid report"
            )));
        }
    }
    Ok(counted)
}

/// Streams one generation as `token` and `prompt_progress` events; also when the first token
/// came.
fn stream_generation(
    child: &mut dyn Child,
    request: Request<'_>,
    rec: &mut Recorder,
    scope: &RoundScope<'_>,
) -> (Result<Generation, BackendError>, Option<Instant>) {
    let round = scope.round;
    let mut first_token = None;
    let generation = child.generate_streaming(
        request,
        &mut |out| match out {
            Output::Text(piece) => {
                first_token.get_or_insert_with(Instant::now);
                rec.emit(Event::Token {
                    round,
                    text: piece.to_string(),
                })
            }
            Output::PromptProgress(p) => rec.emit(Event::PromptProgress {
                round,
                done: p.done,
                total: p.total,
            }),
        },
        scope.cancel,
    );
    (generation, first_token)
}

/// `n` tests, in words: `no test`, `1 test`, `3 tests`.
fn tests(n: u64) -> String {
    match n {
        0 => "no test".to_string(),
        1 => "1 test".to_string(),
        n => format!("{n} tests"),
    }
}
