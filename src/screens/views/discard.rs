//! The discard question: the files that would go back to how the run found them, listed
//! before the person says yes.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::view::{Ctx, Outcome, View};
use crate::screens::hints;
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{draw_lines, footer_lines, modal};
use crate::screens::kit::layout::popup;
use crate::screens::kit::wrap;
use crate::screens::model::ReviewEffect;

/// One file that would be lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// `A`, `M`, `D`, `R` or `T`.
    pub letter: &'static str,
    pub path: String,
    /// Changed outside the run: someone else's edit, lost too.
    pub outside: bool,
}

/// The discard question over the review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscardQuestion {
    pub files: Vec<Lost>,
    /// More files than the review lists (its diff was shortened for the screen).
    pub more: Option<String>,
}

impl View for DiscardQuestion {
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome {
        match keys::action(&[&keys::DISCARD, &keys::EVERYWHERE], key) {
            Some(Action::Yes) => Outcome::Review(ReviewEffect::Discard),
            Some(Action::No | Action::Back) => Outcome::Close,
            Some(Action::Help) => Outcome::OpenHelp,
            _ => Outcome::Stay,
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let theme = ctx.theme;
        let explain = "These changes are lost: each file goes back to how it was when the run \
                       started (added files are removed). The index, HEAD and branches are not \
                       touched.";
        let width = (area.width * 70 / 100).max(50).min(area.width);
        let text_rows = wrap::rows(explain, usize::from(width.saturating_sub(2))).len();
        let wanted = text_rows + self.files.len() + usize::from(self.more.is_some()) + 4;
        let height = u16::try_from(wanted).unwrap_or(u16::MAX).min(area.height);
        let rect = popup(area, 70, 0, 50, height);
        let inner = modal(
            theme,
            format!(
                " Discard the run's changes? ({}) ",
                crate::text::count(self.files.len(), "file", "files")
            ),
            None,
            rect,
            buf,
        );
        let room = usize::from(inner.width);
        let mut lines: Vec<Line> = wrap::rows(explain, room)
            .into_iter()
            .map(|r| Line::raw(r.to_string()))
            .collect();
        // The question's keys stay on screen however long the list is.
        let list_room = usize::from(inner.height).saturating_sub(lines.len() + 2);
        let shown = if self.files.len() > list_room {
            list_room.saturating_sub(1)
        } else {
            self.files.len()
        };
        for file in self.files.iter().take(shown) {
            let tag = if file.outside {
                " (changed outside the run)"
            } else {
                ""
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{} ", file.letter), theme.bold()),
                Span::raw(wrap::truncate(
                    &format!("{}{tag}", crate::text::sanitize_line(&file.path)),
                    room.saturating_sub(2),
                )),
            ]));
        }
        let hidden = self.files.len() - shown;
        if hidden > 0 || self.more.is_some() {
            let text = match (&self.more, hidden) {
                (Some(more), 0) => more.clone(),
                (Some(more), n) => format!("… and {n} more; {more}"),
                (None, n) => format!("… and {n} more"),
            };
            lines.push(Line::styled(wrap::truncate(&text, room), theme.dim()));
        }
        lines.push(Line::raw(""));
        lines.extend(footer_lines(theme, &hints::footer(&keys::DISCARD), room));
        draw_lines(&lines, inner, buf);
    }
}
