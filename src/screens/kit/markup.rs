//! Splits streamed model text into what the person reads, the raw tool-call markup, and
//! reasoning (`<think>` blocks), one character at a time.
//!
//! Each character goes through the same small state machine whatever piece it arrived in, and
//! a character that could begin a marker waits until the marker is complete or ruled out, so
//! any split of a turn gives the same parts (the streaming invariant). The markers are those of
//! the chat families; a family whose calls have no closing marker stays in markup until the
//! turn ends ([`Splitter::finish`]).

/// Where a character belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Free text: what the model says it is doing.
    Text,
    /// Tool-call markup, markers included: hidden unless raw output is on.
    Markup,
    /// Reasoning inside a `<think>` block.
    Reasoning,
}

/// What the splitter hands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    Char(Part, char),
    /// A reasoning block begins (after its marker's characters).
    ReasoningStarts,
    /// Tool-call markup begins (after its marker's characters). A call known by its shape
    /// (a fenced or bare object) began with the last `opening` bytes of markup already
    /// handed on, its name's key among them; after a family's marker it is 0.
    CallStarts {
        opening: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Mode {
    #[default]
    Text,
    /// Inside a family's call tags (or after a marker with no closing one).
    Call,
    Reasoning,
    /// A Markdown fence holding a call: markup up to the closing fence.
    FenceCall,
    /// A code block that is prose (another language, or JSON data): text, and nothing in it
    /// starts a call, as the chat parser reads it.
    CodeBlock,
    /// A bare call object in the prose: markup until its brackets balance.
    JsonCall,
}

struct Marker {
    text: &'static str,
    from: Mode,
    to: Mode,
}

const fn marker(text: &'static str, from: Mode, to: Mode) -> Marker {
    Marker { text, from, to }
}

/// What opens and closes a Markdown code block.
const FENCE: &str = "```";

const MARKERS: &[Marker] = &[
    marker("<tool_call>", Mode::Text, Mode::Call),
    marker("</tool_call>", Mode::Call, Mode::Text),
    marker("<｜DSML｜function_calls>", Mode::Text, Mode::Call),
    marker("</｜DSML｜function_calls>", Mode::Call, Mode::Text),
    marker("<｜tool▁calls▁begin｜>", Mode::Text, Mode::Call),
    marker("<｜tool▁calls▁end｜>", Mode::Call, Mode::Text),
    marker("[TOOL_CALLS]", Mode::Text, Mode::Call),
    marker("<|python_tag|>", Mode::Text, Mode::Call),
    marker("<think>", Mode::Text, Mode::Reasoning),
    marker("</think>", Mode::Reasoning, Mode::Text),
    marker(FENCE, Mode::FenceCall, Mode::Text),
    marker(FENCE, Mode::CodeBlock, Mode::Text),
];

/// Characters that may begin a marker or a call's shape: anything else is decided at once.
const TRIGGERS: [char; 4] = ['<', '[', '`', '{'];

/// Info strings of a fence that may hold a call (lower case), as the chat parser reads them;
/// a fence in any other language is prose.
const CALL_LANGUAGES: [&str; 7] = [
    "",
    "json",
    "jsonc",
    "json5",
    "tool_call",
    "tool_code",
    "tool",
];

/// The most characters a call's opening may take before it is ruled out (a fence's info
/// line and the whitespace before the object).
const MAX_OPENING: usize = 96;

/// How far the characters waiting match something that changes the mode.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// They cannot: the first one goes out as it is.
    No,
    /// They may, once more characters come.
    Partial,
    /// They do: the mode changes to this.
    Full(Mode),
    /// A fence that opens a prose code block: its first `len` bytes (up to its newline).
    ProseFence(usize),
}

/// Whether `text` opens a call object: whitespace, an optional `[`, then `{` and `"name"` or
/// `"type"` (the shape the chat parser takes for a call, `chat::bare::looks_like_call`).
fn object_opening(text: &str) -> Verdict {
    let text = text.trim_start();
    let text = match text.strip_prefix('[') {
        Some(rest) => rest.trim_start(),
        None => text,
    };
    let Some(rest) = text.strip_prefix('{') else {
        return if text.is_empty() {
            Verdict::Partial
        } else {
            Verdict::No
        };
    };
    let rest = rest.trim_start();
    for key in ["\"name\"", "\"type\""] {
        if rest.starts_with(key) {
            return Verdict::Full(Mode::JsonCall);
        }
    }
    if rest.is_empty() || ["\"name\"", "\"type\""].iter().any(|k| k.starts_with(rest)) {
        Verdict::Partial
    } else {
        Verdict::No
    }
}

