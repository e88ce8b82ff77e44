//! Update for engine events: the stream, the reports list, the changes list, the review.
//!
//! Each event changes the state in one place here; what it shows is up to the widgets. Tool
//! calls, a round's observation and each run of the check become cards: a line in the
//! stream, its folded rest below it, and the card kept whole for its view.

use super::kit::wrap;
use super::model::{
    Approval, ChangeRow, CommitState, DiffSource, Effect, Loadable, Pane, Phase, ReportEntry,
    Review, RoundChanges,
};
use super::state::State;
use super::transcript::LineKind;
use super::views::card::{self, Call, CallResult, Card, CardBody};
use super::views::observation::{CheckCard, Observation};
use crate::protocol::event::{
    ChangedFile, CheckPoint, CheckRun, Event, NoteSource, RoundOutcome, WrapUpReason,
};
use crate::protocol::report::Report;
use crate::protocol::tool::REPORT_TOOL;

/// A note's source as its card names it.
fn note_source(source: NoteSource) -> &'static str {
    match source {
        NoteSource::Tui => "typed here",
        NoteSource::File => "notes file",
        NoteSource::Resume => "--note",
        NoteSource::Review => "sent back from the review",
    }
}

impl State {
    pub(super) fn on_event(&mut self, event: Event) -> Vec<Effect> {
        match event {
            Event::RunStarted { .. } => self.run_started(event),
            Event::RoundStarted {
                round,
                max_rounds,
                prompt_tokens,
                ..
            } => self.round_started(round, max_rounds, prompt_tokens),
            Event::PromptProgress { done, total, .. } => {
                self.meters.prompt_gauge = super::model::PromptGauge::update(
                    self.meters.prompt_gauge.take(),
                    done,
                    total,
                    self.now,
                );
            }
            Event::Token { text, .. } => self.token(&text),
            Event::ContextCounted { tokens, .. } => {
                self.meters.context_counted = Some(tokens);
                self.meters.context_streamed = 0;
            }
            Event::TurnFinished { .. } => self.turn_finished(event),
            // The report call shows as the report card (`report_accepted` / `_rejected`).
            Event::ToolCall { name, .. } | Event::ToolResult { name, .. }
                if name == REPORT_TOOL =>
            {
                self.transcript.end_turn();
            }
            Event::ToolCall {
                round,
                name,
                arguments,
            } => self.tool_call(round, name, arguments),
            Event::ToolResult {
                name, ok, output, ..
            } => {
                self.meters.tool_running = None;
                self.meters.round_tool_bytes += output.len() as u64;
                self.push_tool_result(&name, ok, &output);
            }
            Event::WrapUp { round, reason } => self.wrap_up(round, reason),
            Event::CheckFinished { round, at, check } => self.check_finished(round, at, check),
            Event::RoundObserved { .. } => self.round_observed(event),
            Event::Note { .. } => self.note_given(event),
            Event::ReportRejected { round, reason } => self.report_rejected(round, reason),
            Event::ReportAccepted { round, report } => self.report_accepted(round, report),
            Event::WorkspaceChanged { round, files } => self.set_round_files(round, files),
            Event::ApprovalRequested {
                id,
                round,
                command,
                cwd,
            } => self.ask(Approval {
                id,
                round,
                command,
                cwd,
            }),
            Event::Warning { message } => self.warning(message),
            Event::RoundFinished { .. } => self.round_finished(event),
            Event::RunFinished { .. } => return self.run_finished(event),
        }
        Vec::new()
    }

    /// `tool_call` (not the report's): the call becomes a card, and the meters say it runs.
    fn tool_call(&mut self, round: u32, name: String, arguments: serde_json::Value) {
        self.meters.tool_running = Some(name.clone());
        let line = card::header(&name, &arguments);
        let folded = card::argument_lines(&name, &arguments);
        let call = Call {
            name,
            arguments,
            result: None,
        };
        self.push_card(
            round,
            LineKind::ToolCall,
            &line,
            &folded,
            CardBody::Call(call),
        );
    }

    /// `round_observed`: what the round's child was given becomes a card.
    fn round_observed(&mut self, event: Event) {
        let Event::RoundObserved {
            round,
            files_listed,
            files_unlisted,
            shown,
            check,
            text,
        } = event
        else {
            return;
        };
        let seen = Observation::new(files_listed, files_unlisted, shown, check, &text);
        let (line, folded) = seen.lines();
        let body = CardBody::Observed(seen);
        self.push_card(round, LineKind::ToolCall, &line, &folded, body);
    }

