//! One round: a fresh child from nothing but the round prompt.
//!
//! The round sets up what its child works in (the prompt written to the run log, a scratch
//! directory, a process tracker, a child cancellation token), hands over to the turn loop,
//! and then cleans up and records what the round did: its report, its diff, and
//! `workspace_changed` / `round_finished`.

use std::time::{Duration, Instant};

use serde_json::json;

use super::notes::Note;
use super::runlog::BASE_TREE;
use super::stall::RoundTimer;
use super::turn::{RoundScope, RoundTally};
use super::{check, observe, probe, prompt};
use super::{Engine, RoundEnd};
use crate::protocol::event::{CheckPoint, CheckRun, Event, RoundOutcome};
use crate::protocol::message::Message;
use crate::protocol::report::Report;
use crate::protocol::tool::ToolSpec;
use crate::tools::process::ProcessTracker;
use crate::workspace::gitguard::GitFingerprint;
use crate::workspace::Snapshot;

/// The turn cap a round needs to write back whole the largest file its observation shows
/// whole, when that is more than `max_tokens`: the file's estimated tokens (its JSON-escaped
/// text in a `write_file` call), never more than a quarter of the context. `None`: the
/// run's `--max-tokens` is enough.
fn observation_turn_tokens(largest_whole: usize, max_tokens: u32, ctx_size: u32) -> Option<u32> {
    if largest_whole == 0 {
        return None;
    }
    // Two bytes a token for escaped source (a low estimate), and room for the call around it.
    let needed = u32::try_from(largest_whole / 2)
        .unwrap_or(u32::MAX)
        .saturating_add(128);
    let cap = needed.min(ctx_size / 4);
    (cap > max_tokens).then_some(cap)
}

/// What is said right after `round_started`, in the order it was made: the notes given to
/// the round, the check at its start, its observation.
fn opening_events(
    round: u32,
    notes: Vec<Note>,
    check: Option<CheckRun>,
    observation: Option<observe::Observation>,
) -> Vec<Event> {
    let mut opening: Vec<Event> = notes
        .into_iter()
        .map(|note| Event::Note {
            round,
            text: note.text,
            written_at: note.written_at,
            source: note.source,
        })
        .collect();
    let verdict = check.as_ref().map(|c| c.verdict);
    if let Some(check) = check {
        opening.push(Event::CheckFinished {
            round,
            at: CheckPoint::RoundStart,
            check,
        });
    }
    if let Some(seen) = observation {
        opening.push(Event::RoundObserved {
            round,
            files_listed: seen.files_listed,
            files_unlisted: seen.files_unlisted,
            shown: seen.shown,
            check: verdict,
            text: seen.text,
        });
    }
    opening
}