/// Whether `text` opens a fence that holds a call, one that opens a prose code block, or
/// may still be either.
fn fence_opening(text: &str) -> Verdict {
    let Some(rest) = text.strip_prefix(FENCE) else {
        return if FENCE.starts_with(text) {
            Verdict::Partial
        } else {
            Verdict::No
        };
    };
    let Some(newline) = rest.find('\n') else {
        return Verdict::Partial;
    };
    let info = rest[..newline].trim().to_ascii_lowercase();
    let prose = Verdict::ProseFence(FENCE.len() + newline + 1);
    if !CALL_LANGUAGES.contains(&info.as_str()) {
        return prose;
    }
    match object_opening(&rest[newline + 1..]) {
        Verdict::Full(_) => Verdict::Full(Mode::FenceCall),
        Verdict::Partial => Verdict::Partial,
        _ => prose,
    }
}

/// The splitter's state between pieces.
#[derive(Debug, Clone, Default)]
pub struct Splitter {
    mode: Mode,
    /// Characters that may be the start of a marker.
    pending: String,
    /// In a bare call object: brackets open, inside a string, after a backslash there.
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Splitter {
    fn part(&self) -> Part {
        match self.mode {
            Mode::Text | Mode::CodeBlock => Part::Text,
            Mode::Call | Mode::FenceCall | Mode::JsonCall => Part::Markup,
            Mode::Reasoning => Part::Reasoning,
        }
    }

    /// Where every character of `text` goes, when that is known without looking at each:
    /// no marker is half read, none can begin in `text`, and no call object is being
    /// counted.
    pub fn settled(&self, text: &str) -> Option<Part> {
        (self.pending.is_empty() && self.mode != Mode::JsonCall && !text.contains(TRIGGERS))
            .then(|| self.part())
    }

    /// What the waiting characters match in the current mode.
    fn verdict(&self) -> Verdict {
        let pending = self.pending.as_str();
        if let Some(m) = MARKERS
            .iter()
            .find(|m| m.from == self.mode && m.text == pending)
        {
            return Verdict::Full(m.to);
        }
        let marker_ahead = MARKERS
            .iter()
            .any(|m| m.from == self.mode && m.text.starts_with(pending));
        let shape = match self.mode {
            Mode::Text if pending.chars().count() > MAX_OPENING => Verdict::No,
            Mode::Text if pending.starts_with('`') => fence_opening(pending),
            Mode::Text if pending.starts_with(['{', '[']) => object_opening(pending),
            _ => Verdict::No,
        };
        match shape {
            Verdict::No if marker_ahead => Verdict::Partial,
            shape => shape,
        }
    }

    /// Takes one character; hands on whatever is decided by it.
    pub fn feed(&mut self, c: char, out: &mut impl FnMut(Out)) {
        if self.mode == Mode::JsonCall {
            self.count(c);
            out(Out::Char(Part::Markup, c));
            return;
        }
        if self.pending.is_empty() && !TRIGGERS.contains(&c) {
            out(Out::Char(self.part(), c));
            return;
        }
        self.pending.push(c);
        loop {
            match self.verdict() {
                Verdict::Partial => return,
                Verdict::Full(to) => {
                    self.enter(to, out);
                    return;
                }
                Verdict::ProseFence(len) => {
                    let rest = self.pending.split_off(len);
                    for c in std::mem::take(&mut self.pending).chars() {
                        out(Out::Char(Part::Text, c));
                    }
                    self.mode = Mode::CodeBlock;
                    for c in rest.chars() {
                        self.feed(c, out);
                    }
                    return;
                }
                Verdict::No => {
                    let first = self.pending.remove(0);
                    out(Out::Char(self.part(), first));
                    if self.pending.is_empty() {
                        return;
                    }
                }
            }
        }
    }

    /// The waiting characters complete a marker or a call's opening: they go out as markup
    /// (a call's opening counted as the object's first characters), and the mode changes.
    fn enter(&mut self, to: Mode, out: &mut impl FnMut(Out)) {
        let pending = std::mem::take(&mut self.pending);
        let opening = match self.mode {
            // From text to a call by its shape: the opening is the object's start (a fence's
            // info line before it is not).
            Mode::Text if matches!(to, Mode::FenceCall | Mode::JsonCall) => {
                pending.len() - pending.find(['{', '[']).unwrap_or(0)
            }
            _ => 0,
        };
        if to == Mode::JsonCall {
            self.depth = 0;
            self.in_string = false;
            self.escaped = false;
            for c in pending.chars() {
                self.count(c);
            }
        }
        // A prose code block's closing fence is prose too.
        let part = match self.mode {
            Mode::CodeBlock => Part::Text,
            _ => Part::Markup,
        };
        for c in pending.chars() {
            out(Out::Char(part, c));
        }
        self.mode = to;
        match to {
            Mode::Reasoning => out(Out::ReasoningStarts),
            Mode::Call | Mode::FenceCall | Mode::JsonCall => out(Out::CallStarts { opening }),
            Mode::Text | Mode::CodeBlock => {}
        }
    }

    /// One character of a bare call object: when its brackets balance, the object ends.
    fn count(&mut self, c: char) {
        if self.in_string {
            match (self.escaped, c) {
                (true, _) => self.escaped = false,
                (false, '\\') => self.escaped = true,
                (false, '"') => self.in_string = false,
                _ => {}
            }
            return;
        }
        match c {
            '"' => self.in_string = true,
            '{' | '[' => self.depth += 1,
            '}' | ']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 && self.mode == Mode::JsonCall {
                    self.mode = Mode::Text;
                }
            }
            _ => {}
        }
    }

    /// The turn ended: what waited goes out as it is, and the next turn starts as text.
    pub fn finish(&mut self, out: &mut impl FnMut(Out)) {
        let part = self.part();
        for c in std::mem::take(&mut self.pending).chars() {
            out(Out::Char(part, c));
        }
        self.mode = Mode::Text;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pieces: &[&str]) -> Vec<Out> {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        for piece in pieces {
            for c in piece.chars() {
                s.feed(c, &mut |o| out.push(o));
            }
        }
        s.finish(&mut |o| out.push(o));
        out
    }

    fn text_of(out: &[Out], part: Part) -> String {
        out.iter()
            .filter_map(|o| match o {
                Out::Char(p, c) if *p == part => Some(*c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn markup_and_reasoning_are_told_apart() {
        let out = split(&[
            "<think>plan [a]</think>Writing.<tool_call>{\"name\": \"x\"}</tool_call> done <b",
        ]);
        assert_eq!(text_of(&out, Part::Text), "Writing. done <b");
        assert_eq!(text_of(&out, Part::Reasoning), "plan [a]");
        assert_eq!(
            text_of(&out, Part::Markup),
            "<think></think><tool_call>{\"name\": \"x\"}</tool_call>"
        );
        assert_eq!(
            out.iter().filter(|o| **o == Out::ReasoningStarts).count(),
            1
        );
    }

    #[test]
    fn any_split_gives_the_same_parts() {
        let text = "a <tool_ b<tool_call>{}</tool_call>\n<think>x</think>[TOOL_CALLS]y";
        let whole = split(&[text]);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(split(&pieces), whole);
        assert_eq!(split(&[&text[..7], &text[7..20], &text[20..]]), whole);
    }

    /// Every split of `text` into pieces gives the parts the whole text gives.
    fn assert_split_free(text: &str) {
        let whole = split(&[text]);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(split(&pieces), whole, "{text:?}");
        for at in 1..text.len() {
            if text.is_char_boundary(at) {
                assert_eq!(
                    split(&[&text[..at], &text[at..]]),
                    whole,
                    "{text:?} at {at}"
                );
            }
        }
    }

    fn starts(out: &[Out]) -> Vec<usize> {
        out.iter()
            .filter_map(|o| match o {
                Out::CallStarts { opening } => Some(*opening),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_fenced_call_is_markup_and_its_opening_is_the_object() {
        let text = "I will list it.\n```json\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n```\nDone.";
        let out = split(&[text]);
        assert_eq!(text_of(&out, Part::Text), "I will list it.\n\nDone.");
        assert_eq!(
            text_of(&out, Part::Markup),
            "```json\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n```"
        );
        assert_eq!(starts(&out), vec!["{\"name\"".len()]);
        assert_split_free(text);
        // A bare fence, an array of calls and other call languages too.
        for opening in ["```\n", "```tool_call\n", "``` JSON \n"] {
            let text = format!("{opening}[{{\"name\": \"x\"}}]\n```");
            let out = split(&[&text]);
            assert_eq!(text_of(&out, Part::Text), "", "{text}");
            assert_split_free(&text);
        }
    }

    #[test]
    fn a_bare_call_is_markup_until_its_brackets_balance() {
        let text =
            "Reading: {\"name\": \"read_file\", \"arguments\": {\"path\": \"a}\\\"b\"}} then {x}";
        let out = split(&[text]);
        assert_eq!(text_of(&out, Part::Text), "Reading:  then {x}");
        assert_eq!(
            text_of(&out, Part::Markup),
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a}\\\"b\"}}"
        );
        assert_eq!(starts(&out), vec!["{\"name\"".len()]);
        assert_split_free(text);
        let typed = "{\n  \"type\": \"function\", \"name\": \"x\"}";
        assert_eq!(text_of(&split(&[typed]), Part::Text), "");
    }

    #[test]
    fn code_and_data_stay_prose() {
        // JSON data, a fence of data, and a call-shaped object inside a Python block.
        for text in [
            "The config is {\"path\": \"a\"} and [1, 2].",
            "```json\n{\"path\": \"a\"}\n```\nafter {\"name\": \"x\"}",
            "```python\nprint({\"name\": \"x\"})\n```",
            "Use `code` and ``two`` here.",
        ] {
            let out = split(&[text]);
            let markup = text_of(&out, Part::Markup);
            match text {
                t if t.starts_with("```json") => {
                    // The data block is prose; the bare call after it is a call.
                    assert_eq!(markup, "{\"name\": \"x\"}", "{text}");
                }
                _ => assert_eq!(markup, "", "{text}"),
            }
            assert_split_free(text);
        }
    }
}
