//! The live stream as a bounded list of display lines, with follow mode and scrolling.
//!
//! Tokens are appended one character at a time, so any split of the same text produces the
//! same lines (the streaming invariant). Control characters are replaced before they can
//! reach the terminal. Memory is bounded: at most [`MAX_LINES`] lines and [`MAX_BYTES`] bytes
//! are kept, older lines are dropped from the top and counted, and a line without a newline
//! is cut every [`MAX_LINE_CHARS`] characters.
//!
//! Model text goes through a [`Splitter`] first: tool-call markup becomes [`LineKind::Raw`]
//! lines and reasoning [`LineKind::Reasoning`] lines under a one-line head. A call being
//! written shows as one [`LineKind::CallPending`] line (its tool once the name is known, its
//! size so far) until the turn ends and the parsed call's card takes its place. A line the current
//! toggles hide (raw output off, cards and reasoning folded) counts zero rows, so a toggle is
//! one recount and the stream keeps every line whichever way it is shown.
//!
//! Row counts for the current width are brought up to date by [`Transcript::sync`], which
//! update calls before each frame; rendering only reads. Scrolling is kept as a distance in
//! rows from the bottom: 0 follows the stream, anything else stays put while text arrives.

use std::collections::VecDeque;

use super::kit::markup::{Out, Part, Splitter};
use super::kit::wrap;

pub const MAX_LINES: usize = 4000;
pub const MAX_BYTES: usize = 1 << 20;
pub const MAX_LINE_CHARS: usize = 2000;

/// What a line shows; each kind is drawn distinctly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// Text the model streamed.
    Text,
    /// A round boundary.
    Round,
    ToolCall,
    ToolOk,
    ToolFailed,
    /// Rejections, warnings, approvals.
    Notice,
    /// The model's tool-call markup: shown only with raw output on.
    Raw,
    /// The one line a reasoning block folds to.
    ReasoningHead,
    /// Reasoning text: shown only unfolded.
    Reasoning,
    /// A card's folded part (file contents, the rest of the output): shown only unfolded.
    Detail,
    /// A call the model is still writing: its tool once the name is known, and its size so
    /// far; replaced by the card when the call is parsed.
    CallPending,
}

/// The head line of a reasoning block (drawn as "▸ thinking" or "▾ thinking").
pub const REASONING_HEAD: &str = "▸ thinking · e unfolds";

#[derive(Debug, Clone)]
struct StreamLine {
    kind: LineKind,
    text: String,
    chars: usize,
    /// Wrapped rows at the width of the last sync (0 before the first, and while hidden).
    rows: usize,
    /// The card the line belongs to (0: none).
    card: u32,
    /// The line's text in the other fold state (a card's result line says what is folded
    /// only while it is): swapped in when the stream folds or unfolds.
    other: Option<String>,
}

/// One visible row, as render draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row<'a> {
    pub kind: LineKind,
    pub text: &'a str,
    /// The row continues a line that began on an earlier row.
    pub continued: bool,
    /// The card the row belongs to (0: none).
    pub card: u32,
}

/// A call being streamed.
#[derive(Debug, Clone)]
struct PendingCall {
    /// Its line, counted from the first line ever kept.
    line: u64,
    /// The start of its markup, enough to find the tool's name.
    head: String,
    /// Bytes of markup so far.
    bytes: usize,
    name: Option<String>,
}

/// Markup bytes kept per pending call to find the name in.
const PENDING_HEAD_BYTES: usize = 512;
/// The pending line's size is redrawn every this many bytes.
const PENDING_STEP_BYTES: usize = 256;

#[derive(Debug, Clone)]
pub struct Transcript {
    lines: VecDeque<StreamLine>,
    /// The last line is model text that has not seen its newline yet.
    open: bool,
    bytes: usize,
    dropped: u64,
    width: usize,
    height: usize,
    /// `lines[dirty_from..]` need their rows recounted.
    dirty_from: usize,
    total_rows: usize,
    /// Rows between the bottom of the view and the bottom of the stream; 0 follows.
    scroll: usize,
    splitter: Splitter,
    /// Calls being written: each one's pending line (counted from the first line ever kept,
    /// dropped ones included) and its markup so far.
    pending_calls: Vec<PendingCall>,
    show_raw: bool,
    unfolded: bool,
}

