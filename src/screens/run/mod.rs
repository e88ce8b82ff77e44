//! The run screen as one component: [`RunScreen`] draws its panes, one file each from
//! `&State` (the header's meters, the objective, the model's stream, the reports, the
//! changes by round, the status line), and answers its keys (`actions`). The views it opens
//! (a tool call, a report, a diff, help, the run log, the cancel question) are in `views/`.

mod actions;
pub mod changes;
pub mod header;
pub mod objective;
pub mod reports;
pub mod status;
pub mod stream;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::model::Effect;
use super::state::State;

/// The run screen. What it shows is the state (the panes were placed at the last sync), so
/// the screen itself holds nothing: it is where the run screen's render and keys live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunScreen;

impl RunScreen {
    /// Answers a key no view, approval or question above the run screen took.
    pub fn handle_key(self, state: &mut State, key: &KeyEvent) -> Vec<Effect> {
        actions::on_key(state, key)
    }

    /// Draws the panes where the last sync placed them.
    pub fn render(self, state: &State, _area: Rect, buf: &mut Buffer) {
        let areas = state.areas.run;
        header::render(state, areas.header, buf);
        objective::render(state, areas.objective, buf);
        stream::render(state, areas.stream, buf);
        reports::render(state, areas.reports, buf);
        changes::render(state, areas.changes, buf);
        status::render(state, areas.status, buf);
    }
}