    /// `note`: the person's note, as the round was given it, becomes a card.
    fn note_given(&mut self, event: Event) {
        let Event::Note {
            round,
            text,
            written_at,
            source,
        } = event
        else {
            return;
        };
        let note = card::NoteCard {
            text,
            written_at,
            source: note_source(source),
        };
        let (line, folded) = note.lines(round);
        self.push_card(
            round,
            LineKind::Notice,
            &line,
            &folded,
            CardBody::Note(note),
        );
    }

    /// `run_started`: the run's id, objective and setup as the engine settled them.
    fn run_started(&mut self, event: Event) {
        let Event::RunStarted {
            run_id,
            objective,
            max_rounds,
            backend,
            model,
            device,
            sandbox,
            run_dir,
            ..
        } = event
        else {
            return;
        };
        self.phase = Phase::Running;
        self.run_id = run_id;
        self.objective = objective;
        self.setup.max_rounds = max_rounds;
        // A model file shows by name; the script backend keeps the label it had.
        if let Some(model) = model {
            self.setup.model = std::path::Path::new(&model)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or(model);
        } else if self.setup.model.is_empty() {
            self.setup.model = backend;
        }
        self.setup.device = device;
        self.setup.sandbox = sandbox;
        self.setup.run_dir = run_dir;
        self.run_started = Some(self.now);
    }

    /// `round_started`: the round's meters start again, and the stream says so.
    fn round_started(&mut self, round: u32, max_rounds: u32, prompt_tokens: u32) {
        self.round = round;
        self.setup.max_rounds = max_rounds;
        self.meters.prompt_tokens = prompt_tokens;
        self.meters.round_tokens = 0;
        self.meters.round_tool_bytes = 0;
        self.meters.context_counted = Some(prompt_tokens).filter(|n| *n > 0);
        self.meters.context_streamed = 0;
        self.meters.gen_per_s = None;
        self.meters.prompt_per_s = None;
        self.meters.round_started_at = Some(self.now);
        // The engine keeps the report's reserve free at the end of every child's context.
        let ctx_size = self.setup.ctx_size;
        self.meters.report_reserve = (ctx_size > crate::protocol::report::REPORT_RESERVE_TOKENS)
            .then(|| ctx_size - crate::protocol::report::REPORT_RESERVE_TOKENS);
        self.transcript.push_line(
            LineKind::Round,
            &format!(
                "── round {round}/{max_rounds} · fresh child · prompt {prompt_tokens} tokens ──"
            ),
        );
        self.keeping_change_selection(|s| s.round_changes(round).live = true);
    }

    /// One streamed token: the stream grows, the meters count it.
    fn token(&mut self, text: &str) {
        self.meters.prompt_gauge = None;
        self.transcript.push_text(text);
        self.meters.tokens_total += 1;
        self.meters.round_tokens += 1;
        self.meters.context_streamed += 1;
        if !self.meters.turn_streaming {
            self.meters.streaming_since = Some(self.now);
        }
        self.meters.turn_streaming = true;
    }

    /// `turn_finished`: the turn's exact rates and the context as counted.
    fn turn_finished(&mut self, event: Event) {
        let Event::TurnFinished {
            prompt_tokens,
            generated_tokens,
            prompt_ms,
            gen_ms,
            context_tokens,
            ..
        } = event
        else {
            return;
        };
        self.meters.turn_streaming = false;
        self.meters.prompt_gauge = None;
        self.meters.context_counted = Some(context_tokens);
        self.meters.context_streamed = 0;
        let rate = |n: u32, ms: u64| (ms > 0).then(|| f64::from(n) * 1000.0 / ms as f64);
        self.meters.gen_per_s = rate(generated_tokens, gen_ms);
        self.meters.prompt_per_s = rate(prompt_tokens, prompt_ms);
        self.meters.streaming_since = None;
        // A turn of a few tokens says little about the rate.
        if let Some(gen) = self.meters.gen_per_s.filter(|_| generated_tokens >= 16) {
            let best = self.meters.best_gen_per_s.map_or(gen, |b| b.max(gen));
            self.meters.best_gen_per_s = Some(best);
        }
    }

    /// `wrap_up`: the round's last turn may only file the report; the reports list says why.
    fn wrap_up(&mut self, round: u32, reason: WrapUpReason) {
        self.transcript.push_line(
            LineKind::Notice,
            &format!(
                "◆ wrap-up ({}): {}; the last turn may only file the report",
                reason.as_str(),
                reason.describe()
            ),
        );
        self.wrap_ups.push((round, reason));
    }

    /// `check_finished`: the check's card, its output folded (bounded by the engine; a run
    /// log from elsewhere is bounded here).
    fn check_finished(&mut self, round: u32, at: CheckPoint, mut check: CheckRun) {
        let kept = crate::text::cut_at_char_boundary(&check.output, card::MAX_RESULT_BYTES).len();
        check.output.truncate(kept);
        let card = CheckCard { at, run: check };
        let (line, folded) = card.lines();
        self.push_card(round, card.kind(), &line, &folded, CardBody::Check(card));
    }

