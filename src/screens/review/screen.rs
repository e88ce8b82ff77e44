//! The review screen: the outcome in words that cannot pass for certification, the worker's
//! final report beside the `--verify` result, the run's cumulative diff with the files the
//! person chose to commit, and the actions: commit the chosen files, revert a round, discard
//! everything, or leave; an outcome `--resume` can continue shows the command that does it.
//! Every changed file is listed, however many; only the rows in view are made. Files changed
//! outside the run are listed apart and marked, and not chosen by default; so is a gitlink (a
//! separate repository), with words beneath its row; directories the snapshot could not look
//! into are named: the list never claims "no changes" where it could not look.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::options::RoundCount;
use crate::protocol::event::RunStatus;
use crate::screens::hints::{self, HintSpec, AT_REVIEW};
use crate::screens::keys::Action;
use crate::screens::kit::draw::{draw_lines, pane_block, put_line};
use crate::screens::kit::theme::Theme;
use crate::screens::kit::wrap;
use crate::screens::model::{CommitState, Loadable, Review, WorktreeGone};

use super::{ReviewScreen, Shared};
use crate::screens::views::diff;
use crate::screens::views::report_detail;
use crate::text::sanitize_line;
use crate::workspace::{DiffModel, FileDiff};

/// The outcome sentence, e.g. "complete after 3 rounds: the worker reports …".
pub fn outcome_text(review: &Review) -> String {
    format!(
        "{} after {} round{}: {}",
        review.status.as_str(),
        review.rounds_started,
        if review.rounds_started == 1 { "" } else { "s" },
        review.status.describe_with(review.verification.as_ref())
    )
}

/// The command that continues this run, for the outcomes `--resume` takes: by run id when the
/// run directory is the default one (`…/runs/<run id>`), else by directory. A run that stopped
/// at its round cap needs a higher one (`-n`), up to the ceiling of 64.
pub fn resume_command(shared: &Shared, review: &Review) -> Option<String> {
    let resumable = matches!(
        review.status,
        RunStatus::Cancelled
            | RunStatus::RoundFailed
            | RunStatus::BudgetLimited
            | RunStatus::Stalled
    );
    if !resumable || shared.run_id.is_empty() || review.rounds_started >= RoundCount::CEILING {
        return None;
    }
    let dir = std::path::Path::new(&shared.setup.run_dir);
    let by_id = dir.file_name().is_some_and(|n| n == shared.run_id)
        && dir
            .parent()
            .and_then(std::path::Path::file_name)
            .is_some_and(|n| n == "runs");
    let run = if by_id {
        shared.run_id.to_string()
    } else {
        format!("'{}'", shared.setup.run_dir.replace('\'', "'\\''"))
    };
    let cap = shared.setup.max_rounds;
    let raise = if review.rounds_started >= cap {
        format!(" -n {}", cap.saturating_mul(2).min(RoundCount::CEILING))
    } else {
        String::new()
    };
    // A stall goes on only with new direction.
    let note = if review.status == RunStatus::Stalled {
        " --note \"…\""
    } else {
        ""
    };
    Some(format!("ralph-tui --resume {run}{raise}{note}"))
}

fn render_outcome(state: &Draw, review: &Review, area: Rect, buf: &mut Buffer) {
    let theme = state.shared.theme;
    let mut block = pane_block(theme, " Outcome ".to_string(), false);
    if let Some(command) = resume_command(state.shared, review) {
        let room = usize::from(area.width.saturating_sub(4));
        block = block.title_bottom(Line::styled(
            wrap::truncate(&format!(" to continue: {command} "), room),
            theme.key(),
        ));
    }
    let inner = block.inner(area);
    block.render(area, buf);
    let style = if review.status.contradicted_by(review.verification.as_ref()) {
        theme.error()
    } else {
        theme.status(review.status)
    };
    let lines: Vec<Line> = wrap::rows(&outcome_text(review), usize::from(inner.width))
        .into_iter()
        .map(|r| Line::styled(r.to_string(), style))
        .collect();
    draw_lines(&lines, inner, buf);
}