impl Default for Transcript {
    fn default() -> Self {
        Self {
            lines: VecDeque::new(),
            open: false,
            bytes: 0,
            dropped: 0,
            width: 80,
            height: 10,
            dirty_from: 0,
            total_rows: 0,
            scroll: 0,
            splitter: Splitter::default(),
            pending_calls: Vec::new(),
            show_raw: false,
            unfolded: false,
        }
    }
}

impl Transcript {
    /// Appends streamed model text: free text shows, call markup and reasoning go to lines
    /// of their own kinds.
    pub fn push_text(&mut self, text: &str) {
        // Most pieces cannot begin or end markup: they go straight to the current kind.
        if let Some(part) = self.splitter.settled(text) {
            self.push_run(kind_of(part), text);
            if part == Part::Markup {
                self.pending_grew(text);
            }
            self.evict();
            return;
        }
        let mut splitter = std::mem::take(&mut self.splitter);
        for c in text.chars() {
            splitter.feed(c, &mut |out| self.take(out));
        }
        self.splitter = splitter;
        self.evict();
    }

    /// The turn's text ended: a marker that was never completed is shown as it was, and the
    /// next text starts outside any markup.
    pub fn end_turn(&mut self) {
        let mut splitter = std::mem::take(&mut self.splitter);
        splitter.finish(&mut |out| self.take(out));
        self.splitter = splitter;
        self.drop_pending();
    }

    fn take(&mut self, out: Out) {
        match out {
            Out::Char(part, c) => {
                self.push_char(kind_of(part), c);
                if part == Part::Markup {
                    let mut bytes = [0; 4];
                    self.pending_grew(c.encode_utf8(&mut bytes));
                }
            }
            Out::CallStarts { opening } => {
                // The pending line goes above the marker's raw line, which stays open for
                // the rest of the markup.
                let text = "→ …".to_string();
                let at = if self.open {
                    self.lines.len().saturating_sub(1)
                } else {
                    self.lines.len()
                };
                self.bytes += text.len();
                self.lines.insert(
                    at,
                    StreamLine {
                        kind: LineKind::CallPending,
                        chars: text.chars().count(),
                        text,
                        rows: 0,
                        card: 0,
                        other: None,
                    },
                );
                self.dirty_from = self.dirty_from.min(at);
                let line = self.dropped + at as u64;
                // A call known by its shape (a fenced or bare object) has its opening, the
                // name's key among it, on the raw line already: the name is looked for there
                // too.
                let head = match self.lines.back() {
                    Some(last) if opening > 0 && self.open && last.kind == LineKind::Raw => {
                        crate::text::tail_at_char_boundary(&last.text, opening).to_string()
                    }
                    _ => String::new(),
                };
                self.pending_calls.push(PendingCall {
                    line,
                    bytes: head.len(),
                    head,
                    name: None,
                });
                self.pending_grew("");
            }
            Out::ReasoningStarts => {
                self.open = false;
                self.push_closed(LineKind::ReasoningHead, REASONING_HEAD.to_string(), 0);
            }
        }
    }

    /// Markup arrived: the newest pending call learns its name and size. The size shown is
    /// rounded down to [`PENDING_STEP_BYTES`], so any split of the markup shows the same.
    fn pending_grew(&mut self, markup: &str) {
        let Some(call) = self.pending_calls.last_mut() else {
            return;
        };
        let steps_before = call.bytes / PENDING_STEP_BYTES;
        call.bytes += markup.len();
        let mut changed = call.bytes / PENDING_STEP_BYTES != steps_before;
        if call.name.is_none() && call.head.len() < PENDING_HEAD_BYTES {
            for c in markup.chars() {
                if call.head.len() >= PENDING_HEAD_BYTES {
                    break;
                }
                call.head.push(c);
            }
            call.name = call_name(&call.head);
            changed |= call.name.is_some();
        }
        if !changed {
            return;
        }
        let name = call
            .name
            .as_deref()
            .map_or(String::new(), |n| format!("{n} "));
        let shown = call.bytes / PENDING_STEP_BYTES * PENDING_STEP_BYTES;
        let text = if shown == 0 {
            format!("→ {name}…")
        } else {
            format!("→ {name}… {shown}+ bytes so far")
        };
        let Some(index) = call
            .line
            .checked_sub(self.dropped)
            .and_then(|i| usize::try_from(i).ok())
        else {
            return;
        };
        if let Some(line) = self.lines.get_mut(index) {
            self.bytes = self.bytes.saturating_sub(line.text.len()) + text.len();
            line.chars = text.chars().count();
            line.text = text;
            self.dirty_from = self.dirty_from.min(index);
        }
    }

