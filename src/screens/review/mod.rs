//! The review screen, shown once the run is over, as one component: [`ReviewScreen`] draws
//! it (`screen`), answers its keys (`actions`) and says what its actions did (`results`),
//! with the group of changes git does not show (`hidden`) and a worktree run's own actions
//! (`worktree`) beside them. The views it opens (commit editor, revert and discard
//! questions, diff, report) are in `views/`.

mod actions;
pub mod hidden;
mod results;
pub mod screen;
pub mod worktree;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::model::Effect;
use super::state::State;

pub use screen::{outcome_text, resume_command};

/// The review screen. What it shows is the state's `review` (read once the run ended), so
/// the screen itself holds nothing: it is where the review's render and keys live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReviewScreen;

impl ReviewScreen {
    /// Answers a key no view above the review took.
    pub fn handle_key(self, state: &mut State, key: &KeyEvent) -> Vec<Effect> {
        actions::on_key(state, key)
    }

    /// Draws the review over `area` (its panes were placed at the last sync).
    pub fn render(self, state: &State, area: Rect, buf: &mut Buffer) {
        screen::render(state, area, buf);
    }
}