    /// `report_rejected`: a line in the stream and a row in the reports list. A claim the
    /// check refused says only that: the check's card just above has the output the refusal
    /// quotes, and the reports list has the refusal whole.
    fn report_rejected(&mut self, round: u32, reason: String) {
        let by_check = self.cards.back().is_some_and(|c| {
            c.round == round && matches!(&c.body, CardBody::Check(check) if check.refused())
        });
        let line = if by_check {
            "✗ report rejected: the check refused the claim (its card above has the output)"
                .to_string()
        } else {
            format!("✗ report rejected: {reason}")
        };
        self.transcript.push_line(LineKind::Notice, &line);
        self.push_report(ReportEntry::Rejected { round, reason });
    }

    /// `report_accepted`: a line in the stream and a row in the reports list.
    fn report_accepted(&mut self, round: u32, report: Report) {
        self.transcript.push_line(
            LineKind::Notice,
            &format!(
                "✓ report accepted: {} — {}",
                report.status.as_str(),
                report.summary
            ),
        );
        self.push_report(ReportEntry::Accepted { round, report });
    }

    /// A warning: in the stream, and in the review once the run is over.
    fn warning(&mut self, message: String) {
        self.transcript
            .push_line(LineKind::Notice, &format!("! {message}"));
        // After the run's end (a failed `on_finish` hook): the review shows it too.
        if let Some(review) = &mut self.review.shown {
            self.notice = Some(format!("warning: {message}"));
            review.warnings.push(message.clone());
        }
        self.warnings.push(message);
    }

    /// `round_finished`: the round's line in the stream, its changes final, its failure a
    /// report row, its waiting approvals gone.
    fn round_finished(&mut self, event: Event) {
        let Event::RoundFinished {
            round,
            outcome,
            generated_tokens,
            wall_ms,
            files_changed,
            insertions,
            deletions,
            error,
            changes_unknown,
            ..
        } = event
        else {
            return;
        };
        self.meters.prompt_gauge = None;
        self.meters.tool_running = None;
        self.meters.turn_streaming = false;
        let changes = self.round_changes(round);
        changes.live = false;
        changes.unknown = changes_unknown;
        let counts = if changes_unknown {
            "changes unknown".to_string()
        } else {
            format!(
                "{} +{insertions} −{deletions}",
                crate::text::count(files_changed, "file", "files")
            )
        };
        let outcome_word = match outcome {
            RoundOutcome::Reported => "reported",
            RoundOutcome::Failed => "failed",
            RoundOutcome::Cancelled => "cancelled",
        };
        self.transcript.push_line(
            LineKind::Round,
            &format!(
                "── round {round} {outcome_word} · {generated_tokens} tokens · {:.1} s · {counts} ──",
                wall_ms as f64 / 1000.0
            ),
        );
        if let Some(error) = error {
            self.transcript
                .push_line(LineKind::Notice, &format!("✗ {error}"));
            if outcome == RoundOutcome::Failed {
                self.push_report(ReportEntry::Failed { round, error });
            }
        }
        self.approvals.retain(|a| a.round != round);
    }

    /// `run_finished`: the review, whose diff is read next (or the quit a signal asked for).
    fn run_finished(&mut self, event: Event) -> Vec<Effect> {
        let Event::RunFinished {
            status,
            rounds_started,
            report,
            last_valid_report,
            error,
            verification,
            ..
        } = event
        else {
            return Vec::new();
        };
        self.phase = Phase::Finished;
        self.run_ended = Some(self.now);
        self.cancel_requested = None;
        self.approvals.clear();
        // A view the person is reading stays open over the review; the question goes.
        self.close_cancel_question();
        self.cursors.focus = Pane::Changes;
        for changes in &mut self.changes {
            changes.live = false;
        }
        let outside: std::collections::BTreeSet<String> = self
            .changes
            .iter()
            .flat_map(|c| &c.files)
            .filter(|f| f.outside_run)
            .map(|f| f.path.clone())
            .collect();
        self.review.shown = Some(Review {
            status,
            rounds_started,
            report,
            last_valid: last_valid_report,
            error,
            verification,
            diff: Loadable::Loading,
            file: 0,
            diff_scroll: 0,
            commit: CommitState::NotYet,
            warnings: self.warnings.clone(),
            left_out: outside.clone(),
            outside,
            gitlinks: std::collections::BTreeSet::new(),
            yours: std::collections::BTreeSet::new(),
            emptied: None,
            reverted: std::collections::BTreeSet::new(),
        });
        if self.quit_when_finished {
            return vec![Effect::Quit(self.exit_code())];
        }
        vec![Effect::LoadDiff(DiffSource::Review)]
    }