    /// The pending lines go: the calls are cards now, or were never finished.
    fn drop_pending(&mut self) {
        for call in std::mem::take(&mut self.pending_calls).into_iter().rev() {
            let Some(index) = call
                .line
                .checked_sub(self.dropped)
                .and_then(|i| usize::try_from(i).ok())
            else {
                continue;
            };
            if let Some(line) = self.lines.remove(index) {
                self.bytes = self.bytes.saturating_sub(line.text.len());
                self.total_rows = self.total_rows.saturating_sub(line.rows);
                self.dirty_from = self.dirty_from.min(index);
            }
        }
    }

    fn push_char(&mut self, kind: LineKind, c: char) {
        let mut bytes = [0; 4];
        self.push_run(kind, c.encode_utf8(&mut bytes));
    }

    /// Appends streamed characters of one kind to the open line, or to new ones.
    fn push_run(&mut self, kind: LineKind, text: &str) {
        // A newline ends the open line whatever its kind; the first character of this kind
        // after it may not continue a line of another kind.
        let mut kind_checked = false;
        for c in text.chars() {
            if c == '\n' {
                if self.open {
                    self.open = false;
                } else {
                    self.push_closed(kind, String::new(), 0);
                }
                continue;
            }
            let (c, repeat) = match c {
                '\r' => continue,
                '\t' => (' ', 4),
                c if crate::text::is_unsafe_on_a_terminal(c) => ('\u{fffd}', 1),
                c => (c, 1),
            };
            if !kind_checked {
                kind_checked = true;
                if self.open && self.lines.back().is_some_and(|l| l.kind != kind) {
                    self.open = false;
                }
            }
            if !self.open {
                self.lines.push_back(StreamLine {
                    kind,
                    text: String::new(),
                    chars: 0,
                    rows: 0,
                    card: 0,
                    other: None,
                });
                self.open = true;
            }
            self.dirty_from = self.dirty_from.min(self.lines.len().saturating_sub(1));
            if let Some(line) = self.lines.back_mut() {
                for _ in 0..repeat {
                    line.text.push(c);
                }
                line.chars += repeat;
                self.bytes += c.len_utf8() * repeat;
                if line.chars >= MAX_LINE_CHARS {
                    self.open = false;
                }
            }
        }
    }

    /// Appends a whole line (or several, split on `\n`) of another kind; ends open text.
    pub fn push_line(&mut self, kind: LineKind, text: &str) {
        self.push_card_line(kind, text, 0);
    }

    /// Like [`Self::push_line`], for the lines of card `card`.
    pub fn push_card_line(&mut self, kind: LineKind, text: &str, card: u32) {
        self.end_turn();
        self.open = false;
        for line in wrap::sanitize(text).split('\n') {
            self.push_closed(kind, line.to_string(), card);
        }
        self.evict();
    }

    /// Shows or hides the model's raw call markup.
    pub fn set_raw(&mut self, on: bool) {
        if self.show_raw != on {
            self.show_raw = on;
            self.recount();
        }
    }

    pub fn raw(&self) -> bool {
        self.show_raw
    }

    /// Like [`Self::push_card_line`] for one line that reads `folded` while the stream is
    /// folded and `unfolded` while it is not.
    pub fn push_card_line_folding(
        &mut self,
        kind: LineKind,
        folded: &str,
        unfolded: &str,
        card: u32,
    ) {
        self.push_card_line(kind, folded, card);
        let unfolded = wrap::sanitize(unfolded).replace('\n', " ");
        let unfolded_now = self.unfolded;
        if let Some(line) = self.lines.back_mut() {
            line.other = Some(unfolded);
            if unfolded_now {
                swap_text(line, &mut self.bytes);
            }
        }
    }

    /// Unfolds (or folds) every card and reasoning block.
    pub fn set_unfolded(&mut self, on: bool) {
        if self.unfolded != on {
            self.unfolded = on;
            for line in &mut self.lines {
                swap_text(line, &mut self.bytes);
            }
            self.recount();
        }
    }

    pub fn unfolded(&self) -> bool {
        self.unfolded
    }

    /// Every row count is redone at the next sync.
    fn recount(&mut self) {
        self.width = 0;
    }

    fn shown(&self, kind: LineKind) -> bool {
        match kind {
            LineKind::Raw => self.show_raw,
            LineKind::Reasoning | LineKind::Detail => self.unfolded,
            _ => true,
        }
    }

