//! How an evidence item is read: the command it names, the exit code it cites, and what it
//! says the command printed, with whether the command's output bears that out.
//!
//! Small models cite output they did not get (`sh greet.sh Ann prints Hello, Ann!` where the
//! run printed `Hello, !`). A claim about output is the text after the command's name that
//! follows an output marker (`:`, `->`, or a verb such as `prints`, `output`, `shows`): a
//! quoted span there (in `"`, `'`, backticks or curly quotes) must appear in the output as it
//! is, whitespace runs and case aside; unquoted text may paraphrase a pass (`all tests pass`),
//! so it holds when it appears in the output or when every word of it is in the output or is
//! one of the words a pass is told in. Text that only names the command, or quotes a file or
//! a name before any marker, claims nothing here.

use std::collections::HashSet;

/// What an evidence item says a command printed.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Claim {
    /// Quoted text: the output must hold it.
    Quoted(String),
    /// Unquoted text after a marker: the output must hold it, or every word of it.
    Said(String),
}

/// Words an unquoted claim may use though the output has none of them: how a pass, an exit
/// and a run are told.
const PASS_WORDS: &str =
    "a all an and are as both code correct correctly each error errors every exactly exit \
    exited exits expected failures fine green is it its line lines no now of ok okay one \
    only pass passed passes passing ran run runs status succeeded succeeds success \
    successful successfully test tests text that the them this was were with without work \
    worked works zero";

/// Verbs after which the text is what a command printed.
const OUTPUT_VERBS: &str =
    "displayed displays echoed echoes gave gives got output outputs print printed prints \
    produced produces returned returns said says showed shows wrote writes yielded yields";

/// Symbols after which the text is what a command printed.
const OUTPUT_SYMBOLS: &[&str] = &[":", "->", "=>", "→"];

impl Claim {
    /// The claimed text.
    pub(super) fn text(&self) -> &str {
        match self {
            Self::Quoted(text) | Self::Said(text) => text,
        }
    }

    /// Whether `printed` (the command's result: status line and output) bears the claim out.
    pub(super) fn holds_in(&self, printed: &str) -> bool {
        let printed = normalize(printed).to_lowercase();
        let claimed = normalize(self.text()).to_lowercase();
        if printed.contains(&claimed) {
            return true;
        }
        match self {
            Self::Quoted(_) => false,
            Self::Said(_) => {
                let seen: HashSet<&str> = words(&printed).collect();
                words(&claimed).all(|w| seen.contains(w) || is_pass_word(w))
            }
        }
    }
}

/// Whether `word` (lower case) is one of [`PASS_WORDS`].
fn is_pass_word(word: &str) -> bool {
    PASS_WORDS.split_whitespace().any(|p| p == word)
}

/// The alphanumeric words of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// The commands `command` chains with `;`, `&&`, `||`, `|` or line breaks, normalized; empty
/// when it chains nothing. (A shell's quoting is not read: a split inside quotes only adds
/// names an item is unlikely to use.)
pub(super) fn chained(command: &str) -> Vec<String> {
    let parts: Vec<String> = command
        .replace("&&", "\n")
        .replace("||", "\n")
        .split(['\n', ';', '|'])
        .map(normalize)
        .filter(|part| !part.is_empty())
        .collect();
    if parts.len() > 1 {
        parts
    } else {
        Vec::new()
    }
}

/// What `item` says the command `named` (normalized, as the item names it) printed.
pub(super) fn output_claims(item: &str, named: &str) -> Vec<Claim> {
    let item = normalize(item);
    let Some(from) = mention_end(&item, named) else {
        return Vec::new();
    };
    let rest = &item[from..];
    let tokens = tokens(rest);
    let mut claims = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let Token::Marker { end, .. } = *token else {
            continue;
        };
        let next = tokens.get(i + 1);
        let upto = tokens[i + 1..]
            .iter()
            .find_map(|t| match t {
                Token::Marker { start, .. } => Some(*start),
                _ => None,
            })
            .unwrap_or(rest.len());
        let segment = &rest[end..upto];
        let segment = segment.split(';').next().unwrap_or("");
        match next {
            Some(Token::Quote { start, text, .. }) if rest[end..*start].trim().is_empty() => {
                let quoted = normalize(text);
                if !quoted.is_empty() && !named.contains(&quoted) {
                    claims.push(Claim::Quoted(quoted));
                }
            }
            _ => {
                let said = segment
                    .trim()
                    .trim_end_matches(['.', ',', '!', ' '])
                    .trim_matches(['"', '\'', '`']);
                if !said.is_empty() && !named.contains(said) {
                    claims.push(Claim::Said(said.to_string()));
                }
            }
        }
    }
    claims
}

