//! The skeleton every family shares, so that a family file holds only its syntax.
//!
//! A family implements [`Family`]: where its call markup starts, how it reads calls out of a
//! turn's answer, how it writes one call, what its instructions say and the root of its
//! grammar. The skeleton turns that into a [`ChatFormat`]: reasoning is set aside before
//! calls are read, the turn is collected by one [`TurnBuilder`], most families' instructions
//! share one layout ([`Teaching`]), and a grammar is built only when tools are offered.
//! [`scan_blocks`] is the loop of the families whose calls sit between an opening and a
//! closing marker; [`Tagged`] serves those whose markers are fixed strings.

use serde_json::Value;

use super::grammar::Gbnf;
use super::scan::{skip_think, TurnBuilder};
use super::{example_call, tools_json, CallGrammar, ChatFormat, ParsedCall, ParsedTurn};
use crate::protocol::message::Message;
use crate::protocol::report::ReportBounds;
use crate::protocol::tool::ToolSpec;

/// The last line of most instructions.
pub(crate) const RESULTS_COME_BACK: &str = "The results come back in the next message.";
/// How the families whose templates list tools as JSON introduce the list.
pub(crate) const ONE_OBJECT_PER_LINE: &str =
    "# Tools\n\nYou may call one or more tools. Their signatures, one JSON object per line:";
/// How the DeepSeek families introduce the list.
pub(crate) const WITH_SCHEMAS: &str =
    "## Tools\n\nYou have these tools, each described by one JSON object with its parameter schema:";

/// What a family's instructions say around the tool list and the example call; most
/// families' instructions are these words in one layout ([`Teaching::lay_out`]).
pub(crate) struct Teaching {
    /// The heading and the sentence that introduces the tool list.
    intro: &'static str,
    /// The tool list goes inside `<tools></tools>`.
    tagged_list: bool,
    /// How to call, ending where the example follows.
    how: String,
    /// What follows the example.
    after: &'static str,
}

impl Teaching {
    /// `intro`, the tool list, `how`, an example call, and [`RESULTS_COME_BACK`].
    pub(crate) fn new(intro: &'static str, how: impl Into<String>) -> Self {
        Self {
            intro,
            tagged_list: false,
            how: how.into(),
            after: RESULTS_COME_BACK,
        }
    }

    /// The tool list goes inside `<tools></tools>`.
    pub(crate) fn tools_tagged(mut self) -> Self {
        self.tagged_list = true;
        self
    }

    /// What follows the example instead of [`RESULTS_COME_BACK`].
    pub(crate) fn then(mut self, after: &'static str) -> Self {
        self.after = after;
        self
    }

    /// The instructions: intro, tool list, how to call, an example call, what follows.
    pub(crate) fn lay_out(self, family: &impl Family, tools: &[ToolSpec]) -> String {
        let (name, args) = example_call(tools);
        let list = tools_json(tools);
        let list = if self.tagged_list {
            format!("<tools>\n{list}\n</tools>")
        } else {
            list
        };
        format!(
            "{}\n{list}\n\n{}\n{}\n{}",
            self.intro,
            self.how,
            family.write_call(&name, &args),
            self.after
        )
    }
}

/// One family's call syntax; the blanket [`ChatFormat`] impl is the rest.
pub(crate) trait Family: Send + Sync {
    /// The `--chat-format` name.
    fn format_name(&self) -> &'static str;

    /// Where the first call markup in `text` starts: reasoning closed before it is prose.
    fn first_marker(&self, text: &str) -> Option<usize>;

    /// Reads the answer part of a turn (after any reasoning) into `turn`: prose and calls.
    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder);

    /// One call in this family's syntax, exactly as the model would emit it.
    fn write_call(&self, name: &str, arguments: &Value) -> String;

    /// The root rule of the call grammar for a non-empty tool list, its rules added to `g`.
    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String;

    /// The words that switch the lazy grammar on.
    fn trigger_words(&self) -> &'static [&'static str];

    /// Sets a leading reasoning block aside as prose; returns the text left to scan.
    fn skip_reasoning<'t>(&self, text: &'t str, turn: &mut TurnBuilder) -> &'t str {
        skip_think(text, self.first_marker(text), turn)
    }

    /// The system-prompt section that lists the tools and shows the call syntax; most
    /// families lay out a [`Teaching`].
    fn instructions(&self, tools: &[ToolSpec]) -> String;

    /// The message that carries a tool's result back to the model.
    fn result_message(&self, name: &str, output: &str) -> Message {
        Message::tool(name, output)
    }

    /// Whether a turn ends at its first complete call.
    fn one_call_per_turn(&self) -> bool {
        false
    }
}

