//! Tool calls out of a turn while it streams.
//!
//! The engine parses the whole turn once generation ends; this helper is for consumers that
//! want calls as soon as they are complete (to show them live, or to stop generating after a
//! report). It re-parses the text so far whenever a chunk could have closed a call and hands
//! out only the calls the format says are final, so a call is never taken back or changed
//! later: the calls handed out, followed by those `finish` returns, are exactly what `parse`
//! finds in the whole turn, however the text was split.
//!
//! Each re-parse reads the whole turn so far: a stream costs (pushes that carry a closing
//! character) × (turn length), small for token-capped turns but quadratic for huge ones.

use super::{ChatFormat, ParsedCall, ParsedTurn};

/// A call becomes final only when its closing markup (or the opening of the next call, or
/// the end of its line) is complete, and all of those end with one of these characters: a
/// chunk without any of them cannot have made a call final.
const CLOSERS: [char; 4] = ['>', '}', ']', '\n'];

/// Incremental call detection over one streamed turn.
pub struct CallStream<'f> {
    format: &'f dyn ChatFormat,
    text: String,
    handed_out: usize,
}

impl std::fmt::Debug for CallStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallStream")
            .field("format", &self.format.name())
            .field("bytes", &self.text.len())
            .field("handed_out", &self.handed_out)
            .finish()
    }
}

impl<'f> CallStream<'f> {
    pub fn new(format: &'f dyn ChatFormat) -> Self {
        Self {
            format,
            text: String::new(),
            handed_out: 0,
        }
    }

    /// Adds a chunk of generated text; returns the calls that became final with it.
    pub fn push(&mut self, chunk: &str) -> Vec<ParsedCall> {
        self.text.push_str(chunk);
        if !chunk.contains(CLOSERS) {
            return Vec::new();
        }
        let (turn, settled) = self.format.parse_partial(&self.text);
        let settled = settled.min(turn.calls.len());
        if settled <= self.handed_out {
            return Vec::new();
        }
        let new = turn.calls[self.handed_out..settled].to_vec();
        self.handed_out = settled;
        new
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Ends the turn: its full parse, and the calls `push` has not handed out yet.
    pub fn finish(self) -> (ParsedTurn, Vec<ParsedCall>) {
        let turn = self.format.parse(&self.text);
        let rest = turn
            .calls
            .get(self.handed_out..)
            .unwrap_or_default()
            .to_vec();
        (turn, rest)
    }
}
