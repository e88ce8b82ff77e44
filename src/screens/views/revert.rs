//! The revert question: which round to undo, then what came of it (the files it changed, or
//! the hunks that no longer apply, in which case nothing was changed).

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::view::{Ctx, Outcome, View};
use crate::screens::hints;
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{draw_lines, footer_lines, modal};
use crate::screens::kit::layout::popup;
use crate::screens::kit::wrap;
use crate::screens::model::ReviewEffect;

/// Where the question is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertStep {
    Choosing,
    /// The revert of this round was asked for; its result has not come yet.
    Reverting(u32),
    /// The paths the revert changed, or why nothing was changed.
    Done(u32, Result<Vec<String>, String>),
}

/// The revert question over the review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertQuestion {
    /// The rounds that changed files, with those files.
    pub rounds: Vec<(u32, Vec<String>)>,
    pub sel: usize,
    pub step: RevertStep,
}

impl RevertQuestion {
    /// A question over `rounds`, the last one selected (the one most often undone).
    pub fn new(rounds: Vec<(u32, Vec<String>)>) -> Self {
        let sel = rounds.len().saturating_sub(1);
        Self {
            rounds,
            sel,
            step: RevertStep::Choosing,
        }
    }

    /// The result of reverting `round` arrived.
    pub fn finished(&mut self, round: u32, result: Result<Vec<String>, String>) {
        if self.step == RevertStep::Reverting(round) {
            self.step = RevertStep::Done(round, result);
        }
    }

    /// The question's lines at `width`, with at most `room` rounds listed (a window that
    /// keeps the selected one in view).
    fn lines(&self, ctx: &Ctx, width: usize, room: usize) -> Vec<Line<'static>> {
        let theme = ctx.theme;
        let mut lines = Vec::new();
        let mut text = |text: &str, style| {
            for row in wrap::rows_multiline(text, width) {
                lines.push(Line::styled(row.to_string(), style));
            }
        };
        match &self.step {
            RevertStep::Choosing => {
                text(
                    "The round's patch is applied in reverse if it still applies cleanly; the \
                     changes of the other rounds stay.",
                    theme.dim(),
                );
                lines.push(Line::raw(""));
                let room = room.max(1);
                let first = (self.sel + 1).saturating_sub(room);
                for (i, (round, files)) in self.rounds.iter().enumerate().skip(first).take(room) {
                    let mark = if i == self.sel { "›" } else { " " };
                    let text = format!("{mark} round {round}: {}", files.join(", "));
                    let row = wrap::truncate(&text, width);
                    let mut line = Line::raw(row);
                    if i == self.sel {
                        line = line.patch_style(theme.selected());
                    }
                    lines.push(line);
                }
                lines.push(Line::raw(""));
                lines.extend(footer_lines(theme, &hints::footer(&keys::REVERT), width));
            }
            RevertStep::Reverting(round) => {
                text(&format!("reverting round {round}…"), theme.warning())
            }
            RevertStep::Done(round, Ok(paths)) => {
                text(
                    &format!(
                        "Round {round} reverted; the other rounds' changes stay. Changed: {}",
                        paths.join(", ")
                    ),
                    theme.good(),
                );
                lines.push(Line::raw(""));
                lines.push(Line::styled("Esc close", theme.key()));
            }
            RevertStep::Done(_, Err(why)) => {
                text(why, theme.error());
                lines.push(Line::raw(""));
                lines.push(Line::styled("Esc close", theme.key()));
            }
        }
        lines
    }
}

impl View for RevertQuestion {
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome {
        let action = keys::action(&[&keys::REVERT, &keys::EVERYWHERE], key);
        match (&self.step, action) {
            (_, Some(Action::Help)) => Outcome::OpenHelp,
            (RevertStep::Choosing, Some(Action::Up)) => {
                self.sel = self.sel.saturating_sub(1);
                Outcome::Stay
            }
            (RevertStep::Choosing, Some(Action::Down)) => {
                self.sel = (self.sel + 1).min(self.rounds.len().saturating_sub(1));
                Outcome::Stay
            }
            (RevertStep::Choosing, Some(Action::Yes)) => match self.rounds.get(self.sel) {
                Some((round, _)) => {
                    self.step = RevertStep::Reverting(*round);
                    Outcome::Review(ReviewEffect::RevertRound(*round))
                }
                None => Outcome::Close,
            },
            (RevertStep::Reverting(_), _) => Outcome::Stay,
            (RevertStep::Done(..), Some(_))
            | (RevertStep::Choosing, Some(Action::No | Action::Back)) => Outcome::Close,
            _ => Outcome::Stay,
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let width = (area.width * 70 / 100).max(50).min(area.width);
        // Rows for the rounds: the screen less the frame, the explanation and the keys.
        let room = usize::from(area.height).saturating_sub(10);
        let lines = self.lines(ctx, usize::from(width.saturating_sub(2)), room);
        let height = u16::try_from(lines.len())
            .unwrap_or(u16::MAX)
            .saturating_add(2);
        let rect = popup(area, 70, 0, 50, height.min(area.height));
        let inner = modal(ctx.theme, " Revert a round ".to_string(), None, rect, buf);
        draw_lines(&self.lines(ctx, usize::from(inner.width), room), inner, buf);
    }
}