    /// Adds a row to the reports list; a selection on the last row moves to the new one.
    fn push_report(&mut self, entry: ReportEntry) {
        let on_last = self.cursors.report_sel + 1 >= self.reports.len();
        self.reports.push(entry);
        if on_last {
            self.cursors.report_sel = self.reports.len() - 1;
        }
    }

    /// A card: its line (drawn as `kind`) and its folded lines below; the card kept whole.
    fn push_card(
        &mut self,
        round: u32,
        kind: LineKind,
        line: &str,
        folded: &[String],
        body: CardBody,
    ) {
        let id = self.next_card;
        self.next_card += 1;
        self.transcript.push_card_line(kind, line, id);
        self.push_folded(id, folded);
        if self.cards.len() >= card::MAX_CARDS {
            self.cards.pop_front();
        }
        self.cards.push_back(Card { id, round, body });
    }

    /// The card's folded lines, at most [`card::MAX_UNFOLDED`] of them in the stream.
    fn push_folded(&mut self, id: u32, lines: &[String]) {
        for line in lines.iter().take(card::MAX_UNFOLDED) {
            self.transcript
                .push_card_line(LineKind::Detail, &wrap::truncate(line, 400), id);
        }
        if lines.len() > card::MAX_UNFOLDED {
            self.transcript.push_card_line(
                LineKind::Detail,
                &format!(
                    "  … {} more line(s): Enter on the card shows them",
                    lines.len() - card::MAX_UNFOLDED
                ),
                id,
            );
        }
    }

    /// The result line under the newest card of that tool, and its folded rest.
    fn push_tool_result(&mut self, name: &str, ok: bool, output: &str) {
        let kind = if ok {
            LineKind::ToolOk
        } else {
            LineKind::ToolFailed
        };
        let card = self.cards.iter_mut().rev().find_map(|c| match &mut c.body {
            CardBody::Call(call) if call.name == name && call.result.is_none() => {
                Some((c.id, call))
            }
            _ => None,
        });
        let id = card.as_ref().map_or(0, |(id, _)| *id);
        if let Some((_, call)) = card {
            call.result = Some(CallResult {
                ok,
                output: crate::text::cut_at_char_boundary(output, card::MAX_RESULT_BYTES)
                    .to_string(),
            });
        }
        let lines = card::result_lines(ok, output);
        self.transcript
            .push_card_line_folding(kind, &lines.folded, &lines.unfolded, id);
        self.push_folded(id, &lines.rest);
    }

    pub(super) fn round_changes(&mut self, round: u32) -> &mut RoundChanges {
        let index = match self.changes.iter().position(|c| c.round == round) {
            Some(i) => i,
            None => {
                self.changes.push(RoundChanges {
                    round,
                    files: Vec::new(),
                    live: false,
                    unknown: false,
                });
                self.changes.len() - 1
            }
        };
        &mut self.changes[index]
    }

    /// Replaces a round's changed files, keeping the selection where it was.
    pub(super) fn set_round_files(&mut self, round: u32, files: Vec<ChangedFile>) {
        self.keeping_change_selection(|s| s.round_changes(round).files = files);
    }

    /// What a changes row shows: the round, and the file's path for a file row.
    fn change_key(&self, row: ChangeRow) -> Option<(u32, Option<&str>)> {
        match row {
            ChangeRow::Round(i) => self.changes.get(i).map(|c| (c.round, None)),
            ChangeRow::File(i, f) => {
                let changes = self.changes.get(i)?;
                Some((changes.round, Some(changes.files.get(f)?.path.as_str())))
            }
        }
    }

    /// Applies `change` to the changes list, keeping the same row selected as rows come and
    /// go above it.
    fn keeping_change_selection(&mut self, change: impl FnOnce(&mut Self)) {
        let selected = self
            .change_rows()
            .get(self.cursors.change_sel)
            .and_then(|row| self.change_key(*row))
            .map(|(round, path)| (round, path.map(String::from)));
        change(self);
        let Some((round, path)) = selected else {
            return;
        };
        let rows = self.change_rows();
        let found = rows
            .iter()
            .position(|row| self.change_key(*row) == Some((round, path.as_deref())))
            .or_else(|| {
                rows.iter()
                    .position(|row| self.change_key(*row) == Some((round, None)))
            });
        if let Some(index) = found {
            self.cursors.change_sel = index;
        }
    }

    /// The changes list, newest round first.
    pub fn change_rows(&self) -> Vec<ChangeRow> {
        let mut rows = Vec::new();
        for (i, changes) in self.changes.iter().enumerate().rev() {
            rows.push(ChangeRow::Round(i));
            for f in 0..changes.files.len() {
                rows.push(ChangeRow::File(i, f));
            }
        }
        rows
    }
}
