//! Supervision's side effects: a note typed while the run goes reaches the run's note inbox,
//! and a run sent back from the review goes on in this same session, resumed with the note
//! (`runs::resume`, the same as `--resume RUN --note`): its objective, settings and worktree,
//! its run directory, its round numbers going on, its cap raised by the rounds the person
//! chose. The send-back is recorded as `sent back` in the run's `review.jsonl`.

use super::{Done, Driver, Ended};
use crate::app;
use crate::engine::notes::Note;
use crate::options::{Options, RoundCount};
use crate::protocol::event::NoteSource;
use crate::runs::resume::{self, Request};
use crate::runs::{review, PastRun};
use crate::screens::model::{Msg, SentBack};

/// The worker's claim a send-back answers: the run's outcome and its last report's summary.
fn claim_of(past: &PastRun) -> String {
    let outcome = past.ending();
    match &past.last_valid {
        Some(report) => format!(
            "the worker's claim ({outcome}, report {}: \"{}\")",
            report.status.as_str(),
            crate::text::cut_at_char_boundary(&report.summary, 200)
        ),
        None => format!("the run ({outcome}, no valid report)"),
    }
}

impl Driver {
    /// A note for the running run's next round.
    pub(super) fn note(&self, text: String) {
        if let Some(run) = &self.run {
            run.notes.push(Note::now(text, NoteSource::Tui));
        }
    }

    /// Sends the reviewed run back to work with `note` and `rounds` more rounds; the screens
    /// hear whether it goes on. `Some` only when the new run could not even start.
    pub(super) fn send_back(&mut self, note: String, rounds: u32) -> Option<Ended> {
        match self.resumed(note, rounds) {
            Ok((prepared, objective, back, claim)) => {
                let old = self.run.as_ref().map(|run| run.run_dir.clone());
                if let Some(old) = old {
                    let detail = format!(
                        "{claim}: to round {} with your note, the cap raised to {}",
                        back.round, back.max_rounds
                    );
                    review::record(&old, "sent back", &detail);
                }
                self.prepared = prepared;
                self.run = None;
                self.reviewed = None;
                self.moved = None;
                let _ = self.done_tx.send(Done::Msg(Msg::SentBack(Ok(back))));
                self.start(objective).err()
            }
            Err(e) => {
                let _ = self.done_tx.send(Done::Msg(Msg::SentBack(Err(e))));
                None
            }
        }
    }

    /// The reviewed run, resumed with the note: ready to start, its objective, and where it
    /// goes on.
    fn resumed(
        &self,
        note: String,
        rounds: u32,
    ) -> Result<(app::Prepared, String, SentBack, String), String> {
        let run = self.run.as_ref().ok_or("no run to send back")?;
        let settings = &self.prepared.settings;
        let past = PastRun::load(&run.run_dir).map_err(|e| e.to_string())?;
        let cap = settings.options.max_rounds.get().saturating_add(rounds);
        let max_rounds = RoundCount::try_from(cap)?;
        let next = past.last_round + 1;
        let request = Request {
            run: run.run_dir.display().to_string(),
            options: Options {
                max_rounds: Some(max_rounds),
                ..Options::default()
            },
            headless: false,
            log_file: settings.log_file.clone(),
            note: Some(Note::now(note, NoteSource::Review)),
            notes: settings.notes.clone(),
        };
        let (settings, resumed) =
            resume::plan(request, settings.dirs.clone(), &past).map_err(|e| e.to_string())?;
        let prepared = app::prepare_resumed(&settings, resumed)
            .and_then(app::isolate)
            .map_err(|e| e.to_string())?;
        let back = SentBack {
            run_dir: prepared.run_dir.display().to_string(),
            round: next,
            max_rounds: cap,
        };
        Ok((
            prepared,
            past.record.objective.clone(),
            back,
            claim_of(&past),
        ))
    }
}
