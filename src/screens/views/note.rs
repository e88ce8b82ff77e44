//! The note editor: the person's words to the next round. Opened with `n` while the run goes
//! (the note waits for the next round) and with `b` at the review (the run is sent back to
//! work with it, its round cap raised by the rounds chosen here). It owns the text and the
//! rounds; Ctrl-S answers with a checked note, or says on the status line why none is sent
//! (empty, or over the size limit with its size).

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;
use tui_textarea::TextArea;

use super::view::{Ctx, Outcome, View};
use crate::engine::notes::{self, NOTE_MAX_BYTES};
use crate::screens::hints::{self, HintSpec};
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{modal, put_line};
use crate::screens::kit::layout::popup;
use crate::screens::kit::wrap;

/// Rounds a send-back adds to the cap unless the person chooses otherwise.
pub const DEFAULT_EXTRA_ROUNDS: u32 = 3;

/// What a send-back asks besides the note: how many rounds to add, within what is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendBack {
    pub rounds: u32,
    /// Most rounds that can be added (the run's cap is at most 64).
    pub most: u32,
    /// The run's cap now.
    pub cap: u32,
}

/// The note editor.
#[derive(Debug, Clone)]
pub struct NoteEditor {
    pub editor: TextArea<'static>,
    /// The round the note goes to.
    pub round: u32,
    /// Set at the review: the run is sent back with the note.
    pub send_back: Option<SendBack>,
}

impl NoteEditor {
    /// An empty editor for a note to round `round`.
    pub fn new(round: u32) -> Self {
        let mut editor = TextArea::default();
        editor.set_cursor_line_style(ratatui::style::Style::default());
        editor.set_placeholder_text("What should the next round do, or stop doing?");
        Self {
            editor,
            round,
            send_back: None,
        }
    }

    /// The editor of a send-back from the review: the run's cap is `cap`, `started` rounds
    /// have run; the rounds added default to [`DEFAULT_EXTRA_ROUNDS`] within 64.
    pub fn sending_back(started: u32, cap: u32) -> Self {
        let most = crate::options::RoundCount::CEILING.saturating_sub(cap.max(started));
        let mut editor = Self::new(started + 1);
        editor.send_back = Some(SendBack {
            rounds: DEFAULT_EXTRA_ROUNDS.min(most),
            most,
            cap,
        });
        editor
    }

    pub fn paste(&mut self, text: &str) {
        self.editor.insert_str(text);
    }

    /// Ctrl-S: the note checked, or why it is not sent.
    fn submit(&self) -> Outcome {
        let text = self.editor.lines().join("\n");
        match (notes::check(&text), self.send_back) {
            (Err(refusal), _) => Outcome::Notice(refusal.to_string()),
            (Ok(note), None) => Outcome::Note(note),
            (Ok(_), Some(back)) if back.rounds == 0 => Outcome::Notice(
                "no round to add: the run is at 64 rounds, the most it may have".into(),
            ),
            (Ok(note), Some(back)) => Outcome::SendBack(note, back.rounds),
        }
    }

    /// The line above the text: where the note goes, and for a send-back the rounds; a note
    /// over the size limit says its size instead.
    fn heading(&self) -> String {
        let size = self.editor.lines().join("\n").trim().len();
        if size > NOTE_MAX_BYTES {
            return format!(
                "The note is {size} bytes, over the {NOTE_MAX_BYTES}-byte limit: shorten it to send it."
            );
        }
        match self.send_back {
            None => format!(
                "Given to round {} after the fixed prompt, marked as your note with the time; \
                 the objective stays as it is.",
                self.round
            ),
            Some(back) => format!(
                "The run goes on at round {} with this note. Rounds added: {} (cap {} → {}; \
                 PgUp/PgDn change it).",
                self.round,
                back.rounds,
                back.cap,
                back.cap + back.rounds
            ),
        }
    }
}

/// The note editor's keys on its frame (printable keys are the note's text).
const NOTE_KEYS: &HintSpec = &[(&[Action::Submit], "send"), (&[Action::Back], "back")];
const SEND_BACK_KEYS: &HintSpec = &[
    (&[Action::Submit], "send back"),
    (&[Action::MoreRounds, Action::FewerRounds], "rounds"),
    (&[Action::Back], "back"),
];

impl View for NoteEditor {
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome {
        match keys::editor_action(&[&keys::NOTE, &keys::EVERYWHERE], key) {
            Some(Action::Submit) => self.submit(),
            Some(Action::Back | Action::Interrupt) => Outcome::Close,
            Some(Action::Help) => Outcome::OpenHelp,
            Some(action @ (Action::MoreRounds | Action::FewerRounds)) => {
                if let Some(back) = &mut self.send_back {
                    back.rounds = match action {
                        Action::MoreRounds => (back.rounds + 1).min(back.most),
                        _ => back.rounds.saturating_sub(1).max(1.min(back.most)),
                    };
                }
                Outcome::Stay
            }
            _ => {
                self.editor.input(*key);
                Outcome::Stay
            }
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let theme = ctx.theme;
        let rect = popup(area, 80, 50, 50, 10);
        let at = [&keys::NOTE, &keys::EVERYWHERE];
        let (title, spec) = match self.send_back {
            None => (" A note to the next round ", NOTE_KEYS),
            Some(_) => (" Send the run back to work ", SEND_BACK_KEYS),
        };
        let hint = Some(format!(" {} ", hints::text(&hints::of(&at, spec, true))));
        let inner = modal(theme, title.to_string(), hint, rect, buf);
        let [head, body] =
            Layout::vertical([Constraint::Length(2), Constraint::Min(1)]).areas(inner);
        for (i, row) in wrap::rows(&self.heading(), usize::from(head.width))
            .iter()
            .take(2)
            .enumerate()
        {
            put_line(buf, head, i, &Line::styled(*row, theme.dim()));
        }
        Widget::render(&self.editor, body, buf);
    }
}
