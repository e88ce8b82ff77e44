//! Tool calls as cards: the header line (the tool and its key argument), the result line
//! (status and the first lines of output), the folded rest, and the whole call in a detail
//! view in the style of the report view. The engine's own cards (a round's observation, a
//! run of the check: `observation`) are cards of the same stream and the same view.
//!
//! The words are computed once, when the call or its result arrives; the stream keeps only
//! the lines, and the state keeps the last [`MAX_CARDS`] cards whole for the detail view.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::observation::{CheckCard, Observation};
use super::view::{Ctx, Outcome, View};
use crate::protocol::event::CheckPoint;
use crate::protocol::tool::{
    EDIT_FILE, LIST_DIR, READ_FILE, REPLACE_DEFINITION, RUN_COMMAND, SEARCH, WRITE_FILE,
};
use crate::screens::hints::{self, HintSpec};
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{draw_lines, modal};
use crate::screens::kit::layout::popup;
use crate::screens::kit::scroll;
use crate::screens::kit::theme::Theme;
use crate::screens::kit::wrap;
use crate::text::sanitize_line;

/// Calls kept whole for the detail view; older ones are dropped first.
pub const MAX_CARDS: usize = 500;
/// Bytes of one result kept for the detail view.
pub const MAX_RESULT_BYTES: usize = 64 * 1024;
/// Lines of a card the stream shows unfolded; the detail view has the rest.
pub const MAX_UNFOLDED: usize = 200;
/// The name the engine gives a call it could not parse.
pub const MALFORMED: &str = "(malformed)";

/// One card of the stream: a tool call, or one of the engine's own.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    /// Numbered from 1 in the run, so a stream line can name its card.
    pub id: u32,
    pub round: u32,
    pub body: CardBody,
}

/// What a card holds.
#[derive(Debug, Clone, PartialEq)]
pub enum CardBody {
    Call(Call),
    /// What the round's child was given after the fixed prompt.
    Observed(Observation),
    /// A run of the repository's check.
    Check(CheckCard),
    /// A note from the person, as the round was given it.
    Note(NoteCard),
}

/// The person's note to a round: their words, never the worker's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteCard {
    pub text: String,
    pub written_at: String,
    /// Where it came from, as the event says (`tui`, `file`, `resume`, `review`).
    pub source: &'static str,
}

impl NoteCard {
    /// The card's line in the stream and its folded lines (the note's further lines); the
    /// text is sanitized where it is drawn, never here.
    pub fn lines(&self, round: u32) -> (String, Vec<String>) {
        let mut rows = self.text.lines();
        let first = rows.next().unwrap_or_default();
        let folded: Vec<String> = rows.map(|l| format!("  {l}")).collect();
        let time = self
            .written_at
            .split('T')
            .nth(1)
            .unwrap_or(&self.written_at)
            .trim_end_matches('Z');
        let mut line = format!(
            "✎ your note → round {round} (written {time} UTC, {}): {}",
            self.source,
            wrap::truncate(first, 120)
        );
        if !folded.is_empty() {
            line.push_str(&format!(" (+{})", plural(folded.len(), "line", "lines")));
        }
        (line, folded)
    }

    fn detail_lines(&self, theme: Theme, width: usize) -> Vec<Line<'static>> {
        let about = format!(
            "Written {} ({}); given after the fixed prompt, marked as yours. It is not the \
             worker's report and never evidence.",
            self.written_at, self.source
        );
        let mut out: Vec<Line<'static>> = wrap::rows(&about, width)
            .into_iter()
            .map(|row| Line::styled(row.to_string(), theme.dim()))
            .collect();
        let text = wrap::sanitize(&self.text);
        for row in wrap::rows_multiline(&text, width) {
            out.push(Line::raw(row.to_string()));
        }
        out
    }
}

/// One tool call and, once it came, its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub arguments: Value,
    pub result: Option<CallResult>,
}

impl Card {
    /// The tool call the card is, if it is one.
    pub fn call(&self) -> Option<&Call> {
        match &self.body {
            CardBody::Call(call) => Some(call),
            _ => None,
        }
    }