impl Engine<'_> {
    /// The notes waiting for round `round` (a refused line of the notes file is a
    /// `warning`); a round given a note starts the stall count again.
    fn take_notes(&mut self, round: u32) -> Vec<Note> {
        let taken = self.notes.take();
        for message in taken.refused {
            self.rec.emit(Event::Warning { message });
        }
        if !taken.notes.is_empty() {
            tracing::info!(
                "round {round}: {} note(s) from the person",
                taken.notes.len()
            );
            self.stall.noted();
        }
        taken.notes
    }

    /// Runs round `round` after `previous`, the last valid report.
    pub(super) fn round(
        &mut self,
        round: u32,
        previous: Option<&Report>,
        ctx_size: u32,
        max_tokens: u32,
    ) -> RoundEnd {
        let started = Instant::now();
        let base = self
            .changes
            .round_start(&self.workspace, &mut self.rec, round);
        if let (Some(watch), Some(base)) = (&self.watch, base) {
            watch.round_started(round, base);
        }
        let tools = self.tools.registry.specs();
        let notes = self.take_notes(round);
        let (check, check_ran) = self.round_check(round).unzip();
        let observation = self.observation(
            round,
            previous,
            (check.as_ref(), check_ran.as_deref().unwrap_or_default()),
            base,
            (ctx_size, max_tokens),
        );
        let (messages, prompt_json) = self.round_prompt(
            round,
            previous,
            &tools,
            observation.as_ref().map(|o| o.text.as_str()),
            &notes,
        );
        self.log_round_start(round, &prompt_json, base);
        let largest_whole = observation.as_ref().map_or(0, |o| o.largest_whole);
        let standing = check.as_ref().map(check::Standing::of).unwrap_or_default();
        let start_verdict = check.as_ref().map(|c| c.verdict);
        let opening = opening_events(round, notes, check, observation);

        let git_before = GitFingerprint::take(self.workspace.root());
        let processes = ProcessTracker::new();
        let round_tmp = crate::tools::run_command::round_tmp_dir(&self.config.run_id, round);
        let _ = std::fs::create_dir_all(&round_tmp);
        let round_cancel = self.cancel.child_token();
        let turn_tokens = observation_turn_tokens(largest_whole, max_tokens, ctx_size);
        let scope = RoundScope {
            round,
            tools: &tools,
            prompt_json: &prompt_json,
            ctx_size,
            max_tokens: turn_tokens.unwrap_or(max_tokens),
            turn_tokens,
            processes: &processes,
            round_tmp: &round_tmp,
            cancel: &round_cancel,
            opening,
            standing,
            start_verdict,
        };
        let mut tally = RoundTally::default();
        let timer = self.config.round_timeout.map(|limit| {
            let timer = RoundTimer::start(limit, round_cancel.clone());
            (limit, timer)
        });
        let end = self.child_turns(&scope, messages, &mut tally);
        let end = self.timed(end, timer);
        processes.kill_all();
        let _ = std::fs::remove_dir_all(&round_tmp);
        self.close_round(round, &git_before);

        // A failure while cancelling is the cancel's doing; an accepted report stays accepted.
        let end = match end {
            RoundEnd::Failed(_) if self.cancel.is_cancelled() => RoundEnd::Cancelled,
            other => other,
        };
        self.record_round_end(round, &end, base, &tally, started);
        end
    }

    /// After the round's processes are gone: a warning when the round moved git's own state
    /// (`git_before`: as it started), the round's log closed, the stall watch told.
    fn close_round(&mut self, round: u32, git_before: &GitFingerprint) {
        let git_after = GitFingerprint::take(self.workspace.root());
        if let Some(message) = git_before.warning(&git_after, round) {
            self.rec.emit(Event::Warning { message });
        }
        self.rec.log.end_round();
        if let Some(watch) = &self.watch {
            watch.round_ended();
        }
    }

    /// How the round ended once its timer is stopped: past its limit, a round that did not
    /// report (and was not cancelled) ran out of time. An accepted report stays accepted.
    fn timed(&self, end: RoundEnd, timer: Option<(Duration, RoundTimer)>) -> RoundEnd {
        let Some((limit, timer)) = timer else {
            return end;
        };
        let fired = timer.stop();
        match end {
            RoundEnd::Reported(_) => end,
            _ if fired && !self.cancel.is_cancelled() => RoundEnd::TimedOut(limit),
            _ => end,
        }
    }

    /// The check at round `round`'s start, when the run has one, and for the observation
    /// what its failing tests ran of the workspace's code (traced only when there is an
    /// observation to say it).
    fn round_check(&self, round: u32) -> Option<(CheckRun, String)> {
        let command = self.config.check.as_deref()?;
        Some(check::run_observed(
            command,
            self.workspace.root(),
            &self.tools.policy,
            &self.config.run_id,
            round,
            (&self.cancel, self.config.observe),
        ))
    }

    /// Round `round`'s observation of the workspace, when the run gives one: its file texts
    /// within what the context leaves beside the fixed prompt, the turns and the report, and
    /// the run's diff from its start to `base`, the round's opening snapshot, and what the
    /// commands the objective names print now (run in the sandbox like the check); secret
    /// values masked as in every tool's result.
    fn observation(
        &self,
        round: u32,
        previous: Option<&Report>,
        (check, check_ran): (Option<&CheckRun>, &str),
        base: Option<Snapshot>,
        (ctx_size, max_tokens): (u32, u32),
    ) -> Option<observe::Observation> {
        if !self.config.observe {
            return None;
        }
        let run_patch = self.changes.run_patch(&self.workspace, base);
        let changed = self.changes.worker_paths();
        let commands = probe::commands(
            &self.config.objective,
            self.workspace.root(),
            self.config.check.as_deref(),
        );
        let ran = probe::run(
            &commands,
            self.workspace.root(),
            &self.tools.policy,
            (&self.config.run_id, round),
            &self.cancel,
        );
        let mut seen = observe::observe(&observe::Inputs {
            root: self.workspace.root(),
            objective: &self.config.objective,
            previous,
            check,
            check_ran,
            ran: &ran,
            changed,
            run_patch: run_patch.as_deref(),
            text_budget: observe::text_budget(ctx_size, max_tokens),
        });
        // What the worker would get masked from read_file (a `.env`'s key, say) is masked
        // here too: the observation is file text the worker reads without a call.
        seen.text = self.tools.policy.secrets.mask(&seen.text);
        tracing::info!(
            "round {round}: observation of {} bytes, {} file(s) shown",
            seen.text.len(),
            seen.shown.len()
        );
        Some(seen)
    }

    /// Round `round`'s prompt messages (an unreadable `AGENTS.md` is a `warning`), and the
    /// prompt as the run log keeps it: round, format, messages and tools as JSON.
    fn round_prompt(
        &mut self,
        round: u32,
        previous: Option<&Report>,
        tools: &[ToolSpec],
        observation: Option<&str>,
        notes: &[Note],
    ) -> (Vec<Message>, Vec<u8>) {
        let agents = prompt::agents_file(self.workspace.root()).unwrap_or_else(|message| {
            self.rec.emit(Event::Warning { message });
            None
        });
        let tool_instructions = self.format.tool_instructions(tools);
        let messages = prompt::RoundPrompt {
            objective: &self.config.objective,
            round,
            max_rounds: self.config.max_rounds,
            previous,
            agents: agents.as_deref(),
            tool_instructions: &tool_instructions,
            observation,
            notes,
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
        (messages, prompt_json)
    }

    /// Opens the round in the run log with its prompt, and writes the tree the round starts
    /// from, so a viewer can show the round's own diff live.
    fn log_round_start(&mut self, round: u32, prompt_json: &[u8], base: Option<Snapshot>) {
        if let Err(e) = self.rec.log.begin_round(round, prompt_json) {
            tracing::error!("run log: {e}");
        }
        if let Some(base) = base {
            let tree = base.tree.to_string();
            if let Err(e) = self
                .rec
                .log
                .write_round_file(round, BASE_TREE, tree.as_bytes())
            {
                tracing::error!("{BASE_TREE}: {e}");
            }
        }
    }

    /// Writes the round's report and diff and emits `workspace_changed` (when files changed)
    /// and `round_finished`.
    fn record_round_end(
        &mut self,
        round: u32,
        end: &RoundEnd,
        base: Option<Snapshot>,
        tally: &RoundTally,
        started: Instant,
    ) {
        if let RoundEnd::Reported(report) = end {
            let text = serde_json::to_vec_pretty(report).unwrap_or_default();
            if let Err(e) = self.rec.log.write_round_file(round, "report.json", &text) {
                tracing::error!("report.json: {e}");
            }
        }
        let diff = self
            .changes
            .round_end(&self.workspace, &mut self.rec, round, base);
        let changes_unknown = diff.is_none();
        let diff = diff.unwrap_or_default();
        let report = match end {
            RoundEnd::Reported(report) => Some(report),
            _ => None,
        };
        let changed = (!changes_unknown).then(|| diff.files_changed());
        if let Some(reason) = self.stall.round_ended(round, changed, report) {
            self.stalled = Some(reason);
        }
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
        let (outcome, error) = match end {
            RoundEnd::Reported(_) => (RoundOutcome::Reported, None),
            RoundEnd::Failed(reason) => (RoundOutcome::Failed, Some(reason.clone())),
            RoundEnd::OutOfBudget => (
                RoundOutcome::Failed,
                Some("the run's token budget is spent".to_string()),
            ),
            RoundEnd::TimedOut(limit) => (
                RoundOutcome::Failed,
                Some(format!(
                    "ran past its wall-clock limit of {} s (--round-timeout)",
                    limit.as_secs()
                )),
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
            changes_unknown,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::observation_turn_tokens;

    #[test]
    fn a_turn_can_write_back_the_largest_file_shown_within_a_quarter_of_the_context() {
        assert_eq!(observation_turn_tokens(0, 1024, 16384), None);
        // No file shown, no change, however small `--max-tokens` is.
        assert_eq!(observation_turn_tokens(0, 120, 4096), None);
        assert_eq!(observation_turn_tokens(1500, 1024, 16384), None);
        assert_eq!(observation_turn_tokens(6000, 1024, 16384), Some(3128));
        assert_eq!(observation_turn_tokens(60_000, 1024, 16384), Some(4096));
        assert_eq!(observation_turn_tokens(60_000, 1024, 2048), None);
    }
}
