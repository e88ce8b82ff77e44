//! The longest text a GBNF grammar lets a model write, in bytes.
//!
//! A wrap-up turn must never be cut by the context: its report call has to fit the room that
//! is left. Under a grammar every sampled token writes at least one byte (llama.cpp refuses
//! tokens whose text is empty), so a grammar whose longest text is `n` bytes cannot take more
//! than `n` tokens. This module works that length out from the grammar text itself, the same
//! text the sampler gets, so the bound holds for every family's call syntax by construction
//! rather than by an estimate of its markup.
//!
//! A wrap-up turn ends with its first complete call, so a repetition (`?`, `*`, `+`, `{m,n}`)
//! whose item holds a call counts its minimum number of times: the calls after the first are
//! never written. The caller names the rules that mark a call (the report's summary rules,
//! present in every report call). Only the GBNF our grammars use is read: rules one per line, literals,
//! character classes, groups, alternatives, rule references, `.` and the quantifiers.

use std::collections::HashMap;

use crate::protocol::report::ReportBounds;

/// The grammar `build` makes for the widest [`ReportBounds`] whose longest text (`text` of
/// the grammar, counted by [`max_bytes`] from its rule `root`, the report's summary rules
/// marking a call) takes at most `max_bytes` bytes: its bounds and its longest text too.
/// The longest text is `None` where it has no bound; the bounds are [`ReportBounds::MIN`]
/// when even they do not fit. `None` when `build` makes no grammar.
pub(crate) fn widest_report_within<G>(
    max_bytes: usize,
    build: impl Fn(ReportBounds) -> Option<G>,
    text: impl Fn(&G) -> &str,
) -> Option<(G, ReportBounds, Option<usize>)> {
    let measure = |bounds: ReportBounds| {
        let grammar = build(bounds)?;
        let longest = max_bytes_of(text(&grammar));
        Some((grammar, bounds, longest))
    };
    let mut chars = max_bytes;
    for _ in 0..64 {
        let bounds = ReportBounds::within(chars);
        let measured = measure(bounds)?;
        let Some(length) = measured.2.filter(|&n| n > max_bytes) else {
            return Some(measured);
        };
        if bounds == ReportBounds::MIN {
            return Some(measured);
        }
        // Take the excess off the text, at least one character.
        let text = bounds.text_chars().min(chars);
        chars = text
            .saturating_sub(length - max_bytes)
            .min(text.saturating_sub(1));
    }
    measure(ReportBounds::MIN)
}

/// The longest text of a report grammar (root `root`), a call counted once.
fn max_bytes_of(gbnf: &str) -> Option<usize> {
    max_bytes(gbnf, "root", &super::grammar::REPORT_MARKERS)
}

/// One parsed piece of a rule body.
#[derive(Debug, Clone)]
enum Node {
    /// A literal or a character class, with its longest length in bytes.
    Bytes(usize),
    Rule(String),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    /// `item{min,max}`; `max: None` is unbounded.
    Repeat(Box<Node>, usize, Option<usize>),
}

/// The longest text of rule `root` of `gbnf` in bytes, counting a repetition whose item
/// reaches one of the rules `call_markers` at its minimum; `None` when the text is unbounded,
/// the grammar is recursive, a rule is missing or the text cannot be read.
pub fn max_bytes(gbnf: &str, root: &str, call_markers: &[&str]) -> Option<usize> {
    let mut rules = HashMap::new();
    for line in gbnf.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, body) = line.split_once("::=")?;
        let mut chars: Vec<char> = body.chars().collect();
        chars.push('\0');
        let mut at = 0;
        let node = parse_alt(&chars, &mut at)?;
        if chars.get(at) != Some(&'\0') {
            return None;
        }
        rules.insert(name.trim().to_string(), node);
    }
    let mut eval = Eval {
        rules: &rules,
        markers: call_markers,
        lengths: HashMap::new(),
        reaches: HashMap::new(),
    };
    eval.rule(root, &mut Vec::new())
}

fn skip_space(chars: &[char], at: &mut usize) {
    while let Some(&c) = chars.get(*at) {
        if c == '#' {
            while chars.get(*at).is_some_and(|&c| c != '\n' && c != '\0') {
                *at += 1;
            }
        } else if c.is_whitespace() {
            *at += 1;
        } else {
            break;
        }
    }
}

fn parse_alt(chars: &[char], at: &mut usize) -> Option<Node> {
    let mut alternatives = vec![parse_seq(chars, at)?];
    loop {
        skip_space(chars, at);
        if chars.get(*at) != Some(&'|') {
            break;
        }
        *at += 1;
        alternatives.push(parse_seq(chars, at)?);
    }
    Some(if alternatives.len() == 1 {
        alternatives.remove(0)
    } else {
        Node::Alt(alternatives)
    })
}

