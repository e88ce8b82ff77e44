//! Where each pane goes, as pure functions of the screen size.
//!
//! Update (to size scroll views) and render (to draw) both call these, so the two always
//! agree on every pane's size.

use ratatui::layout::{Constraint, Layout, Margin, Rect};

/// The run screen's panes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunAreas {
    pub header: Rect,
    pub objective: Rect,
    pub stream: Rect,
    pub reports: Rect,
    pub changes: Rect,
    pub status: Rect,
}

/// The review screen's panes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReviewAreas {
    pub header: Rect,
    pub outcome: Rect,
    pub report: Rect,
    pub verification: Rect,
    pub files: Rect,
    pub diff: Rect,
    pub status: Rect,
}

/// The most rows the objective pane takes (its text, without borders).
pub fn objective_rows(area: Rect) -> u16 {
    if area.height >= 36 {
        5
    } else if area.height >= 28 {
        3
    } else {
        2
    }
}

/// The inside of a bordered block.
pub fn inner(area: Rect) -> Rect {
    area.inner(Margin::new(1, 1))
}

/// The most rows a status line wraps to.
pub const MAX_STATUS_ROWS: u16 = 3;

pub fn run_areas(area: Rect, objective_lines: usize) -> RunAreas {
    let objective_height = (objective_lines.max(1) as u16).min(objective_rows(area)) + 2;
    let [header, objective, main, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(objective_height),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let side = (main.width * 2 / 5).clamp(30.min(main.width), 60);
    let [stream, right] =
        Layout::horizontal([Constraint::Min(10), Constraint::Length(side)]).areas(main);
    let [reports, changes] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(right);
    RunAreas {
        header,
        objective,
        stream,
        reports,
        changes,
        status,
    }
}

/// The review's areas; its status line takes `status_rows` rows (a notice too long for one
/// wraps rather than being cut).
pub fn review_areas(area: Rect, status_rows: u16) -> ReviewAreas {
    let outcome_height = 4;
    let [header, outcome, middle, bottom, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(outcome_height),
        Constraint::Percentage(40),
        Constraint::Min(5),
        Constraint::Length(status_rows.clamp(1, MAX_STATUS_ROWS)),
    ])
    .areas(area);
    let [report, verification] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(middle);
    let files_width = (bottom.width / 3).clamp(20.min(bottom.width), 50);
    let [files, diff] =
        Layout::horizontal([Constraint::Length(files_width), Constraint::Min(10)]).areas(bottom);
    ReviewAreas {
        header,
        outcome,
        report,
        verification,
        files,
        diff,
        status,
    }
}

/// A centred rectangle of `percent_x`×`percent_y` of `area`, at least `min_w`×`min_h` where
/// the screen allows.
pub fn popup(area: Rect, percent_x: u16, percent_y: u16, min_w: u16, min_h: u16) -> Rect {
    let width = (area.width * percent_x / 100).max(min_w).min(area.width);
    let height = (area.height * percent_y / 100).max(min_h).min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}
