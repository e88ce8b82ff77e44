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
    /// Tool-call markup begins (after its marker's characters).
    CallStarts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Mode {
    #[default]
    Text,
    Call,
    Reasoning,
}

struct Marker {
    text: &'static str,
    from: Mode,
    to: Mode,
}

const fn marker(text: &'static str, from: Mode, to: Mode) -> Marker {
    Marker { text, from, to }
}

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
];

/// The splitter's state between pieces.
#[derive(Debug, Clone, Default)]
pub struct Splitter {
    mode: Mode,
    /// Characters that may be the start of a marker.
    pending: String,
}

impl Splitter {
    fn part(&self) -> Part {
        match self.mode {
            Mode::Text => Part::Text,
            Mode::Call => Part::Markup,
            Mode::Reasoning => Part::Reasoning,
        }
    }

    /// Where the next character goes when it cannot begin a marker (`<`, `[`): known when no
    /// marker is half read.
    pub fn idle(&self) -> Option<Part> {
        self.pending.is_empty().then(|| self.part())
    }

    /// Takes one character; hands on whatever is decided by it.
    pub fn feed(&mut self, c: char, out: &mut impl FnMut(Out)) {
        if self.pending.is_empty() && c != '<' && c != '[' {
            out(Out::Char(self.part(), c));
            return;
        }
        self.pending.push(c);
        loop {
            let mode = self.mode;
            if let Some(m) = MARKERS
                .iter()
                .find(|m| m.from == mode && m.text == self.pending)
            {
                for c in self.pending.chars() {
                    out(Out::Char(Part::Markup, c));
                }
                self.pending.clear();
                self.mode = m.to;
                match m.to {
                    Mode::Reasoning => out(Out::ReasoningStarts),
                    Mode::Call => out(Out::CallStarts),
                    Mode::Text => {}
                }
                return;
            }
            if MARKERS
                .iter()
                .any(|m| m.from == mode && m.text.starts_with(self.pending.as_str()))
            {
                return;
            }
            let first = self.pending.remove(0);
            out(Out::Char(self.part(), first));
            if self.pending.is_empty() {
                return;
            }
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
}
