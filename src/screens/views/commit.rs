//! The commit message editor, pre-filled from the worker's report: it owns the text being
//! edited and answers Ctrl-S with the message to commit.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;
use tui_textarea::TextArea;

use super::view::{Ctx, Outcome, View};
use crate::screens::hints::{self, HintSpec};
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{modal, put_line};
use crate::screens::kit::layout::popup;
use crate::screens::kit::wrap;
use crate::screens::model::ReviewEffect;

/// The commit editor.
#[derive(Debug, Clone)]
pub struct CommitEditor {
    pub editor: TextArea<'static>,
    /// Some of the run's files were changed outside it: the commit leaves them out, and the
    /// editor says so.
    pub leaves_out: bool,
    /// What the commit takes, when the person chose some files only: said above the message
    /// instead of the default line.
    pub note: Option<String>,
}

impl CommitEditor {
    /// An editor holding `message`, the cursor at its end (where a person adds to it).
    pub fn new(message: &str) -> Self {
        let mut editor = TextArea::new(message.lines().map(String::from).collect());
        editor.set_cursor_line_style(ratatui::style::Style::default());
        editor.move_cursor(tui_textarea::CursorMove::Bottom);
        editor.move_cursor(tui_textarea::CursorMove::End);
        Self {
            editor,
            leaves_out: false,
            note: None,
        }
    }

    /// The same editor, saying whether files changed outside the run stay out of the commit.
    #[must_use]
    pub fn leaving_out(mut self, leaves_out: bool) -> Self {
        self.leaves_out = leaves_out;
        self
    }

    /// The message as typed so far.
    pub fn lines(&self) -> &[String] {
        self.editor.lines()
    }

    pub fn paste(&mut self, text: &str) {
        self.editor.insert_str(text);
    }
}

/// The commit editor's keys on its frame (printable keys are the message's text).
const COMMIT_KEYS: &HintSpec = &[(&[Action::Submit], "commit"), (&[Action::Back], "back")];

impl View for CommitEditor {
    /// Ctrl-S commits a non-empty message; Esc and Ctrl-C go back; F1 opens help; the rest
    /// is text.
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome {
        match keys::editor_action(&[&keys::EDITOR, &keys::EVERYWHERE], key) {
            Some(Action::Submit) => {
                let message = self.editor.lines().join("\n").trim().to_string();
                if message.is_empty() {
                    Outcome::Notice("the commit message is empty".into())
                } else {
                    Outcome::Review(ReviewEffect::Commit(message))
                }
            }
            Some(Action::Back | Action::Interrupt) => Outcome::Close,
            Some(Action::Help) => Outcome::OpenHelp,
            _ => {
                self.editor.input(*key);
                Outcome::Stay
            }
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let theme = ctx.theme;
        let rect = popup(area, 85, 75, 50, 12);
        let at = [&keys::EDITOR, &keys::EVERYWHERE];
        let hint = Some(format!(
            " {} ",
            hints::text(&hints::of(&at, COMMIT_KEYS, true))
        ));
        let inner = modal(
            theme,
            " Commit the run's changes ".to_string(),
            hint,
            rect,
            buf,
        );
        let [note, body] =
            Layout::vertical([Constraint::Length(2), Constraint::Min(1)]).areas(inner);
        let text = if let Some(note) = &self.note {
            note.as_str()
        } else if self.leaves_out {
            "Commits the chosen files as the review shows them; files changed outside the run stay out. Edit the message:"
        } else {
            "Commits the chosen files exactly as the review shows them. Edit the message:"
        };
        for (i, row) in wrap::rows(text, usize::from(note.width))
            .iter()
            .take(2)
            .enumerate()
        {
            put_line(buf, note, i, &Line::styled(*row, theme.dim()));
        }
        Widget::render(&self.editor, body, buf);
    }
}
