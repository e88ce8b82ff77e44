//! The engine's own cards in a round's stream: the round's observation (what the child was
//! given after the fixed prompt: the repository's files, the check's result, the texts of
//! the files that matter most) and each run of the check (at the round's start, or on a
//! `complete` claim, where a failing check refuses the claim).
//!
//! Each is a card like a tool call's: one line in the stream that says what it holds, its
//! text folded below (`e` unfolds it), and the whole of it in the card view (Enter). The
//! words are made here once, when the event arrives; every worker's or repository's string
//! is sanitized on its way to a line.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::protocol::event::{CheckPoint, CheckRun, CheckVerdict, ObservedFile, Shown};
use crate::screens::kit::theme::Theme;
use crate::screens::kit::wrap;
use crate::screens::transcript::LineKind;
use crate::text::{sanitize, sanitize_line};

/// Bytes of an observation's text kept for the card view; the run log keeps it whole.
pub const MAX_OBSERVED_BYTES: usize = 256 * 1024;

/// What a round's child was given after the fixed prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub files_listed: u64,
    pub files_unlisted: u64,
    pub shown: Vec<ObservedFile>,
    pub check: Option<CheckVerdict>,
    /// The text given, cut at [`MAX_OBSERVED_BYTES`].
    pub text: String,
    /// Bytes of the text not kept.
    pub cut: usize,
}

/// One run of the repository's check, and when it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckCard {
    pub at: CheckPoint,
    pub run: CheckRun,
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text`'s lines, each indented as a card's folded part.
fn indented(text: &str) -> Vec<String> {
    let text = text.trim_end_matches('\n');
    if text.is_empty() {
        return Vec::new();
    }
    text.split('\n').map(|l| format!("  {l}")).collect()
}

/// `(+N lines)` after a card's line when `folded` holds N lines.
fn more(folded: &[String]) -> String {
    if folded.is_empty() {
        String::new()
    } else {
        format!(" (+{})", plural(folded.len() as u64, "line", "lines"))
    }
}

impl Observation {
    /// The observation of a `round_observed` event, its text kept within
    /// [`MAX_OBSERVED_BYTES`].
    pub fn new(
        files_listed: u64,
        files_unlisted: u64,
        shown: Vec<ObservedFile>,
        check: Option<CheckVerdict>,
        text: &str,
    ) -> Self {
        let kept = crate::text::cut_at_char_boundary(text, MAX_OBSERVED_BYTES);
        Self {
            files_listed,
            files_unlisted,
            shown,
            check,
            cut: text.len() - kept.len(),
            text: kept.to_string(),
        }
    }

    /// What it holds, in a few words: `12 files listed, 4 shown (3 whole, 1 head) · check
    /// failed`.
    pub fn summary(&self) -> String {
        let mut out = plural(self.files_listed, "file listed", "files listed");
        if self.files_unlisted > 0 {
            out.push_str(&format!(" ({} more not listed)", self.files_unlisted));
        }
        let count = |shown: Shown| self.shown.iter().filter(|f| f.shown == shown).count();
        let parts: Vec<String> = [(count(Shown::Whole), "whole"), (count(Shown::Head), "head")]
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, word)| format!("{n} {word}"))
            .collect();
        if parts.is_empty() {
            out.push_str(", no file shown");
        } else {
            out.push_str(&format!(
                ", {} shown ({})",
                self.shown.len(),
                parts.join(", ")
            ));
        }
        if let Some(verdict) = self.check {
            out.push_str(&format!(" · check {}", verdict.as_str()));
        }
        out
    }

    /// The card's line in the stream and its folded part: the text as given.
    pub fn lines(&self) -> (String, Vec<String>) {
        let mut folded = indented(&self.text);
        if self.cut > 0 {
            folded.push(self.cut_note());
        }
        let line = format!("◇ observed: {}{}", self.summary(), more(&folded));
        (line, folded)
    }

    fn cut_note(&self) -> String {
        format!(
            "  … {} more byte(s) given, not kept here: the run log's events have them",
            self.cut
        )
    }

    /// Every line of the card view, `width` columns wide.
    pub fn detail_lines(&self, theme: Theme, width: usize) -> Vec<Line<'static>> {
        let headline = format!("◇ observed: {}", self.summary());
        let mut out = wrapped(&headline, theme.tool_call(), width);
        out.push(Line::raw(""));
        out.push(Line::styled("Files shown", theme.bold()));
        if self.shown.is_empty() {
            out.push(Line::styled("  none", theme.dim()));
        }
        for file in &self.shown {
            let how = match file.shown {
                Shown::Whole => "whole",
                Shown::Head => "its head",
            };
            let what = format!(
                "{}, {} · {how}",
                plural(file.lines, "line", "lines"),
                plural(file.bytes, "byte", "bytes")
            );
            out.extend(field(theme, &sanitize_line(&file.path), &what, width));
        }
        out.push(Line::raw(""));
        out.push(Line::styled(
            "Given to the child after the fixed prompt",
            theme.bold(),
        ));
        push_block(&mut out, self.text.trim_end_matches('\n'), width);
        if self.cut > 0 {
            out.push(Line::styled(self.cut_note(), theme.dim()));
        }
        out
    }
}

