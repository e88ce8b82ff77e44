//! Supervision from the screens: a note to the next round while the run goes (`n`), and a
//! finished run sent back to work from the review (`b`). Both open the note editor
//! ([`super::views::note`]); what it answers becomes an effect the event loop carries out,
//! unless there is nowhere for the note to go (a replay, a run being cancelled, a worktree
//! that is gone), which the status line says instead.

use super::model::{Effect, Pane, Phase, SentBack};
use super::state::State;
use super::transcript::LineKind;
use super::views::note::NoteEditor;
use super::views::overlay::Overlay;

impl State {
    /// `n` on the run screen: the note editor for the next round.
    pub(super) fn open_note(&mut self) {
        if self.replay.is_some() {
            self.notice = Some("replay: read-only, no note can reach its rounds".into());
        } else if self.cancel_requested.is_some() {
            self.notice = Some("the run is being cancelled: no round will read a note".into());
        } else {
            self.open(Overlay::Note(Box::new(NoteEditor::new(self.round + 1))));
        }
    }

    /// A note saved in the editor while the run goes: it waits for the next round, whose
    /// card shows it once given.
    pub(super) fn note_sent(&mut self, text: String) -> Vec<Effect> {
        if self.phase != Phase::Running {
            self.notice = Some("the run is over: b sends it back to work with a note".into());
            return Vec::new();
        }
        let first = text.lines().next().unwrap_or_default();
        self.transcript.push_line(
            LineKind::Notice,
            &format!(
                "✎ note saved; round {} will be given it: {}",
                self.round + 1,
                super::kit::wrap::truncate(first, 80)
            ),
        );
        vec![Effect::Note(text)]
    }

    /// The send-back editor's answer: the run resumes with the note.
    pub(super) fn send_back(&mut self, note: String, rounds: u32) -> Vec<Effect> {
        if let Some(why) = self.review.cannot_send_back(self.replay.is_some()) {
            self.notice = Some(why);
            return Vec::new();
        }
        self.notice = Some("sending the run back to work…".into());
        vec![Effect::SendBack { note, rounds }]
    }
}

impl State {
    /// The send-back's result: the screens go back to the running run, or the review says
    /// why it could not go on.
    pub(super) fn sent_back(&mut self, result: Result<SentBack, String>) {
        let back = match result {
            Ok(back) => back,
            Err(e) => {
                self.notice = Some(format!("the run was not sent back: {e}"));
                return;
            }
        };
        self.phase = Phase::Running;
        self.review = super::review::ReviewScreen::default();
        self.overlays.clear();
        self.run_ended = None;
        self.cancel_requested = None;
        self.quit_when_finished = false;
        self.cursors.focus = Pane::Stream;
        self.setup.max_rounds = back.max_rounds;
        self.setup.run_dir = back.run_dir;
        self.notice = None;
        self.transcript.push_line(
            LineKind::Round,
            &format!(
                "── sent back to work: round {} goes on with your note, up to {} rounds ──",
                back.round, back.max_rounds
            ),
        );
    }
}
