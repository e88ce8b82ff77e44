//! Notifications: getting the person's attention when the run ends, an approval waits or a
//! round fails, while they are looking elsewhere.
//!
//! A notification is bytes written to the terminal: a bell, and with `notify = "auto"` a
//! desktop notification as the terminal spells it (OSC 777 for the rxvt family, foot and
//! ghostty; OSC 9 elsewhere, which terminals without it ignore). Nothing is written while
//! the terminal is focused; focus comes from the terminal's focus reports, and a terminal
//! that never sends them counts as unfocused, so notifications still arrive there.

use std::io::Write;

use crate::options::NotifyMode;
use crate::protocol::event::{Event, RoundOutcome};

/// How the terminal takes a desktop notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Osc {
    /// `ESC ] 9 ; message BEL` (iTerm2, WezTerm, Windows Terminal, kitty, …).
    Nine,
    /// `ESC ] 777 ; notify ; title ; body BEL` (urxvt, foot, ghostty, …).
    SevenSevenSeven,
}

impl Osc {
    /// The terminal's way, from `TERM` and `TERM_PROGRAM`.
    pub fn from_env() -> Self {
        let term = std::env::var("TERM").unwrap_or_default();
        let program = std::env::var("TERM_PROGRAM").unwrap_or_default();
        let text = format!("{term} {program}").to_ascii_lowercase();
        if ["rxvt", "foot", "ghostty"].iter().any(|t| text.contains(t)) {
            Self::SevenSevenSeven
        } else {
            Self::Nine
        }
    }
}

/// Writes notifications to the terminal while it is not focused.
pub struct Notifier {
    mode: NotifyMode,
    osc: Osc,
    /// `None` until the terminal reports its focus.
    focused: Option<bool>,
    out: Box<dyn Write + Send>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("mode", &self.mode)
            .field("osc", &self.osc)
            .field("focused", &self.focused)
            .finish_non_exhaustive()
    }
}

/// Printable text for inside an escape sequence: control characters as spaces, `;` (a field
/// separator for OSC 777) as `,`, the rest as `text::sanitize_line` leaves it (no bidi
/// override), bounded.
fn clean(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| match c {
            ';' => ',',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    let line = crate::text::sanitize_line(&line);
    crate::text::cut_at_char_boundary(line.trim(), 200).to_string()
}

impl Notifier {
    pub fn new(mode: NotifyMode, osc: Osc, out: Box<dyn Write + Send>) -> Self {
        Self {
            mode,
            osc,
            focused: None,
            out,
        }
    }

    /// One that never writes.
    pub fn off() -> Self {
        Self::new(NotifyMode::Off, Osc::Nine, Box::new(std::io::sink()))
    }

    /// The terminal gained (`true`) or lost focus.
    pub fn focus(&mut self, focused: bool) {
        self.focused = Some(focused);
    }

    /// Notifies for the events that need the person: the run's end, a failed round.
    pub fn observe(&mut self, event: &Event) {
        match event {
            Event::RunFinished { status, .. } => {
                self.notify(&format!("run {}", status.as_str()), status.describe());
            }
            Event::RoundFinished {
                round,
                outcome: RoundOutcome::Failed,
                error,
                ..
            } => {
                let why = error.as_deref().unwrap_or("no valid report");
                self.notify(&format!("round {round} failed"), why);
            }
            _ => {}
        }
    }

    /// Notifies that a command waits for approval.
    pub fn approval(&mut self, command: &str) {
        self.notify("approval needed", command);
    }

    fn notify(&mut self, title: &str, body: &str) {
        if self.mode == NotifyMode::Off || self.focused == Some(true) {
            return;
        }
        let title = clean(&format!("ralph-tui: {title}"));
        let body = clean(body);
        let mut bytes = String::from("\x07");
        if self.mode == NotifyMode::Auto {
            match self.osc {
                Osc::Nine => bytes.push_str(&format!("\x1b]9;{title}: {body}\x07")),
                Osc::SevenSevenSeven => {
                    bytes.push_str(&format!("\x1b]777;notify;{title};{body}\x07"));
                }
            }
        }
        if let Err(e) = self
            .out
            .write_all(bytes.as_bytes())
            .and_then(|()| self.out.flush())
        {
            tracing::warn!("notification not written: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::protocol::event::RunStatus;

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn finished() -> Event {
        Event::RunFinished {
            status: RunStatus::Complete,
            rounds_started: 2,
            report: None,
            last_valid_report: None,
            error: None,
            worker_reported: true,
            verification: None,
        }
    }

    fn failed_round() -> Event {
        Event::RoundFinished {
            round: 3,
            outcome: RoundOutcome::Failed,
            prompt_tokens: 0,
            generated_tokens: 0,
            wall_ms: 0,
            files_changed: 0,
            insertions: 0,
            deletions: 0,
            error: Some("no report; the child\nstopped".into()),
            changes_unknown: false,
        }
    }

    /// What `mode` and `osc` write for a failed round, an approval and the run's end, with
    /// the focus as `focus` sets it (`None`: never reported).
    fn written(mode: NotifyMode, osc: Osc, focus: Option<bool>) -> String {
        let out = Shared::default();
        let mut notifier = Notifier::new(mode, osc, Box::new(out.clone()));
        if let Some(focused) = focus {
            notifier.focus(!focused);
            notifier.focus(focused);
        }
        notifier.observe(&failed_round());
        notifier.observe(&Event::Warning {
            message: "not a notification".into(),
        });
        notifier.approval("cargo test");
        notifier.observe(&finished());
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn unfocused_terminals_get_a_bell_and_a_desktop_notification() {
        insta::assert_snapshot!(
            format!("{:?}", written(NotifyMode::Auto, Osc::Nine, Some(false))),
            @r#""\u{7}\u{1b}]9;ralph-tui: round 3 failed: no report, the child stopped\u{7}\u{7}\u{1b}]9;ralph-tui: approval needed: cargo test\u{7}\u{7}\u{1b}]9;ralph-tui: run complete: the worker reports the objective complete — not independently verified\u{7}""#
        );
        insta::assert_snapshot!(
            format!("{:?}", written(NotifyMode::Auto, Osc::SevenSevenSeven, None)),
            @r#""\u{7}\u{1b}]777;notify;ralph-tui: round 3 failed;no report, the child stopped\u{7}\u{7}\u{1b}]777;notify;ralph-tui: approval needed;cargo test\u{7}\u{7}\u{1b}]777;notify;ralph-tui: run complete;the worker reports the objective complete — not independently verified\u{7}""#
        );
        assert_eq!(
            written(NotifyMode::Bell, Osc::Nine, Some(false)),
            "\x07\x07\x07"
        );
    }

    #[test]
    fn nothing_is_written_while_focused_or_when_off() {
        assert_eq!(written(NotifyMode::Auto, Osc::Nine, Some(true)), "");
        assert_eq!(written(NotifyMode::Bell, Osc::Nine, Some(true)), "");
        assert_eq!(written(NotifyMode::Off, Osc::Nine, Some(false)), "");
        assert_eq!(written(NotifyMode::Off, Osc::Nine, None), "");
    }
}