impl CheckCard {
    /// A claim the check refused: the report is rejected.
    pub fn refused(&self) -> bool {
        self.at == CheckPoint::Claim && !self.run.verdict.is_pass()
    }

    /// The card's first line, without the folded count.
    pub fn headline(&self) -> String {
        let mark = if self.run.verdict.is_pass() {
            "✓"
        } else {
            "✗"
        };
        let said = crate::headless::check_said(self.at, &self.run);
        format!("{mark} {}", wrap::truncate(&said, 300))
    }

    /// How its line is drawn: a pass as a tool's success, anything else as a failure.
    pub fn kind(&self) -> LineKind {
        if self.run.verdict.is_pass() {
            LineKind::ToolOk
        } else {
            LineKind::ToolFailed
        }
    }

    /// The card's line in the stream and its folded part: the check's output.
    pub fn lines(&self) -> (String, Vec<String>) {
        let folded = indented(&self.run.output);
        (format!("{}{}", self.headline(), more(&folded)), folded)
    }

    /// Every line of the card view, `width` columns wide.
    pub fn detail_lines(&self, theme: Theme, width: usize) -> Vec<Line<'static>> {
        let run = &self.run;
        let style = if run.verdict.is_pass() {
            theme.tool_ok()
        } else {
            theme.tool_failed()
        };
        let when = match self.at {
            CheckPoint::RoundStart => "at the round's start; its result is in the observation",
            CheckPoint::Claim => "on the worker's `complete` claim; a failing check refuses it",
            CheckPoint::Change => {
                "after the worker's call changed files; its result was added to the call's"
            }
        };
        let exit = run
            .exit_code
            .map_or_else(|| "none".to_string(), |code| code.to_string());
        let mut out = wrapped(&self.headline(), style, width);
        out.push(Line::raw(""));
        out.extend(field(theme, "command", &sanitize_line(&run.command), width));
        out.push(Line::from(vec![
            Span::styled("  verdict: ", theme.dim()),
            Span::styled(run.verdict.as_str(), style),
        ]));
        out.extend(field(theme, "exit code", &exit, width));
        let took = format!("{:.1} s", run.wall_ms as f64 / 1000.0);
        out.extend(field(theme, "took", &took, width));
        out.extend(field(theme, "when", when, width));
        if !run.note.is_empty() {
            out.extend(field(theme, "note", &sanitize_line(&run.note), width));
        }
        out.push(Line::raw(""));
        if run.output.trim().is_empty() {
            out.push(Line::styled("Output: none", theme.dim()));
        } else {
            out.push(Line::styled("Output", theme.bold()));
            push_block(&mut out, run.output.trim_end_matches('\n'), width);
        }
        out
    }
}

/// One line of clean text wrapped to `width`, every row in `style`.
fn wrapped(text: &str, style: Style, width: usize) -> Vec<Line<'static>> {
    wrap::rows(text, width)
        .into_iter()
        .map(|row| Line::styled(row.to_string(), style))
        .collect()
}