fn render_report(theme: Theme, review: &Review, area: Rect, buf: &mut Buffer) {
    let (title, report) = match (&review.report, &review.last_valid) {
        (Some(r), _) => (" Final report · the worker's own account ", Some(r)),
        (None, Some(r)) => (" Last valid report · the worker's own account ", Some(r)),
        (None, None) => (" No valid report was filed ", None),
    };
    let block = pane_block(theme, title.to_string(), false);
    let inner = block.inner(area);
    block.render(area, buf);
    let mut lines = Vec::new();
    for warning in &review.warnings {
        let warning = wrap::sanitize(&format!("! {warning}"));
        for row in wrap::rows_multiline(&warning, usize::from(inner.width)) {
            lines.push(Line::styled(row.to_string(), theme.warning()));
        }
    }
    if let Some(error) = &review.error {
        let error = wrap::sanitize(&format!("error: {error}"));
        for row in wrap::rows_multiline(&error, usize::from(inner.width)) {
            lines.push(Line::styled(row.to_string(), theme.error()));
        }
    }
    if let Some(report) = report {
        lines.push(Line::from(vec![
            Span::styled("Status: ", theme.bold()),
            Span::raw(report.status.as_str()),
        ]));
        lines.extend(report_detail::report_lines(theme, report, inner.width));
    }
    draw_lines(&lines, inner, buf);
}

fn render_verification(state: &Draw, review: &Review, area: Rect, buf: &mut Buffer) {
    let theme = state.shared.theme;
    let block = pane_block(theme, " Verification (--verify) ".to_string(), false);
    let inner = block.inner(area);
    block.render(area, buf);
    let width = usize::from(inner.width);
    let mut lines = Vec::new();
    match (&review.verification, &state.shared.setup.verify) {
        (Some(v), _) => {
            lines.push(Line::raw(wrap::truncate(
                &format!("$ {}", v.command),
                width,
            )));
            let exit = v
                .exit_code
                .map_or_else(|| "no exit code".to_string(), |c| format!("exit {c}"));
            lines.push(if v.passed {
                Line::styled(format!("PASSED ({exit})"), theme.good())
            } else {
                Line::styled(format!("FAILED ({exit})"), theme.error())
            });
            let tail: Vec<&str> = v.output_tail.lines().collect();
            let room = usize::from(inner.height).saturating_sub(lines.len());
            for line in tail.iter().skip(tail.len().saturating_sub(room)) {
                lines.push(Line::styled(
                    wrap::truncate(&wrap::sanitize(line), width),
                    theme.dim(),
                ));
            }
        }
        (None, Some(command)) => {
            lines.push(Line::raw(wrap::truncate(&format!("$ {command}"), width)));
            for row in wrap::rows(
                "not run: it runs only after the worker reports completion",
                width,
            ) {
                lines.push(Line::styled(row.to_string(), theme.dim()));
            }
        }
        (None, None) => {
            for row in wrap::rows(
                "none configured: pass --verify CMD to check a completion claim",
                width,
            ) {
                lines.push(Line::styled(row.to_string(), theme.dim()));
            }
        }
    }
    draw_lines(&lines, inner, buf);
}

fn render_files(state: &Draw, review: &Review, area: Rect, buf: &mut Buffer) {
    let theme = state.shared.theme;
    let title = match &review.diff {
        Loadable::Ready(d) => {
            let chosen = review.chosen().len();
            match d.outside_run().len() {
                0 => format!(" Changes ({}) · {chosen} chosen ", d.files.len()),
                outside => format!(
                    " Changes ({}, {outside} outside the run) · {chosen} chosen ",
                    d.files.len()
                ),
            }
        }
        _ => " Changes ".to_string(),
    };
    let block = pane_block(theme, title, true);
    let inner = block.inner(area);
    block.render(area, buf);
    let Loadable::Ready(model) = &review.diff else {
        diff::render_pending(theme, &review.diff, inner, buf);
        return;
    };
    let width = usize::from(inner.width);
    let notes = file_notes(state, model, width);
    for (row, line) in notes.iter().enumerate() {
        put_line(buf, inner, row, line);
    }
    let inner = Rect {
        y: inner.y + u16::try_from(notes.len()).unwrap_or(u16::MAX),
        height: inner
            .height
            .saturating_sub(u16::try_from(notes.len()).unwrap_or(u16::MAX)),
        ..inner
    };
    let height = usize::from(inner.height);
    let offset = state.review.offset;
    let rows = file_rows(theme, review, model, width, offset..offset + height);
    for (row, line) in rows.iter().enumerate() {
        put_line(buf, inner, row, line);
    }
}