    /// The card view's title: ` Tool call · round 2 · read_file `.
    pub fn title(&self) -> String {
        let round = self.round;
        match &self.body {
            CardBody::Call(call) => format!(" Tool call · round {round} · {} ", call.name),
            CardBody::Observed(_) => format!(" Observation · round {round} "),
            CardBody::Note(_) => format!(" Your note · round {round} "),
            CardBody::Check(check) => {
                let when = match check.at {
                    CheckPoint::RoundStart => "at the round's start",
                    CheckPoint::Change => "after a change",
                    CheckPoint::Claim if check.refused() => "claim refused",
                    CheckPoint::Claim => "on the claim",
                };
                format!(" Check · round {round} · {when} ")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    pub ok: bool,
    pub output: String,
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The header: `→ write_file test.py · 9 lines, 204 bytes`.
pub fn header(name: &str, args: &Value) -> String {
    let path = str_arg(args, "path");
    let key = match (name, path) {
        (WRITE_FILE, Some(path)) => {
            let content = str_arg(args, "content").unwrap_or("");
            Some(format!(
                "{path} · {}, {}",
                plural(content.lines().count(), "line", "lines"),
                plural(content.len(), "byte", "bytes")
            ))
        }
        (EDIT_FILE, Some(path)) => {
            let count = args.get("count").and_then(Value::as_u64).unwrap_or(1);
            Some(format!(
                "{path} · {}",
                plural(
                    usize::try_from(count).unwrap_or(usize::MAX),
                    "replacement",
                    "replacements"
                )
            ))
        }
        (READ_FILE, Some(path)) => Some(match args.get("offset").and_then(Value::as_u64) {
            Some(offset) => format!("{path} · from line {offset}"),
            None => path.to_string(),
        }),
        (LIST_DIR, Some(path)) => Some(path.to_string()),
        (REPLACE_DEFINITION, _) => str_arg(args, "name").map(|name| {
            let content = str_arg(args, "content").unwrap_or("");
            format!(
                "{name} · {}",
                plural(content.lines().count(), "line", "lines")
            )
        }),
        (RUN_COMMAND, _) => str_arg(args, "command").map(|c| {
            let lines = c.lines().count();
            if lines > 1 {
                format!("{} · {lines} lines", first_line(c))
            } else {
                c.to_string()
            }
        }),
        (SEARCH, _) => str_arg(args, "pattern").map(|pattern| {
            let mut key = pattern.to_string();
            if let Some(path) = path {
                key.push_str(&format!(" in {path}"));
            }
            if let Some(glob) = str_arg(args, "glob") {
                key.push_str(&format!(" ({glob})"));
            }
            key
        }),
        (MALFORMED, _) => Some(match args {
            Value::String(raw) => first_line(raw).to_string(),
            other => other.to_string(),
        }),
        _ => None,
    };
    let key = key.unwrap_or_else(|| args.to_string());
    let shown = if name == MALFORMED {
        "malformed call"
    } else {
        name
    };
    format!("→ {shown} {}", wrap::truncate(&key, 200))
}

/// The lines the header stands for: file contents, the edit, a long command; folded in the
/// stream.
pub fn argument_lines(name: &str, args: &Value) -> Vec<String> {
    let text = |key| str_arg(args, key).unwrap_or("");
    match name {
        WRITE_FILE | REPLACE_DEFINITION => {
            text("content").lines().map(|l| format!("  {l}")).collect()
        }
        EDIT_FILE => {
            let old = text("old").lines().map(|l| format!("  - {l}"));
            let new = text("new").lines().map(|l| format!("  + {l}"));
            old.chain(new).collect()
        }
        RUN_COMMAND if text("command").lines().count() > 1 => {
            text("command").lines().map(|l| format!("  {l}")).collect()
        }
        READ_FILE | LIST_DIR | SEARCH | RUN_COMMAND => Vec::new(),
        _ => pretty(args).lines().map(|l| format!("  {l}")).collect(),
    }
}

fn pretty(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// A result as the stream shows it: its line folded (`← exit 0 · Ran 9 tests in 0.01s · OK`,
/// with `(+N lines)` when more is folded), the same line unfolded (no count: the lines
/// follow), and the folded rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultLines {
    pub folded: String,
    pub unfolded: String,
    pub rest: Vec<String>,
}

/// Summary pieces shown on the result line at most.
const SUMMARY_PIECES: usize = 3;

/// Whether a line of output says nothing on its own: a rule (`-----`, `=====`) or a test
/// runner's progress dots (`..F.`).
fn is_noise(line: &str) -> bool {
    let line = line.trim();
    line.chars().all(|c| "-=~_*#".contains(c))
        || (line.contains('.') && line.chars().all(|c| ".FEsx".contains(c)))
}

/// What a test runner's output says in a few words: unittest's `Ran N tests` and its
/// verdict, pytest's closing counts, and the first failure; `None` when it is not a test
/// runner's.
fn test_summary(lines: &[&str]) -> Option<Vec<String>> {
    let trimmed = |l: &&str| l.trim().trim_matches('=').trim().to_string();
    let mut pieces = Vec::new();
    if let Some(ran) = lines.iter().find(|l| l.trim_start().starts_with("Ran ")) {
        pieces.push(ran.trim().to_string());
        let verdict = lines.iter().rev().find(|l| {
            let l = l.trim();
            l.starts_with("OK") || l.starts_with("FAILED") || l == "NO TESTS RAN"
        });
        pieces.extend(verdict.map(|l| l.trim().to_string()));
    } else if let Some(counts) = lines.iter().rev().find(|l| {
        let l = l.trim();
        l.starts_with('=')
            && [" passed", " failed", " error", "no tests ran"]
                .iter()
                .any(|w| l.contains(w))
    }) {
        pieces.push(trimmed(counts));
    } else {
        return None;
    }
    let failure = lines.iter().find(|l| {
        let l = l.trim_start();
        l.starts_with("FAIL:") || l.starts_with("ERROR:") || l.starts_with("FAILED ")
    });
    pieces.extend(failure.map(|l| l.trim().to_string()));
    Some(pieces)
}

/// The result line of a call's `output` (`ok` when it succeeded), and its folded rest.
pub fn result_lines(ok: bool, output: &str) -> ResultLines {
    const SHOWN: usize = 2;
    let mut lines = output.lines().filter(|l| !l.trim().is_empty()).peekable();
    let status = match lines
        .peek()
        .and_then(|first| first.strip_prefix("exit code "))
    {
        Some(code) => {
            let status = format!("exit {}", code.trim());
            lines.next();
            status
        }
        None if ok => "ok".to_string(),
        None => "failed".to_string(),
    };
    let rest: Vec<&str> = lines.collect();
    let said: Vec<&str> = rest.iter().copied().filter(|l| !is_noise(l)).collect();
    // A test runner's words come from anywhere in its output: the whole output is folded,
    // so that unfolded it reads in order (nothing when the line said all of it). Other
    // output shows its first lines, and folds what follows them.
    let (pieces, folded_from) = match test_summary(&said) {
        Some(pieces) if pieces.len() >= said.len() => (pieces, rest.len()),
        Some(pieces) => (pieces, 0),
        None => {
            let pieces: Vec<String> = said
                .iter()
                .take(SHOWN)
                .map(|l| l.trim().to_string())
                .collect();
            let last = said.get(pieces.len().saturating_sub(1)).copied();
            let after = match last {
                Some(last) if !pieces.is_empty() => rest
                    .iter()
                    .position(|l| std::ptr::eq(*l, last))
                    .map_or(0, |i| i + 1),
                _ => 0,
            };
            (pieces, after)
        }
    };
    let mut line = format!("← {status}");
    for piece in pieces.iter().take(SUMMARY_PIECES) {
        line.push_str(" · ");
        line.push_str(&wrap::truncate(piece, 120));
    }
    let folded: Vec<String> = rest[folded_from..]
        .iter()
        .map(|l| format!("  {l}"))
        .collect();
    let unfolded = line.clone();
    if !folded.is_empty() {
        line.push_str(&format!(" (+{})", plural(folded.len(), "line", "lines")));
    }
    ResultLines {
        folded: line,
        unfolded,
        rest: folded,
    }
}

/// Every line of the detail view of `card`, `width` columns wide.
pub fn detail_lines(theme: Theme, card: &Card, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.saturating_sub(2)).max(1);
    match &card.body {
        CardBody::Call(call) => call_lines(theme, call, width),
        CardBody::Observed(observation) => observation.detail_lines(theme, width),
        CardBody::Check(check) => check.detail_lines(theme, width),
        CardBody::Note(note) => note.detail_lines(theme, width),
    }
}

/// A tool call's detail lines: its header, arguments and result.
fn call_lines(theme: Theme, card: &Call, width: usize) -> Vec<Line<'static>> {
    let mut out = vec![
        Line::styled(
            sanitize_line(&header(&card.name, &card.arguments)),
            theme.tool_call(),
        ),
        Line::raw(""),
        Line::styled("Arguments", theme.bold()),
    ];
    let block = |out: &mut Vec<Line<'static>>, text: &str| {
        super::observation::push_block(out, text, width);
    };
    match &card.arguments {
        Value::Object(map) if !map.is_empty() => {
            for (key, value) in map {
                match value {
                    Value::String(s) if s.contains('\n') => {
                        out.push(Line::styled(
                            format!("  {}:", sanitize_line(key)),
                            theme.dim(),
                        ));
                        block(&mut out, s);
                    }
                    Value::String(s) => out.push(Line::from(vec![
                        Span::styled(format!("  {}: ", sanitize_line(key)), theme.dim()),
                        Span::raw(sanitize_line(s)),
                    ])),
                    other => out.push(Line::from(vec![
                        Span::styled(format!("  {}: ", sanitize_line(key)), theme.dim()),
                        Span::raw(sanitize_line(&other.to_string())),
                    ])),
                }
            }
        }
        other => block(&mut out, &pretty(other)),
    }
    out.push(Line::raw(""));
    match &card.result {
        Some(result) => {
            let (word, style) = if result.ok {
                ("ok", theme.tool_ok())
            } else {
                ("failed", theme.tool_failed())
            };
            out.push(Line::from(vec![
                Span::styled("Result: ", theme.bold()),
                Span::styled(word, style),
            ]));
            block(&mut out, &result.output);
        }
        None => out.push(Line::styled("Result: not yet", theme.dim())),
    }
    out
}

fn area_of(area: Rect) -> Rect {
    popup(area, 80, 80, 50, 12)
}

/// The detail view of one call; it holds its card, so the stream may move on meanwhile.
#[derive(Debug, Clone, PartialEq)]
pub struct CardDetail {
    pub card: Card,
    pub scroll: usize,
}

impl CardDetail {
    pub fn new(card: Card) -> Self {
        Self { card, scroll: 0 }
    }
}

/// The tool call view's keys on its frame.
const CARD_KEYS: &HintSpec = &[
    (&[Action::Up, Action::Down], "scroll"),
    (&[Action::Close], "close"),
];

impl View for CardDetail {
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome {
        match keys::action(&[&keys::VIEWS, &keys::RUN], key) {
            Some(Action::Close | Action::Open) => Outcome::Close,
            Some(other) => {
                if let Some(scroll) = scroll::scrolled(self.scroll, other, ctx.page()) {
                    self.scroll = scroll;
                }
                Outcome::Stay
            }
            None => Outcome::Stay,
        }
    }

