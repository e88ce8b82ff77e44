//! Bare JSON calls in prose: `{"name": ..., "parameters"|"arguments": {...}}` with no tags
//! around it, several in a turn separated by `;`, commas or newlines, sometimes after Llama
//! 3's `<|python_tag|>` token.
//!
//! With no tags, a call is recognised by its shape: an object that starts with `"name"` (or
//! `"type": "function"`) and holds nothing but a name and its arguments. Other JSON in the
//! prose stays prose. After `<|python_tag|>` every object is a call. Llama 3 reads its turns
//! this way, and every JSON family reads the calls it finds loose in prose (`fence`) with it.

use serde_json::Value;

use super::scan::{self, malformed, with_hint, TurnBuilder};

/// The token Llama 3 writes before a call (its `ipython` tool syntax).
pub(crate) const PYTHON_TAG: &str = "<|python_tag|>";
/// Keys a bare call object may hold.
const CALL_KEYS: [&str; 5] = ["name", "parameters", "arguments", "type", "id"];
/// Characters that separate calls (`;`, a JSON array around them) and are not prose.
const SEPARATORS: [char; 4] = [';', ',', '[', ']'];

/// Whether the object at `text[0]` looks like the start of a call.
pub(crate) fn looks_like_call(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('{') else {
        return false;
    };
    let rest = rest.trim_start();
    rest.starts_with("\"name\"") || rest.starts_with("\"type\"")
}

/// Whether a complete JSON value is a call rather than data in the prose.
pub(crate) fn is_call_object(value: &Value) -> bool {
    value.as_object().is_some_and(|map| {
        map.get("name").is_some_and(Value::is_string)
            && map.keys().all(|k| CALL_KEYS.contains(&k.as_str()))
    })
}

/// [`is_call_object`] with its arguments present (`arguments` or `parameters`): the shape a
/// call must have to be read outside a family's own markup.
pub(crate) fn is_full_call_object(value: &Value) -> bool {
    is_call_object(value)
        && value
            .as_object()
            .is_some_and(|map| map.contains_key("arguments") || map.contains_key("parameters"))
}

/// The first place in `text` where a bare call (or `<|python_tag|>`) may start.
pub(crate) fn first_candidate(text: &str) -> Option<usize> {
    next_candidate(text, 0)
}

/// The next place in `text` at or after `from` where a call may start.
fn next_candidate(text: &str, from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let i = at + text.get(at..)?.find(['{', '<'])?;
        if text[i..].starts_with(PYTHON_TAG) || looks_like_call(&text[i..]) {
            return Some(i);
        }
        at = i + 1;
    }
}

/// Scans bare JSON calls (and `<|python_tag|>`) in `text`, adding prose and calls to `turn`.
/// `strict`: an object needs its arguments to be a call ([`is_full_call_object`]); Llama 3's
/// own calls may leave them out.
pub(crate) fn scan_bare(text: &str, turn: &mut TurnBuilder, args_key_hint: &str, strict: bool) {
    let mut bare = BareScan {
        text,
        args_key_hint,
        is_call: if strict {
            is_full_call_object
        } else {
            is_call_object
        },
        prose_from: 0,
        at: 0,
        tagged: false,
        after_call: false,
    };
    while let Some(start) = bare.next_start() {
        let rest = &text[start..];
        if rest.starts_with(PYTHON_TAG) {
            bare.python_tag(turn, start);
            continue;
        }
        let Some(len) = scan::json_extent(rest) else {
            bare.prose_until(turn, start, true);
            let reason = match serde_json::from_str::<Value>(rest) {
                Err(e) => format!("the call's JSON is cut off: {e}"),
                Ok(_) => "the call's JSON is cut off".into(),
            };
            turn.call(malformed(rest, format!("{reason}; {args_key_hint}")), false);
            return;
        };
        bare.object(turn, start, len);
    }
    bare.prose_until(turn, text.len(), false);
}

/// Where a scan of bare calls is in its text.
struct BareScan<'t> {
    text: &'t str,
    args_key_hint: &'t str,
    /// Whether a JSON object is a call.
    is_call: fn(&Value) -> bool,
    /// Where the prose not yet added starts.
    prose_from: usize,
    /// Where to look for the next call.
    at: usize,
    /// Right after `<|python_tag|>`.
    tagged: bool,
    /// The prose not yet added follows a call.
    after_call: bool,
}

impl BareScan<'_> {
    /// Where the next call may start: right after the tag any object is a call, whatever
    /// its first key.
    fn next_start(&self) -> Option<usize> {
        let tagged_start = self
            .tagged
            .then(|| {
                let rest = self.text.get(self.at..)?;
                let gap = rest.len() - rest.trim_start().len();
                rest[gap..].starts_with('{').then_some(self.at + gap)
            })
            .flatten();
        tagged_start.or_else(|| next_candidate(self.text, self.at))
    }

    /// Adds the prose up to `end` to `turn`, without the separators next to calls.
    fn prose_until(&self, turn: &mut TurnBuilder, end: usize, before_call: bool) {
        let mut piece = &self.text[self.prose_from..end];
        if self.after_call {
            piece =
                piece.trim_start_matches(|c: char| c.is_whitespace() || SEPARATORS.contains(&c));
        }
        if before_call {
            piece = piece.trim_end_matches(|c: char| c.is_whitespace() || SEPARATORS.contains(&c));
        }
        turn.text(piece);
    }

    /// `<|python_tag|>` at `start`: a JSON call may follow; anything else up to the line's
    /// end (built-in tool syntax, code) is a malformed call.
    fn python_tag(&mut self, turn: &mut TurnBuilder, start: usize) {
        let text = self.text;
        self.prose_until(turn, start, true);
        self.at = start + PYTHON_TAG.len();
        self.prose_from = self.at;
        self.tagged = true;
        let next = text[self.at..].trim_start();
        if !next.is_empty() && !next.starts_with('{') {
            // Built-in tool syntax (`brave_search.call(...)`) or code: not offered here.
            let line_end = next.find('\n');
            let raw = &next[..line_end.unwrap_or(next.len())];
            turn.call(
                malformed(
                    raw,
                    format!(
                        "after <|python_tag|> only a JSON call is understood; {}",
                        self.args_key_hint
                    ),
                ),
                line_end.is_some(),
            );
            self.at = text.len() - next.len() + raw.len();
            self.prose_from = self.at;
            self.after_call = true;
            self.tagged = false;
        }
    }

    /// The whole JSON value of `len` bytes at `start`: a call (or a malformed one) ends the
    /// prose before it; JSON that is not a call stays in the prose.
    fn object(&mut self, turn: &mut TurnBuilder, start: usize, len: usize) {
        let raw = &self.text[start..start + len];
        let call = match serde_json::from_str::<Value>(raw) {
            Ok(value) if self.tagged || (self.is_call)(&value) => {
                scan::call_from_value(&value, raw)
            }
            Ok(_) => {
                self.at = start + len;
                return;
            }
            Err(e) => malformed(raw, format!("the tool call is not valid JSON: {e}")),
        };
        self.prose_until(turn, start, true);
        turn.call(with_hint(call, self.args_key_hint), true);
        self.after_call = true;
        self.tagged = false;
        self.at = start + len;
        self.prose_from = self.at;
    }
}