    fn rows_of(&self, line: &StreamLine, width: usize) -> usize {
        if self.shown(line.kind) {
            wrap::row_count(&line.text, width)
        } else {
            0
        }
    }

    fn push_closed(&mut self, kind: LineKind, text: String, card: u32) {
        self.bytes += text.len();
        self.lines.push_back(StreamLine {
            kind,
            chars: text.chars().count(),
            text,
            rows: 0,
            card,
            other: None,
        });
    }

    fn evict(&mut self) {
        while self.lines.len() > MAX_LINES || (self.bytes > MAX_BYTES && self.lines.len() > 1) {
            let Some(line) = self.lines.pop_front() else {
                break;
            };
            self.bytes = self.bytes.saturating_sub(line.text.len());
            self.total_rows = self.total_rows.saturating_sub(line.rows);
            self.dirty_from = self.dirty_from.saturating_sub(1);
            self.dropped += 1;
        }
        if self.lines.is_empty() {
            self.open = false;
        }
    }

    /// Brings row counts up to date for a viewport of `width`×`height`; keeps a scrolled view
    /// where it is while text arrives below it.
    pub fn sync(&mut self, width: usize, height: usize) {
        let width = width.max(1);
        self.height = height;
        if width != self.width {
            self.width = width;
            self.total_rows = 0;
            for i in 0..self.lines.len() {
                let rows = self.rows_of(&self.lines[i], width);
                self.lines[i].rows = rows;
                self.total_rows += rows;
            }
            self.dirty_from = self.lines.len();
        } else {
            let before = self.total_rows;
            for i in self.dirty_from..self.lines.len() {
                let rows = self.rows_of(&self.lines[i], width);
                let line = &mut self.lines[i];
                self.total_rows = self.total_rows.saturating_sub(line.rows) + rows;
                line.rows = rows;
            }
            self.dirty_from = self.lines.len();
            if self.scroll > 0 {
                self.scroll += self.total_rows.saturating_sub(before);
            }
        }
        self.scroll = self.scroll.min(self.max_scroll());
    }

    fn max_scroll(&self) -> usize {
        self.total_rows.saturating_sub(self.height)
    }

    pub fn scroll_up(&mut self, rows: usize) {
        self.scroll = (self.scroll + rows).min(self.max_scroll());
    }

    pub fn scroll_down(&mut self, rows: usize) {
        self.scroll = self.scroll.saturating_sub(rows);
    }

    pub fn scroll_to_top(&mut self) {
        self.scroll = self.max_scroll();
    }

    /// Back to the bottom: new text shows as it arrives.
    pub fn follow(&mut self) {
        self.scroll = 0;
    }

    pub fn following(&self) -> bool {
        self.scroll == 0
    }

    /// Rows below the view (0 when following).
    pub fn rows_below(&self) -> usize {
        self.scroll
    }

    pub fn page(&self) -> usize {
        self.height.saturating_sub(1).max(1)
    }

    /// Lines dropped from the top to keep memory bounded.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Bytes of text held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Every kept line, oldest first (for tests and the run log view).
    pub fn lines(&self) -> impl Iterator<Item = (LineKind, &str)> {
        self.lines.iter().map(|l| (l.kind, l.text.as_str()))
    }

    /// The rows inside the view, top to bottom, at the width of the last sync.
    pub fn visible(&self) -> Vec<Row<'_>> {
        let bottom = self.total_rows.saturating_sub(self.scroll);
        let top = bottom.saturating_sub(self.height);
        // Walk back from the end to the first line that reaches into the view.
        let mut end_row = self.total_rows;
        let mut first = self.lines.len();
        for (i, line) in self.lines.iter().enumerate().rev() {
            if end_row <= top {
                break;
            }
            end_row = end_row.saturating_sub(line.rows);
            first = i;
        }
        let mut out = Vec::with_capacity(self.height);
        let mut row_index = end_row;
        for line in self.lines.iter().skip(first) {
            if row_index >= bottom {
                break;
            }
            if line.rows == 0 {
                continue;
            }
            for (n, range) in line_rows(&line.text, self.width).into_iter().enumerate() {
                if row_index >= top && row_index < bottom {
                    out.push(Row {
                        kind: line.kind,
                        text: &line.text[range],
                        continued: n > 0,
                        card: line.card,
                    });
                }
                row_index += 1;
            }
        }
        out
    }
}

