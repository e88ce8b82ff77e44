//! Colours and emphasis, in one place so `NO_COLOR` is honoured everywhere.
//!
//! With colour off every distinction still shows through text (`+`/`−` prefixes, arrows,
//! labels) and modifiers (bold, dim, reversed), never through colour alone.

use ratatui::style::{Color, Modifier, Style};

use crate::protocol::event::RunStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Self { color: true }
    }
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to a non-empty value (<https://no-color.org>).
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { color: !no_color }
    }

    pub fn plain() -> Self {
        Self { color: false }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    pub fn text(self) -> Style {
        Style::new()
    }

    pub fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    pub fn bold(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn title(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn border(self) -> Style {
        self.fg(Color::DarkGray)
    }

    pub fn border_focused(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// The selected row of a list.
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn key(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    pub fn added(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn removed(self) -> Style {
        self.fg(Color::Red)
    }

    pub fn hunk(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn file_header(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }

    pub fn round_marker(self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::BOLD)
    }

    pub fn tool_call(self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }

    pub fn tool_ok(self) -> Style {
        if self.color {
            Style::new().fg(Color::Green)
        } else {
            self.dim()
        }
    }

    pub fn tool_failed(self) -> Style {
        if self.color {
            Style::new().fg(Color::Red)
        } else {
            Style::new().add_modifier(Modifier::ITALIC)
        }
    }

    pub fn warning(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    pub fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn good(self) -> Style {
        self.fg(Color::Green).add_modifier(Modifier::BOLD)
    }

    pub fn gauge_filled(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn gauge_empty(self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// How a run's final status is shown: never green, since nothing here is certified.
    pub fn status(self, status: RunStatus) -> Style {
        match status {
            RunStatus::Complete => self.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            RunStatus::Blocked | RunStatus::BudgetLimited | RunStatus::Stalled => self.warning(),
            RunStatus::Cancelled => self.bold(),
            RunStatus::RoundFailed => self.error(),
        }
    }
}