impl<F: Family> ChatFormat for F {
    fn name(&self) -> &'static str {
        self.format_name()
    }

    fn tool_instructions(&self, tools: &[ToolSpec]) -> String {
        self.instructions(tools)
    }

    fn call_triggers(&self) -> &'static [&'static str] {
        self.trigger_words()
    }

    fn one_call_per_turn(&self) -> bool {
        Family::one_call_per_turn(self)
    }

    fn render_call(&self, name: &str, arguments: &Value) -> String {
        self.write_call(name, arguments)
    }

    fn tool_result(&self, name: &str, output: &str) -> Message {
        self.result_message(name, output)
    }

    fn grammar(&self, tools: &[ToolSpec]) -> Option<CallGrammar> {
        if tools.is_empty() {
            return None;
        }
        let mut g = Gbnf::default();
        let root = self.grammar_root(&mut g, tools);
        Some(g.finish(&root, self.trigger_words()))
    }

    fn report_grammar(&self, tools: &[ToolSpec], bounds: ReportBounds) -> Option<CallGrammar> {
        if tools.is_empty() {
            return None;
        }
        let mut g = Gbnf::for_report(bounds);
        let root = self.grammar_root(&mut g, tools);
        Some(g.finish(&root, self.trigger_words()))
    }

    fn parse_partial(&self, text: &str) -> (ParsedTurn, usize) {
        let mut turn = TurnBuilder::default();
        let body = self.skip_reasoning(text, &mut turn);
        self.scan_answer(body, &mut turn);
        turn.finish()
    }
}

/// A marker found in the text: where it starts and ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marker {
    pub start: usize,
    pub end: usize,
}

/// How a call block ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Its own closing marker came.
    Closed,
    /// The next call (or the end of the calls) began first; the call is final as it stands.
    Interrupted,
    /// The text ended inside it: more may be coming.
    CutOff,
}

/// What [`scan_blocks`] looks for.
pub(crate) trait Blocks {
    /// The next marker at or after `from` that opens a call (`true`) or is other markup
    /// that is not prose (`false`, such as an outer wrapper).
    fn next_open(&self, text: &str, from: usize) -> Option<(Marker, bool)>;

    /// Where the call whose body starts at `from` ends: its closing marker (`true`), or the
    /// start of whatever interrupts it (`false`, a marker that is not consumed).
    fn next_end(&self, text: &str, from: usize) -> Option<(Marker, bool)>;

    /// Reads one call body.
    fn read(&self, body: &str, ending: Ending) -> ParsedCall;
}

/// The opening/closing marker loop: the text between blocks goes through `prose`, each block
/// is read by `blocks`, and a block is final unless the text ended inside it.
pub(crate) fn scan_blocks(
    text: &str,
    turn: &mut TurnBuilder,
    blocks: &impl Blocks,
    mut prose: impl FnMut(&str, &mut TurnBuilder),
) {
    let mut at = 0;
    let mut prose_from = 0;
    while let Some((open, is_call)) = blocks.next_open(text, at) {
        prose(&text[prose_from..open.start], turn);
        at = open.end;
        if is_call {
            let from = open.end;
            match blocks.next_end(text, from) {
                Some((end, true)) => {
                    turn.call(blocks.read(&text[from..end.start], Ending::Closed), true);
                    at = end.end;
                }
                Some((end, false)) => {
                    let call = blocks.read(&text[from..end.start], Ending::Interrupted);
                    turn.call(call, true);
                    at = end.start;
                }
                None => {
                    turn.call(blocks.read(&text[from..], Ending::CutOff), false);
                    at = text.len();
                }
            }
        }
        prose_from = at;
    }
    prose(&text[prose_from..], turn);
}

/// Call blocks between fixed `open` and `close` strings, where a second `open` before
/// `close` interrupts the first call; `read` reads a body.
pub(crate) struct Tagged<'a> {
    pub open: &'a str,
    pub close: &'a str,
    pub read: &'a dyn Fn(&str, Ending) -> ParsedCall,
}

impl Blocks for Tagged<'_> {
    fn next_open(&self, text: &str, from: usize) -> Option<(Marker, bool)> {
        let start = from + text.get(from..)?.find(self.open)?;
        let end = start + self.open.len();
        Some((Marker { start, end }, true))
    }

    fn next_end(&self, text: &str, from: usize) -> Option<(Marker, bool)> {
        let rest = text.get(from..)?;
        match (rest.find(self.close), rest.find(self.open)) {
            (Some(end), next) if next.is_none_or(|n| end < n) => {
                let start = from + end;
                let end = start + self.close.len();
                Some((Marker { start, end }, true))
            }
            (_, Some(next)) => {
                let start = from + next;
                Some((Marker { start, end: start }, false))
            }
            (_, None) => None,
        }
    }

    fn read(&self, body: &str, ending: Ending) -> ParsedCall {
        (self.read)(body, ending)
    }
}