    fn sync(&mut self, area: Rect, ctx: &Ctx) {
        let inner = crate::screens::kit::layout::inner(area_of(area));
        let rows = detail_lines(ctx.theme, &self.card, inner.width).len();
        self.scroll = scroll::clamp(self.scroll, rows, inner.height);
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let theme = ctx.theme;
        let title = sanitize_line(&self.card.title());
        let hint = Some(format!(" {} ", hints::said(&[&keys::VIEWS], CARD_KEYS)));
        let inner = modal(theme, title, hint, area_of(area), buf);
        let lines: Vec<Line> = detail_lines(theme, &self.card, inner.width)
            .into_iter()
            .skip(self.scroll)
            .collect();
        draw_lines(&lines, inner, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headers_name_the_key_argument() {
        let content = "a\nb\nc\n";
        assert_eq!(
            header("write_file", &json!({"path": "t.py", "content": content})),
            "→ write_file t.py · 3 lines, 6 bytes"
        );
        assert_eq!(
            header(
                "edit_file",
                &json!({"path": "s.py", "old": "a", "new": "b"})
            ),
            "→ edit_file s.py · 1 replacement"
        );
        assert_eq!(
            header("run_command", &json!({"command": "python3 -m unittest -q"})),
            "→ run_command python3 -m unittest -q"
        );
    }

    #[test]
    fn results_show_status_and_first_lines() {
        let lines = result_lines(true, "exit code 0\nRan 1 test\n\nOK\n");
        assert_eq!(lines.folded, "← exit 0 · Ran 1 test · OK");
        assert!(lines.rest.is_empty());
        let lines = result_lines(false, "no such file\nx\ny\nz");
        assert_eq!(lines.folded, "← failed · no such file · x (+2 lines)");
        assert_eq!(lines.unfolded, "← failed · no such file · x");
        assert_eq!(lines.rest, vec!["  y", "  z"]);
        // Rules and progress dots say nothing: the line skips them.
        let lines = result_lines(true, "exit code 0\n-----\n..\nbuilt\n");
        assert_eq!(lines.folded, "← exit 0 · built");
    }

    #[test]
    fn a_test_runners_output_is_summed_up_in_its_own_words() {
        let passing = "exit code 0\n..\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nOK\n";
        let lines = result_lines(true, passing);
        assert_eq!(lines.folded, "← exit 0 · Ran 2 tests in 0.001s · OK");
        assert!(lines.rest.is_empty(), "{:?}", lines.rest);
        let failing = "exit code 1\n.F\n======================================================================\nFAIL: test_punct (test_slug.T.test_punct)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"test_slug.py\", line 9, in test_punct\nAssertionError: 'a-b' != 'ab'\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n";
        let lines = result_lines(false, failing);
        assert_eq!(
            lines.folded,
            "← exit 1 · Ran 2 tests in 0.001s · FAILED (failures=1) · FAIL: test_punct (test_slug.T.test_punct) (+10 lines)"
        );
        assert!(!lines.unfolded.contains("lines)"), "{}", lines.unfolded);
        let none = "exit code 0\n\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n";
        assert_eq!(
            result_lines(true, none).folded,
            "← exit 0 · Ran 0 tests in 0.000s · OK"
        );
        let pytest = "exit code 1\n..F\nFAILED t.py::test_x - assert 1 == 2\n===== 1 failed, 2 passed in 0.05s =====\n";
        assert_eq!(
            result_lines(false, pytest).folded,
            "← exit 1 · 1 failed, 2 passed in 0.05s · FAILED t.py::test_x - assert 1 == 2"
        );
    }
}