/// `  key: value` wrapped to `width`, the key dim (both already clean).
fn field(theme: Theme, key: &str, value: &str, width: usize) -> Vec<Line<'static>> {
    let key = format!("  {key}: ");
    let text = format!("{key}{value}");
    wrap::rows(&text, width)
        .into_iter()
        .enumerate()
        .map(|(i, row)| match row.strip_prefix(key.as_str()) {
            Some(rest) if i == 0 => Line::from(vec![
                Span::styled(key.clone(), theme.dim()),
                Span::raw(rest.to_string()),
            ]),
            _ => Line::raw(row.to_string()),
        })
        .collect()
}

/// `text`, sanitized, wrapped to `width` and indented, one line per row.
pub fn push_block(out: &mut Vec<Line<'static>>, text: &str, width: usize) {
    let clean = sanitize(text);
    for row in wrap::rows_multiline(&clean, width) {
        out.push(Line::raw(format!("  {row}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, shown: Shown) -> ObservedFile {
        ObservedFile {
            path: path.into(),
            bytes: 120,
            lines: 5,
            shown,
        }
    }

    fn check(at: CheckPoint, verdict: CheckVerdict, exit_code: Option<i32>) -> CheckCard {
        CheckCard {
            at,
            run: CheckRun {
                command: "pytest -q".into(),
                exit_code,
                verdict,
                note: String::new(),
                wall_ms: 3_240,
                output: "F\nFAILED test_slug.py::test_words\n".into(),
            },
        }
    }

    #[test]
    fn the_observation_line_counts_what_was_given() {
        let shown = vec![
            file("a.py", Shown::Whole),
            file("b.py", Shown::Whole),
            file("c.py", Shown::Whole),
            file("d.py", Shown::Head),
        ];
        let seen = Observation::new(12, 0, shown, Some(CheckVerdict::Failed), "one\ntwo\n");
        let (line, folded) = seen.lines();
        assert_eq!(
            line,
            "◇ observed: 12 files listed, 4 shown (3 whole, 1 head) · check failed (+2 lines)"
        );
        assert_eq!(folded, vec!["  one", "  two"]);
        let bare = Observation::new(1, 3, Vec::new(), None, "");
        assert_eq!(
            bare.lines().0,
            "◇ observed: 1 file listed (3 more not listed), no file shown"
        );
    }

    #[test]
    fn a_long_observation_is_kept_within_its_bound() {
        let text = "x".repeat(MAX_OBSERVED_BYTES + 10);
        let seen = Observation::new(1, 0, Vec::new(), None, &text);
        assert_eq!(seen.cut, 10);
        assert!(seen.lines().1.last().is_some_and(|l| l.contains("10 more")));
    }

    #[test]
    fn a_check_says_its_command_verdict_exit_and_time() {
        let start = check(CheckPoint::RoundStart, CheckVerdict::Failed, Some(1));
        assert_eq!(
            start.lines().0,
            "✗ check `pytest -q` failed (exit 1, 3.2 s) (+2 lines)"
        );
        let refused = check(CheckPoint::Claim, CheckVerdict::TimedOut, None);
        assert!(refused.refused());
        assert_eq!(
            refused.headline(),
            "✗ claim refused by the check: `pytest -q` timed out (no exit code, 3.2 s)"
        );
        let passed = check(CheckPoint::Claim, CheckVerdict::Passed, Some(0));
        assert!(!passed.refused());
        assert_eq!(passed.kind(), LineKind::ToolOk);
        assert_eq!(
            passed.headline(),
            "✓ claim checked: `pytest -q` passed (exit 0, 3.2 s)"
        );
    }

    #[test]
    fn worker_text_is_sanitized_on_the_way_to_a_line() {
        let mut card = check(CheckPoint::RoundStart, CheckVerdict::NoTests, Some(0));
        card.run.command = "ev\x1b[2Jil".into();
        card.run.note = "ran 0\x07 tests".into();
        card.run.output = "\x1b]0;title\x07out".into();
        let (line, _) = card.lines();
        assert!(!line.contains('\x1b') && !line.contains('\x07'), "{line:?}");
        let detail = card.detail_lines(Theme::plain(), 80);
        for row in &detail {
            let text: String = row.spans.iter().map(|s| s.content.as_ref()).collect();
            assert!(!text.chars().any(char::is_control), "{text:?}");
        }
    }
}