/// A piece of the text after the command's name.
#[derive(Debug)]
enum Token<'a> {
    /// An output marker spanning `start..end`.
    Marker { start: usize, end: usize },
    /// A quoted span starting at `start` (its opening quote), holding `text`.
    Quote { start: usize, text: &'a str },
}

/// The markers and quoted spans of `text`, in order; text inside quotes holds no marker.
fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let Some(c) = rest.chars().next() else {
            break;
        };
        if let Some(len) = quote_len(text, at) {
            let open = c.len_utf8();
            let close = closing(c).len_utf8();
            out.push(Token::Quote {
                start: at,
                text: &text[at + open..at + len - close],
            });
            at += len;
            continue;
        }
        if let Some(symbol) = OUTPUT_SYMBOLS.iter().find(|s| rest.starts_with(**s)) {
            out.push(Token::Marker {
                start: at,
                end: at + symbol.len(),
            });
            at += symbol.len();
            continue;
        }
        let word_start = c.is_alphabetic() && !text[..at].chars().next_back().is_some_and(is_word);
        if word_start {
            let len = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
            let word = rest[..len].to_lowercase();
            if OUTPUT_VERBS.split_whitespace().any(|v| v == word) {
                out.push(Token::Marker {
                    start: at,
                    end: at + len,
                });
            }
            at += len;
            continue;
        }
        at += c.len_utf8();
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The quote that closes one opened with `open`.
fn closing(open: char) -> char {
    match open {
        '“' => '”',
        '‘' => '’',
        other => other,
    }
}

/// The length of the quoted span opening at `at` of `text`, its quotes included, when one
/// opens there. A `'` opens only after a space or the start and closes only before a space,
/// punctuation or the end, so an apostrophe is no quote.
fn quote_len(text: &str, at: usize) -> Option<usize> {
    let open = text[at..].chars().next()?;
    if !matches!(open, '"' | '`' | '\'' | '“' | '‘') {
        return None;
    }
    let before = text[..at].chars().next_back();
    if open == '\'' && before.is_some_and(|b| !b.is_whitespace() && !"([:=".contains(b)) {
        return None;
    }
    let close = closing(open);
    let body = at + open.len_utf8();
    text[body..]
        .match_indices(close)
        .map(|(i, _)| body + i)
        .find(|&end| {
            open != '\''
                || text[end + 1..]
                    .chars()
                    .next()
                    .is_none_or(|a| a.is_whitespace() || ".,;:!?)]".contains(a))
        })
        .map(|end| end + close.len_utf8() - at)
}