/// The notes above the file list: directories git could not look into, no changes at all,
/// a worktree that is gone.
fn file_notes(state: &Draw, model: &DiffModel, width: usize) -> Vec<Line<'static>> {
    let theme = state.shared.theme;
    let mut notes = Vec::new();
    if !model.unseen.is_empty() {
        let text = format!(
            "could not look into {} (nested too deep for git): changes there are not shown or committed",
            model.unseen.join(", ")
        );
        notes.extend(
            wrap::rows(&text, width)
                .into_iter()
                .map(|r| Line::styled(r.to_string(), theme.warning())),
        );
    }
    let emptied = state
        .review
        .shown
        .as_ref()
        .and_then(|r| r.emptied.as_deref());
    if model.files.is_empty() && model.unseen.is_empty() && model.hidden.is_empty() {
        match emptied {
            // What the review took away, not "no change": the run did change them.
            Some(text) => notes.extend(
                wrap::rows(&sanitize_line(text), width)
                    .into_iter()
                    .map(|r| Line::styled(r.to_string(), theme.dim())),
            ),
            None if state.review.worktree.gone.is_some() => {}
            None => notes.push(Line::styled("the run changed no files", theme.dim())),
        }
    }
    if let Some(gone) = state.review.gone_text(state.shared.setup) {
        notes.extend(
            wrap::rows(&gone, width)
                .into_iter()
                .map(|r| Line::styled(r.to_string(), theme.warning())),
        );
    }
    notes
}

/// The rows of the list that fall in `window`: the files, chosen or not, with a heading
/// before those changed outside the run and the words beneath each gitlink, then the group
/// of changes git does not show; the selected file highlighted. Only the rows in the window
/// are made, so a list of many thousand files costs a count per frame, not a row each.
fn file_rows(
    theme: Theme,
    review: &Review,
    model: &DiffModel,
    width: usize,
    window: std::ops::Range<usize>,
) -> Vec<Line<'static>> {
    let outside_start = review.outside_start();
    let note = diff::gitlink_note(width);
    let mut rows: Vec<Line> = Vec::with_capacity(window.len());
    let mut at = 0usize;
    let mut push = |at: &mut usize, make: &dyn Fn() -> Line<'static>| {
        if window.contains(at) {
            rows.push(make());
        }
        *at += 1;
    };
    for (i, file) in model.files.iter().enumerate() {
        if at >= window.end {
            break;
        }
        if outside_start == Some(i) {
            push(&mut at, &|| {
                Line::styled(
                    wrap::truncate("── outside the run ──", width),
                    theme.warning(),
                )
            });
        }
        push(&mut at, &|| file_row(theme, review, file, i, width));
        if file.gitlink {
            for line in &note {
                push(&mut at, &|| Line::styled(line.clone(), theme.warning()));
            }
        }
    }
    if at < window.end {
        let hidden = super::hidden::rows(theme, model, width);
        for line in hidden {
            push(&mut at, &|| line.clone());
        }
    }
    rows
}

/// The mark of a file that holds the person's changes from before the run too.
pub const YOURS_MARK: &str = " yours too";

/// The row of file `i`: its mark, status letter, path and counts (a gitlink's say `repo`).
fn file_row(
    theme: Theme,
    review: &Review,
    file: &FileDiff,
    i: usize,
    width: usize,
) -> Line<'static> {
    // The group's heading says "outside the run"; the rows keep their room for the path.
    let tail = if file.gitlink {
        vec![Span::styled(" repo", theme.warning())]
    } else {
        let mut tail = diff::file_tail(theme, file.insertions, file.deletions, file.binary, false);
        if file.yours_before {
            tail.push(Span::styled(YOURS_MARK, theme.warning()));
        }
        tail
    };
    let mark = if review.is_chosen(&file.path) {
        "[x]"
    } else {
        "[ ]"
    };
    let head = format!("{mark} {} ", file.status.letter());
    let line = diff::file_row(theme, head, &file.path, tail, width);
    if i == review.file {
        line.patch_style(theme.selected())
    } else {
        line
    }
}

fn render_diff(state: &Draw, review: &Review, area: Rect, buf: &mut Buffer) {
    let theme = state.shared.theme;
    let title = match &review.diff {
        Loadable::Ready(d) => match d.files.get(review.file) {
            Some(f) if f.yours_before => format!(
                " Diff since your last commit (your edits before the run too) · {} ",
                crate::text::sanitize_line(&f.path)
            ),
            Some(f) => format!(
                " Diff since the run started · {} ",
                crate::text::sanitize_line(&f.path)
            ),
            None => " Diff since the run started ".to_string(),
        },
        _ => " Diff since the run started ".to_string(),
    };
    let block = pane_block(
        theme,
        wrap::truncate(&title, usize::from(area.width.saturating_sub(2))),
        false,
    );
    let inner = block.inner(area);
    block.render(area, buf);
    match &review.diff {
        Loadable::Ready(model) => {
            diff::render_file(theme, model, review.file, review.diff_scroll, inner, buf);
        }
        other => diff::render_pending(theme, other, inner, buf),
    }
}