/// The tool's name in the start of a call's markup, in the forms the chat families write it:
/// `"name": "…"` (JSON), `<function=…>`, `name="…"`.
fn call_name(head: &str) -> Option<String> {
    let after = |key: &str| head.find(key).map(|at| &head[at + key.len()..]);
    let quoted = |rest: &str| {
        let rest = rest.trim_start();
        let rest = rest.strip_prefix('"')?;
        let end = rest.find('"')?;
        Some(rest[..end].to_string())
    };
    if let Some(rest) = after("\"name\"") {
        let rest = rest.trim_start().strip_prefix(':')?;
        return quoted(rest).filter(|n| !n.is_empty());
    }
    if let Some(rest) = after("<function=") {
        let end = rest.find('>')?;
        return Some(rest[..end].to_string()).filter(|n| !n.is_empty());
    }
    if let Some(rest) = after("name=") {
        return quoted(rest).filter(|n| !n.is_empty());
    }
    None
}

/// A line that reads differently folded and unfolded changes to its other text.
fn swap_text(line: &mut StreamLine, bytes: &mut usize) {
    if let Some(other) = line.other.as_mut() {
        *bytes = bytes.saturating_sub(line.text.len()) + other.len();
        std::mem::swap(&mut line.text, other);
        line.chars = line.text.chars().count();
    }
}

fn kind_of(part: Part) -> LineKind {
    match part {
        Part::Text => LineKind::Text,
        Part::Markup => LineKind::Raw,
        Part::Reasoning => LineKind::Reasoning,
    }
}

fn line_rows(text: &str, width: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    wrap::for_each_row(text, width, |r| out.push(r));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_rows(t: &Transcript) -> Vec<String> {
        t.visible().iter().map(|r| r.text.to_string()).collect()
    }

    #[test]
    fn splits_do_not_matter() {
        let text = "one two\nthree\n\nfour five six seven";
        let mut whole = Transcript::default();
        whole.push_text(text);
        let mut pieces = Transcript::default();
        for c in text.chars() {
            pieces.push_text(&c.to_string());
        }
        whole.sync(7, 100);
        pieces.sync(7, 100);
        assert_eq!(all_rows(&whole), all_rows(&pieces));
        assert_eq!(whole.len(), 4);
    }

    #[test]
    fn follow_shows_the_bottom_and_scrolling_stays_put() {
        let mut t = Transcript::default();
        for i in 0..50 {
            t.push_line(LineKind::Text, &format!("line {i}"));
        }
        t.sync(20, 5);
        assert_eq!(all_rows(&t).last().map(String::as_str), Some("line 49"));
        t.scroll_up(10);
        let before = all_rows(&t);
        t.push_line(LineKind::Text, "line 50");
        t.sync(20, 5);
        assert_eq!(all_rows(&t), before, "a scrolled view does not move");
        t.follow();
        t.sync(20, 5);
        assert_eq!(all_rows(&t).last().map(String::as_str), Some("line 50"));
    }

    #[test]
    fn a_call_shows_while_it_is_written_and_goes_when_the_turn_ends() {
        let mut t = Transcript::default();
        t.push_text(
            "Writing.\n<tool_call>{\"name\": \"write_file\", \"arguments\": {\"content\": \"",
        );
        t.push_text(&"x".repeat(600));
        t.sync(80, 20);
        let rows = all_rows(&t);
        assert_eq!(rows, vec!["Writing.", "→ write_file … 512+ bytes so far"]);
        t.push_text("\"}}</tool_call>");
        t.end_turn();
        t.sync(80, 20);
        assert_eq!(all_rows(&t), vec!["Writing."]);
        assert_eq!(
            call_name("<function=edit_file>\n<parameter=path>"),
            Some("edit_file".into())
        );
        assert_eq!(
            call_name("<｜DSML｜invoke name=\"search\">"),
            Some("search".into())
        );
        assert_eq!(call_name("{\"name\": \"rea"), None);
    }

    #[test]
    fn memory_is_bounded() {
        let mut t = Transcript::default();
        for _ in 0..(MAX_LINES * 3) {
            t.push_text("0123456789 0123456789\n");
        }
        assert!(t.len() <= MAX_LINES);
        assert!(t.dropped() > 0);
        let mut long = Transcript::default();
        long.push_text(&"x".repeat(MAX_BYTES * 2));
        assert!(long.bytes() <= MAX_BYTES);
    }
}