/// Where the first mention of the command `named` in `item` (both normalized) ends: after
/// the command as words (no word character right before or after it), or after the code span
/// that names it (the span is the command, or the start of it when it holds a space).
fn mention_end(item: &str, named: &str) -> Option<usize> {
    let as_words = item.match_indices(named).find(|(at, _)| {
        let before = item[..*at].chars().next_back();
        let after = item[at + named.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    });
    if let Some((at, _)) = as_words {
        let end = at + named.len();
        // Inside a code span: the mention ends where the span does.
        if item[..at].matches('`').count() % 2 == 1 {
            return Some(item[end..].find('`').map_or(item.len(), |i| end + i + 1));
        }
        return Some(end);
    }
    let mut offset = 0;
    for (i, piece) in item.split('`').enumerate() {
        let piece_end = offset + piece.len();
        let span = normalize(piece);
        let names = !span.is_empty()
            && (span == named
                || (span.contains(' ')
                    && named.starts_with(&span)
                    && named[span.len()..].starts_with(' ')));
        if i % 2 == 1 && names {
            return Some((piece_end + 1).min(item.len()));
        }
        offset = piece_end + 1;
    }
    None
}

/// Programs a command line starts with (or a `./` path): a quoted span that starts with one,
/// then an argument, is a command an item may say prints something.
const RUNNERS: &str =
    "bash sh zsh python python3 node ruby perl php cargo go make npm npx pytest deno java";

/// The quoted command lines of `item` (normalized) when it says something prints (an output
/// verb anywhere in it): `fixed to print 'Hello, Ann!' when 'sh greet.sh Ann' is called`
/// gives `sh greet.sh Ann`. A span is a command line when it starts with one of [`RUNNERS`]
/// and an argument follows, or with a `./` path.
pub(super) fn commands_said_to_print(item: &str) -> Vec<String> {
    let item = normalize(item);
    let lower = item.to_lowercase();
    let says_prints = words(&lower).any(|w| OUTPUT_VERBS.split_whitespace().any(|v| v == w));
    if !says_prints {
        return Vec::new();
    }
    tokens(&item)
        .into_iter()
        .filter_map(|token| match token {
            Token::Quote { text, .. } => Some(normalize(text)),
            Token::Marker { .. } => None,
        })
        .filter(|span| {
            let mut parts = span.split(' ');
            let first = parts.next().unwrap_or("");
            let argued = parts.next().is_some();
            (RUNNERS.split_whitespace().any(|r| r == first) && argued)
                || (first.starts_with("./") && first.len() > 2)
        })
        .collect()
}

/// What `claim` says a file prints: the file names in it (words with an extension, as
/// `greet.sh`) and the quoted spans after its first output verb
/// (`Fixed greet.sh to print 'Hello, Ann!' when called with 'Ann'` gives `greet.sh` and
/// `Hello, Ann!`, `Ann`). Empty when it has no output verb, no file name or no such span.
pub(super) fn file_output_claims(claim: &str) -> (Vec<String>, Vec<String>) {
    let claim = normalize(claim);
    let tokens = tokens(&claim);
    let verb_at = tokens.iter().find_map(|t| match *t {
        Token::Marker { start, end } => {
            let word = claim[start..end].to_lowercase();
            OUTPUT_VERBS
                .split_whitespace()
                .any(|v| v == word)
                .then_some(end)
        }
        Token::Quote { .. } => None,
    });
    let Some(verb_at) = verb_at else {
        return (Vec::new(), Vec::new());
    };
    let quoted: Vec<String> = tokens
        .iter()
        .filter_map(|t| match *t {
            Token::Quote { start, text } if start >= verb_at => Some(normalize(text)),
            _ => None,
        })
        .filter(|q| !q.is_empty())
        .collect();
    let files: Vec<String> = claim
        .split(|c: char| c.is_whitespace() || "'\"`“”‘’(),;:".contains(c))
        .map(|w| w.trim_end_matches(['.', '!', '?']))
        .filter(|w| is_file_name(w))
        .map(str::to_string)
        .collect();
    (files, quoted)
}

/// Whether `word` looks like a file name: a name, a dot, then an extension of letters and
/// digits (`greet.sh`, `src/app.py`), not a number (`2.5`).
fn is_file_name(word: &str) -> bool {
    let Some((stem, ext)) = word.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && stem
            .chars()
            .all(|c| c.is_alphanumeric() || "_-/.".contains(c))
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic())
}

/// `COMMAND: exit code N` (the command may be in backticks): the command, normalized, and N.
pub(super) fn cited_exit_code(item: &str) -> Option<(String, i64)> {
    let (command, rest) = item.rsplit_once(':')?;
    let code = rest.trim().strip_prefix("exit code")?.trim();
    let code: i64 = code
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .next()?
        .parse()
        .ok()?;
    let command = normalize(command.trim().trim_matches('`'));
    (!command.is_empty()).then_some((command, code))
}

