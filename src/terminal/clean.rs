//! The last line of defence between the screen and the terminal: a backend that sanitizes
//! every cell it is asked to draw.
//!
//! Widgets sanitize what they show (`text::sanitize`), but the screen holds strings from the
//! worker and the repository in many places (file names, reports, command output, warnings),
//! and ratatui copies a span's characters into cells as they are. One missed call would let a
//! file name set the terminal's title or write its clipboard. So every cell goes through
//! [`crate::text::sanitize`] on its way out: a cell holding a control character, a
//! bidirectional override or a line separator is drawn as U+FFFD instead.

use std::io;

use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};

/// A backend that draws through `B`, cleaning every cell first.
#[derive(Debug)]
pub struct CleanBackend<B> {
    inner: B,
}

impl<B> CleanBackend<B> {
    pub fn new(inner: B) -> Self {
        Self { inner }
    }

    /// The backend drawn through (a test reads its buffer).
    pub fn inner(&self) -> &B {
        &self.inner
    }
}

/// The cell as it may reach the terminal: its symbol sanitized, unchanged when already clean.
/// Runs for every drawn cell, so a clean one (nearly all) costs a scan and no allocation.
fn clean(cell: &Cell) -> Option<Cell> {
    let symbol = cell.symbol();
    if !symbol.chars().any(crate::text::is_unsafe_on_a_terminal) {
        return None;
    }
    let cleaned = crate::text::sanitize_line(symbol);
    let mut out = cell.clone();
    out.set_symbol(if cleaned.chars().all(|c| c == ' ') {
        " "
    } else {
        "\u{fffd}"
    });
    Some(out)
}

impl<B: Backend> Backend for CleanBackend<B> {
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let cells: Vec<(u16, u16, Option<Cell>, &'a Cell)> = content
            .map(|(x, y, cell)| (x, y, clean(cell), cell))
            .collect();
        self.inner.draw(
            cells
                .iter()
                .map(|(x, y, cleaned, cell)| (*x, *y, cleaned.as_ref().unwrap_or(cell))),
        )
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