/// The review's keys on its status line, before anything is committed.
const REVIEW_KEYS: &HintSpec = &[
    (&[Action::Toggle], "choose"),
    (&[Action::Commit], "commit"),
    (&[Action::RevertRound], "revert"),
    (&[Action::Discard], "discard"),
    (&[Action::SendBack], "send back"),
    (&[Action::Quit], "quit"),
    (&[Action::Help], "help"),
];
/// After a commit of every file.
const COMMITTED_KEYS: &HintSpec = &[
    (&[Action::Quit], "quit"),
    (&[Action::RunLog], "run log"),
    (&[Action::Help], "help"),
];
/// After a commit that left files out.
const LEFT_OUT_KEYS: &HintSpec = &[
    (&[Action::Discard], "discard them"),
    (&[Action::Quit], "keep them and quit"),
];
/// After a failed commit.
const FAILED_KEYS: &HintSpec = &[(&[Action::Commit], "retry"), (&[Action::Quit], "quit")];
/// Once `X X` removed a worktree run's worktree and branch: only quitting is offered.
pub const REMOVED_KEYS: &HintSpec = &[(&[Action::Quit], "quit"), (&[Action::Help], "help")];

fn render_status(state: &Draw, review: &Review, area: Rect, buf: &mut Buffer) {
    let theme = state.shared.theme;
    let removed = state.review.worktree.gone == Some(WorktreeGone::Removed);
    let (text, style) = if let Some(notice) = state.notice {
        (notice.to_string(), theme.warning())
    } else if removed {
        (
            format!(
                "worktree and branch removed · {}",
                hints::said(&AT_REVIEW, REMOVED_KEYS)
            ),
            theme.warning(),
        )
    } else {
        match &review.commit {
            CommitState::Committing => ("committing…".to_string(), theme.warning()),
            CommitState::Done(id) => match review.listed_left_out() {
                0 => (
                    format!(
                        "committed {id} · {}",
                        hints::said(&AT_REVIEW, COMMITTED_KEYS)
                    ),
                    theme.good(),
                ),
                n => (
                    format!(
                        "committed {id} · {n} left out: {}",
                        hints::said(&AT_REVIEW, LEFT_OUT_KEYS)
                    ),
                    theme.good(),
                ),
            },
            CommitState::Failed(e) => (
                format!(
                    "commit failed: {e} · {}",
                    hints::said(&AT_REVIEW, FAILED_KEYS)
                ),
                theme.error(),
            ),
            CommitState::NotYet if state.shared.replay => (
                format!(
                    "read-only: nothing to commit · {}",
                    hints::fit(
                        &hints::replay_hints(),
                        usize::from(area.width).saturating_sub(32)
                    )
                ),
                theme.key(),
            ),
            CommitState::NotYet => (
                super::worktree::hint(state.shared.setup)
                    .unwrap_or_else(|| hints::said(&AT_REVIEW, REVIEW_KEYS)),
                theme.key(),
            ),
        }
    };
    // A notice wraps onto the rows the layout gave it; the last row cuts what is left.
    let width = usize::from(area.width).saturating_sub(1);
    let mut rows = Vec::new();
    wrap::for_each_row(&text, width, |r| rows.push(r));
    let room = usize::from(area.height.max(1));
    for (i, row) in rows.iter().take(room).enumerate() {
        let row = if i + 1 == room && rows.len() > room {
            wrap::truncate(&text[row.start..], width)
        } else {
            text[row.clone()].to_string()
        };
        put_line(buf, area, i, &Line::styled(format!(" {row}"), style));
    }
}

/// What the review's drawing reads: the screen itself, what it shares with the run
/// screen, and the status line's notice.
struct Draw<'a> {
    review: &'a ReviewScreen,
    shared: &'a Shared<'a>,
    notice: Option<&'a str>,
}

/// Draws the review in the panes placed at the last sync, below the run's header (drawn
/// by the frame).
pub fn render(review: &ReviewScreen, shared: &Shared, notice: Option<&str>, buf: &mut Buffer) {
    let state = &Draw {
        review,
        shared,
        notice,
    };
    let Some(review) = &state.review.shown else {
        return;
    };
    let areas = state.review.areas;
    render_outcome(state, review, areas.outcome, buf);
    render_report(state.shared.theme, review, areas.report, buf);
    render_verification(state, review, areas.verification, buf);
    render_files(state, review, areas.files, buf);
    render_diff(state, review, areas.diff, buf);
    render_status(state, review, areas.status, buf);
}