fn parse_seq(chars: &[char], at: &mut usize) -> Option<Node> {
    let mut items = Vec::new();
    loop {
        skip_space(chars, at);
        let atom = match chars.get(*at)? {
            '"' => Node::Bytes(literal(chars, at)?),
            '[' => Node::Bytes(class(chars, at)?),
            '.' => {
                *at += 1;
                Node::Bytes(4)
            }
            '(' => {
                *at += 1;
                let inner = parse_alt(chars, at)?;
                skip_space(chars, at);
                if chars.get(*at) != Some(&')') {
                    return None;
                }
                *at += 1;
                inner
            }
            c if c.is_ascii_alphanumeric() || *c == '-' || *c == '_' => {
                let start = *at;
                while chars
                    .get(*at)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                {
                    *at += 1;
                }
                Node::Rule(chars[start..*at].iter().collect())
            }
            _ => break,
        };
        items.push(quantified(atom, chars, at)?);
    }
    Some(if items.len() == 1 {
        items.remove(0)
    } else {
        Node::Seq(items)
    })
}

/// Reads any quantifiers after an atom.
fn quantified(mut atom: Node, chars: &[char], at: &mut usize) -> Option<Node> {
    loop {
        let (min, max) = match chars.get(*at) {
            Some('?') => (0, Some(1)),
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('{') => {
                let close = chars[*at..].iter().position(|&c| c == '}')? + *at;
                let inside: String = chars[*at + 1..close].iter().collect();
                *at = close;
                match inside.split_once(',') {
                    None => {
                        let n = inside.trim().parse().ok()?;
                        (n, Some(n))
                    }
                    Some((lo, hi)) => {
                        let lo = lo.trim().parse().ok()?;
                        let hi = hi.trim();
                        (lo, (!hi.is_empty()).then(|| hi.parse().ok()).flatten())
                    }
                }
            }
            _ => return Some(atom),
        };
        *at += 1;
        atom = Node::Repeat(Box::new(atom), min, max);
    }
}

/// One escaped character of a literal or class: its byte length.
fn escaped(chars: &[char], at: &mut usize) -> Option<char> {
    let c = *chars.get(*at)?;
    *at += 1;
    if c != '\\' {
        return Some(c);
    }
    let e = *chars.get(*at)?;
    *at += 1;
    let hex = |n: usize, at: &mut usize| -> Option<char> {
        let digits: String = chars.get(*at..*at + n)?.iter().collect();
        *at += n;
        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
    };
    match e {
        'x' => hex(2, at),
        'u' => hex(4, at),
        'U' => hex(8, at),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        other => Some(other),
    }
}

fn literal(chars: &[char], at: &mut usize) -> Option<usize> {
    *at += 1;
    let mut bytes = 0;
    while *chars.get(*at)? != '"' {
        bytes += escaped(chars, at)?.len_utf8();
    }
    *at += 1;
    Some(bytes)
}

/// A class's widest character in bytes: 4 for a negated class (any character but some).
fn class(chars: &[char], at: &mut usize) -> Option<usize> {
    *at += 1;
    let negated = chars.get(*at) == Some(&'^');
    if negated {
        *at += 1;
    }
    let mut widest = 0;
    while *chars.get(*at)? != ']' {
        let c = escaped(chars, at)?;
        widest = widest.max(c.len_utf8());
        if chars.get(*at) == Some(&'-') && chars.get(*at + 1) != Some(&']') {
            *at += 1;
            widest = widest.max(escaped(chars, at)?.len_utf8());
        }
    }
    *at += 1;
    Some(if negated { 4 } else { widest })
}

struct Eval<'a> {
    rules: &'a HashMap<String, Node>,
    markers: &'a [&'a str],
    lengths: HashMap<String, Option<usize>>,
    reaches: HashMap<String, bool>,
}