/// Whitespace runs as one space, trimmed.
pub(super) fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether the evidence `item` names `command` (normalized): the whole command appears in it
/// as words, or a `code span` in it is the command or the start of it (a span of one word
/// must be the whole command).
pub(super) fn names_command(item: &str, command: &str) -> bool {
    !command.is_empty() && mention_end(&normalize(item), command).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(text: &str) -> Claim {
        Claim::Quoted(text.into())
    }

    fn said(text: &str) -> Claim {
        Claim::Said(text.into())
    }

    #[test]
    fn claims_follow_the_command_and_a_marker() {
        let cases: [(&str, &str, Vec<Claim>); 9] = [
            (
                "sh greet.sh Ann prints Hello, Ann!",
                "sh greet.sh Ann",
                vec![said("Hello, Ann")],
            ),
            (
                "`sh greet.sh Ann` printed 'Hello, Ann!'",
                "sh greet.sh Ann",
                vec![quoted("Hello, Ann!")],
            ),
            (
                "sh greet.sh Ann: exit code 0, output: \"Hello, Ann!\"",
                "sh greet.sh Ann",
                vec![said("exit code 0"), quoted("Hello, Ann!")],
            ),
            (
                "python3 -m unittest discover -s tests: Ran 7 tests, OK",
                "python3 -m unittest discover -s tests",
                vec![said("Ran 7 tests, OK")],
            ),
            (
                "`cargo test` -> `test result: ok. 3 passed`",
                "cargo test --quiet",
                vec![quoted("test result: ok. 3 passed")],
            ),
            // Only naming the command, or quoting a name before any marker, claims nothing.
            (
                "ran `python3 -m unittest` successfully",
                "python3 -m unittest",
                vec![],
            ),
            ("`make test` passes for `slug.py`", "make test", vec![]),
            // An apostrophe is not a quote; a claim ends at `;`.
            (
                "make test says it's fine; slug.py handles spaces",
                "make test",
                vec![said("it's fine")],
            ),
            // The command's own words are not a claim about its output.
            ("output of sh greet.sh Ann", "sh greet.sh Ann", vec![]),
        ];
        for (item, named, want) in cases {
            assert_eq!(output_claims(item, named), want, "{item}");
        }
    }

    #[test]
    fn a_quote_must_be_in_the_output_and_a_paraphrase_only_its_words() {
        let printed = "exit code 0\nHello, !";
        assert!(!quoted("Hello, Ann!").holds_in(printed));
        assert!(!said("Hello, Ann").holds_in(printed));
        assert!(quoted("hello,   !").holds_in(printed));
        let printed = "exit code 0\n...\n----------------------------------------------------------------------\nRan 7 tests in 0.002s\n\nOK";
        assert!(said("Ran 7 tests, OK").holds_in(printed));
        assert!(said("all tests pass").holds_in(printed));
        assert!(said("exit code 0").holds_in(printed));
        assert!(!said("Ran 9 tests, OK").holds_in(printed));
        assert!(!quoted("Ran 7 tests, OK").holds_in(printed));
        assert!(quoted("Ran 7 tests in 0.002s OK").holds_in(printed));
    }

    #[test]
    fn chained_commands_are_split() {
        assert_eq!(
            chained("sh greet.sh Ann; sh greet.sh"),
            ["sh greet.sh Ann", "sh greet.sh"]
        );
        assert_eq!(chained("make && ./run | head"), ["make", "./run", "head"]);
        assert_eq!(
            chained("python3 -m unittest 2>&1 | tail -3"),
            ["python3 -m unittest 2>&1", "tail -3"]
        );
        assert!(chained("python3 -m unittest").is_empty());
    }

    #[test]
    fn commands_are_named_as_whole_words() {
        assert!(names_command("ran make test: ok", "make test"));
        assert!(!names_command("ran make tests", "make test"));
        assert!(!names_command("the tools are fine", "ls"));
        assert!(names_command("`ls` shows slug.py", "ls"));
        assert!(names_command("`cargo test` passes", "cargo test --quiet"));
        assert!(!names_command("`cargo` works", "cargo test"));
    }
}
