//! The review screen, shown once the run is over, as one component: [`ReviewScreen`] holds
//! its state, draws it (`screen`), answers its keys (`actions`), writes the commit message
//! it offers (`message`) and says what its actions did (`results`), with the group of
//! changes git does not show (`hidden`) and a worktree run's own actions (`worktree`) beside
//! them. The views it opens (commit editor, revert and discard questions, diff, report) are
//! in `views/`.
//!
//! Like a view, the review never imports the screens' state: what it reads of the state the
//! run screen shares with it is lent to it as [`Shared`], and what it may change there (the
//! status line, the open views) as [`Lent`]. The run's header above it is the run screen's,
//! drawn by the frame.

mod actions;
pub mod hidden;
mod message;
mod results;
pub mod screen;
pub mod worktree;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::kit::layout::{self, ReviewAreas};
use super::kit::scroll::{self, keep_visible};
use super::kit::theme::Theme;
use super::kit::wrap;
use super::model::{Effect, Loadable, ReportEntry, Review, RoundChanges, Setup, WorktreeGone};
use super::views::diff;
use super::views::overlay::Overlay;
use crate::error::ExitCode;

pub use screen::{outcome_text, resume_command};

/// The review screen and what it owns: the review (read once the run ended), a worktree
/// run's actions so far, where its panes were drawn and the file list's first row. It draws
/// itself ([`ReviewScreen::render`]), answers its keys ([`ReviewScreen::handle_key`]) and
/// handles what its actions did (`results`), borrowing only what the run screen shares
/// with it ([`Shared`], [`Lent`]).
#[derive(Debug, Clone, Default)]
pub struct ReviewScreen {
    /// The review of the run; `None` until the run is over.
    pub shown: Option<Review>,
    /// A worktree run's review: the discard asked once, and what is gone.
    pub worktree: WorktreeReview,
    /// Where the review's panes were at the last sync (for render and the mouse).
    pub areas: ReviewAreas,
    /// The first row the file list shows.
    pub offset: usize,
}

/// The review of a worktree run (`--worktree`): the discard asked once, and what is gone.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorktreeReview {
    /// X was pressed once; a second X discards.
    pub discard_armed: bool,
    /// The worktree and branch are gone (committed, or removed with `X X`).
    pub gone: Option<WorktreeGone>,
    /// `A` applied the run's changes to the person's work tree (the branch is kept).
    pub applied: bool,
}

/// What the review reads of the state the screens share: the run's setup, reports and
/// changes as the run screen showed them.
#[derive(Debug, Clone, Copy)]
pub struct Shared<'a> {
    pub theme: Theme,
    pub setup: &'a Setup,
    pub run_id: &'a str,
    pub objective: &'a str,
    pub reports: &'a [ReportEntry],
    pub changes: &'a [RoundChanges],
    /// The screens show a replay, not a live run: nothing can be sent back.
    pub replay: bool,
}

/// What the review's handlers may change of the state the screens share (the status line
/// and the open views), with what they read of it.
pub struct Lent<'a> {
    pub notice: &'a mut Option<String>,
    pub overlays: &'a mut Vec<Overlay>,
    pub shared: Shared<'a>,
}

impl ReviewScreen {
    /// Answers a key no view above the review took.
    pub fn handle_key(&mut self, key: &KeyEvent, mut lent: Lent<'_>) -> Vec<Effect> {
        self.on_key(key, &mut lent)
    }

    /// Draws the review over `area` (its panes were placed at the last sync), with the
    /// status line saying `notice` when there is one.
    pub fn render(&self, shared: &Shared, notice: Option<&str>, buf: &mut Buffer) {
        screen::render(self, shared, notice, buf);
    }

    /// The exit code if the program ended now.
    pub fn exit_code(&self) -> ExitCode {
        match &self.shown {
            Some(review) => ExitCode::of_run(review.status, review.verification.as_ref()),
            None => ExitCode::Cancelled,
        }
    }

    /// Places the panes for a frame of `area`, with a status line as tall as `notice` wraps
    /// to, and keeps the chosen file and its diff in view.
    pub fn sync(&mut self, area: Rect, notice: Option<&str>) {
        let areas = layout::review_areas(area, status_rows(notice, area.width));
        self.areas = areas;
        let files_height = usize::from(layout::inner(areas.files).height).max(1);
        let diff_inner = layout::inner(areas.diff);
        let Some(review) = &mut self.shown else {
            return;
        };
        if let Loadable::Ready(diff) = &review.diff {
            review.file = review.file.min(diff.files.len().saturating_sub(1));
            let rows = diff::file_rows(diff.files.get(review.file), diff_inner.width);
            review.diff_scroll = scroll::clamp(review.diff_scroll, rows, diff_inner.height);
            let files_width = usize::from(layout::inner(areas.files).width);
            let row = review.row_of(review.file, diff::gitlink_note(files_width).len());
            self.offset = keep_visible(self.offset, row, files_height);
        }
    }
}

/// The rows the review's status line needs: a notice wraps (at most
/// [`layout::MAX_STATUS_ROWS`]); everything else says its keys in one.
fn status_rows(notice: Option<&str>, width: u16) -> u16 {
    let Some(notice) = notice else {
        return 1;
    };
    let rows = wrap::rows(notice, usize::from(width.saturating_sub(1))).len();
    u16::try_from(rows)
        .unwrap_or(u16::MAX)
        .clamp(1, layout::MAX_STATUS_ROWS)
}