impl Eval<'_> {
    fn rule(&mut self, name: &str, visiting: &mut Vec<String>) -> Option<usize> {
        if let Some(known) = self.lengths.get(name) {
            return *known;
        }
        if visiting.iter().any(|v| v == name) {
            return None;
        }
        let node = self.rules.get(name)?;
        visiting.push(name.to_string());
        let length = self.node(node, visiting);
        visiting.pop();
        self.lengths.insert(name.to_string(), length);
        length
    }

    fn node(&mut self, node: &Node, visiting: &mut Vec<String>) -> Option<usize> {
        match node {
            Node::Bytes(n) => Some(*n),
            Node::Rule(name) => self.rule(name, visiting),
            Node::Seq(items) => items.iter().try_fold(0usize, |sum, item| {
                sum.checked_add(self.node(item, visiting)?)
            }),
            Node::Alt(alternatives) => alternatives.iter().try_fold(0usize, |widest, item| {
                Some(widest.max(self.node(item, visiting)?))
            }),
            Node::Repeat(item, min, max) => {
                let times = if self.holds_call(item, &mut Vec::new()) {
                    *min
                } else {
                    match max {
                        Some(max) => *max,
                        None if self.node(item, visiting)? == 0 => 0,
                        None => return None,
                    }
                };
                if times == 0 {
                    return Some(0);
                }
                self.node(item, visiting)?.checked_mul(times)
            }
        }
    }

    /// Whether `node` reaches the call marker rule.
    fn holds_call(&mut self, node: &Node, visiting: &mut Vec<String>) -> bool {
        match node {
            Node::Bytes(_) => false,
            Node::Rule(name) => {
                if self.markers.contains(&name.as_str()) {
                    return true;
                }
                if let Some(&known) = self.reaches.get(name) {
                    return known;
                }
                if visiting.iter().any(|v| v == name) {
                    return false;
                }
                let Some(body) = self.rules.get(name) else {
                    return false;
                };
                visiting.push(name.clone());
                let reaches = self.holds_call(body, visiting);
                visiting.pop();
                self.reaches.insert(name.clone(), reaches);
                reaches
            }
            Node::Seq(items) | Node::Alt(items) => {
                items.iter().any(|item| self.holds_call(item, visiting))
            }
            Node::Repeat(item, _, _) => self.holds_call(item, visiting),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_classes_and_repetitions_add_up() {
        let g =
            "root ::= \"ab\\n\" x{2,3} y? [^a] ( \"é\" | \"abc\" )\nx ::= [a-z]\ny ::= \"\\x41\"";
        // 3 + 3 + 1 + 4 + 3
        assert_eq!(max_bytes(g, "root", &[]), Some(14));
    }

    #[test]
    fn unbounded_recursive_and_unreadable_grammars_have_no_bound() {
        assert_eq!(max_bytes("root ::= [a]*", "root", &["m"]), None);
        assert_eq!(max_bytes("root ::= [a]+", "root", &["m"]), None);
        assert_eq!(max_bytes("root ::= [a]{2,}", "root", &["m"]), None);
        assert_eq!(
            max_bytes("root ::= \"(\" root \")\" | \"x\"", "root", &["m"]),
            None
        );
        assert_eq!(max_bytes("root ::= missing", "root", &["m"]), None);
        assert_eq!(max_bytes("root ::= \"open", "root", &["m"]), None);
    }

    /// Every format's wrap-up grammar, built for a room, writes no more bytes than the room:
    /// the report reserve always holds the report, and a larger room gets a larger report.
    #[test]
    fn every_formats_report_call_fits_the_room_it_is_built_for() {
        use crate::protocol::report::{ReportBounds, REPORT_RESERVE_TOKENS};
        use crate::protocol::tool::REPORT_TOOL;
        let report: Vec<_> = crate::tools::Registry::standard()
            .specs()
            .into_iter()
            .filter(|t| t.name == REPORT_TOOL)
            .collect();
        let reserve = usize::try_from(REPORT_RESERVE_TOKENS).unwrap();
        // Formats whose call markup alone takes 300 bytes or more, counted byte by byte
        // (a model writes most of it as a few special tokens): at the bare reserve their
        // report is short.
        const LONG_MARKUP: [&str; 2] = ["dsml", "glm"];
        for name in crate::chat::FORMAT_NAMES {
            let format = crate::chat::by_name(name).unwrap();
            let mut previous = 0;
            for room in [reserve, 700, 1_000, 1_500, 2_500, 4_000, usize::MAX] {
                let (_, bounds, longest) =
                    crate::chat::report_grammar_within(format.as_ref(), &report, room).unwrap();
                let longest = longest.unwrap_or_else(|| panic!("{name}: unbounded"));
                assert!(
                    longest <= room,
                    "{name}: {longest} bytes in a room of {room}"
                );
                assert!(
                    bounds.text_chars() >= previous,
                    "{name} at {room}: {bounds:?}"
                );
                previous = bounds.text_chars();
                if room == reserve && !LONG_MARKUP.contains(name) {
                    // The reserve still holds a real report, not the smallest one.
                    assert!(
                        bounds.summary >= 100 && bounds.item >= 60,
                        "{name}: {bounds:?}"
                    );
                }
                if room == usize::MAX {
                    assert_eq!(bounds, ReportBounds::FULL, "{name}");
                }
            }
        }
    }

    #[test]
    fn calls_after_the_first_are_not_counted() {
        let g =
            "root ::= call ( \" \" call ){0,7}\ncall ::= \"<\" mark \">\"\nmark ::= [a-z]{0,10}";
        assert_eq!(max_bytes(g, "root", &["mark"]), Some(12));
        assert_eq!(max_bytes(g, "root", &["other"]), Some(12 + 7 * 13));
    }
}
