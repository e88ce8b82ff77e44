//! What a view (an overlay: help, report detail, diff, commit editor, run log, cancel,
//! revert and discard questions, a waiting approval) is given and what it answers.
//!
//! A view owns its scroll and its keys; what it needs of the rest of the state is lent to
//! it as a [`Ctx`], and what it wants of the rest is returned as an [`Outcome`]. So a view
//! never imports the state, and the state holds views without knowing how they draw.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::screens::kit::theme::Theme;
use crate::screens::model::{ReportEntry, ReviewEffect};
use crate::tools::approval::ApprovalDecision;

/// The read-only part of the state a view may look at.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    pub theme: Theme,
    /// The whole screen at the last sync.
    pub screen: Rect,
    pub reports: &'a [ReportEntry],
    pub run_dir: &'a str,
}

impl Ctx<'_> {
    /// Rows one page of a view scrolls.
    pub fn page(&self) -> usize {
        usize::from(self.screen.height.saturating_sub(6)).max(1)
    }
}

/// What a view wants after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Handled; the view stays open.
    Stay,
    /// Close this view.
    Close,
    /// Open help above this view.
    OpenHelp,
    /// The cancel question was answered yes.
    ConfirmCancel,
    /// A review action the person asked for or confirmed: a commit's and a discard's view
    /// closes, a revert's stays open to show the result (`screens/review/results.rs`).
    Review(ReviewEffect),
    /// Tell the person something on the status line; the view stays open.
    Notice(String),
    /// The waiting approval was answered (it leaves the queue).
    Answer(ApprovalDecision),
    /// Esc over a waiting approval: ask whether to cancel the run; the request keeps waiting.
    AskCancel,
    /// A checked note for the next round (the view closes).
    Note(String),
    /// Send the reviewed run back to work with this note and this many more rounds.
    SendBack(String, u32),
}

/// An overlay: scroll, keys and render in one place.
pub trait View {
    /// Answers one key.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome;
    /// Clamps the scroll to what a frame of `area` shows; called before each draw.
    fn sync(&mut self, _area: Rect, _ctx: &Ctx) {}
    /// Draws the view over `area`; a pure function of the view and `ctx`.
    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer);
}
