//! The round report: the only conversational state that crosses rounds, and its rules.
//!
//! `assets/report.schema.json` is the single source of truth for its shape (the engine checks
//! untrusted input against it with `jsonschema`). Every rule beyond the shape lives here, once:
//! the per-status field table ([`StatusRule`]), the text rules, the serialized-size cap, the
//! field order and the bounds the sampling grammar writes within. The grammar and the call
//! scanner read them from here; tests below check them against the schema and the cap.

use serde::{Deserialize, Serialize};

/// Most bytes a serialized report may take.
pub const MAX_REPORT_BYTES: usize = 16_384;

/// The schema text, as shipped in `assets/`.
pub const REPORT_SCHEMA: &str = include_str!("../../assets/report.schema.json");

/// The report's fields in schema order: the order its sampling grammar enforces.
pub const REPORT_FIELDS: [&str; 5] = ["status", "summary", "evidence", "next_steps", "blocker"];

/// Most characters of the report's summary the sampling grammar lets the model write.
pub const REPORT_SUMMARY_MAX: usize = 400;
/// Most characters of one evidence item or next step, under the grammar.
pub const REPORT_ITEM_MAX: usize = 160;
/// Most evidence items, and most next steps, under the grammar.
pub const REPORT_ITEMS_MAX: usize = 5;
/// Most characters of the blocker, under the grammar.
pub const REPORT_BLOCKER_MAX: usize = 300;

/// Most characters of a report call the grammar lets the model write, with the strings and
/// lists at their bounds: the summary, ten items (five evidence, five next steps), the
/// blocker, plus [`REPORT_CALL_OVERHEAD_CHARS`] for keys, quotes, commas and the call's own
/// markup.
pub const REPORT_MAX_CHARS: usize = REPORT_SUMMARY_MAX
    + 2 * REPORT_ITEMS_MAX * (REPORT_ITEM_MAX + 4)
    + REPORT_BLOCKER_MAX
    + REPORT_CALL_OVERHEAD_CHARS;
/// Characters of a report call that are not its text: the five keys with their quotes and
/// colons, the status word, brackets, commas, and a call's markup (`<tool_call>{"name":
/// "ralph_report", "arguments": ...}</tool_call>` is the longest of the families').
pub const REPORT_CALL_OVERHEAD_CHARS: usize = 160;
/// Characters per token assumed for report text: English prose and JSON punctuation run at
/// about four characters a token with the tokenizers of common open models.
pub const REPORT_CHARS_PER_TOKEN: usize = 4;
/// Tokens of context kept free for the round's report: nothing else may spend them (turn
/// caps, [`TURN_MARGIN_TOKENS`], the engine's cuts before a wrap-up), and a wrap-up turn
/// always has at least this much. The figure is a report at every full bound at
/// [`REPORT_CHARS_PER_TOKEN`]; the wrap-up's grammar, though, is bounded by the room actually
/// left counted at its worst case of a token a byte ([`ReportBounds::within`]), so at the
/// bare reserve it asks for a shorter report, and the report always fits. A typical report
/// is far smaller: with SmolLM2-135M a report-only turn of the demo took 101 to 431 tokens
/// (median 180). The wrap-up turn may also use whatever else is left of the context.
pub const REPORT_RESERVE_TOKENS: u32 = REPORT_MAX_CHARS.div_ceil(REPORT_CHARS_PER_TOKEN) as u32;

/// Tokens kept free beside the report's reserve after every ordinary turn: the wrap-up's
/// instruction and the short messages that may come before it (a cut result's note, an error
/// echo, a reminder). A normal turn's generation is capped so that the reserve and this
/// margin are still free when it ends ([`turn_cap`]).
pub const TURN_MARGIN_TOKENS: u32 = 256;

/// Most tokens an ordinary turn may generate: `--max-tokens`, and never so many that the
/// report's reserve and the turn margin would not be free afterwards (0: no ordinary turn
/// fits, the next turn must be the wrap-up).
pub fn turn_cap(ctx_size: u32, prompt_tokens: u32, max_tokens: u32) -> u32 {
    ctx_size
        .saturating_sub(prompt_tokens)
        .saturating_sub(REPORT_RESERVE_TOKENS + TURN_MARGIN_TOKENS)
        .min(max_tokens)
}

/// How long each part of a report may be under the sampling grammar or schema of one
/// wrap-up: [`ReportBounds::FULL`] when the context has room, shorter strings and fewer items
/// when it is short ([`ReportBounds::within`]), so the whole report call fits what is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportBounds {
    /// Most characters of the summary.
    pub summary: usize,
    /// Most characters of one evidence item or next step.
    pub item: usize,
    /// Most evidence items, and most next steps.
    pub items: usize,
    /// Most characters of the blocker.
    pub blocker: usize,
}

impl ReportBounds {
    /// The bounds of a report with room to spare.
    pub const FULL: Self = Self {
        summary: REPORT_SUMMARY_MAX,
        item: REPORT_ITEM_MAX,
        items: REPORT_ITEMS_MAX,
        blocker: REPORT_BLOCKER_MAX,
    };
    /// The smallest bounds: still a sentence of summary and one item of each list.
    pub const MIN: Self = Self {
        summary: 40,
        item: 24,
        items: 1,
        blocker: 24,
    };

    /// Most characters of report text within these bounds (every string of the widest
    /// status at its bound: summary, both lists full, blocker).
    pub fn text_chars(&self) -> usize {
        self.summary + 2 * self.items * self.item + self.blocker
    }

    /// The widest bounds whose text takes at most `chars` characters, never below
    /// [`ReportBounds::MIN`]: full when they fit; else a third for the summary, a sixth for
    /// the blocker, and the rest for as many items of about 100 characters as it holds (one
    /// at least, for the statuses that need one).
    pub fn within(chars: usize) -> Self {
        if chars >= Self::FULL.text_chars() {
            return Self::FULL;
        }
        let min = Self::MIN;
        let summary = (chars / 3).clamp(min.summary, REPORT_SUMMARY_MAX);
        let blocker = (chars / 6).clamp(min.blocker, REPORT_BLOCKER_MAX);
        let rest = chars.saturating_sub(summary + blocker);
        let items = (rest / 200).clamp(min.items, REPORT_ITEMS_MAX);
        let item = (rest / (2 * items)).clamp(min.item, REPORT_ITEM_MAX);
        Self {
            summary,
            item,
            items,
            blocker,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    Continue,
    Complete,
    Blocked,
}

impl ReportStatus {
    pub const ALL: [ReportStatus; 3] = [Self::Continue, Self::Complete, Self::Blocked];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Complete => "complete",
            Self::Blocked => "blocked",
        }
    }

    /// What this status asks of the other fields.
    pub fn rule(self) -> StatusRule {
        use Need::*;
        match self {
            Self::Continue => StatusRule {
                status: self,
                evidence: Any,
                next_steps: NonEmpty,
                blocker: Empty,
            },
            Self::Complete => StatusRule {
                status: self,
                evidence: NonEmpty,
                next_steps: Empty,
                blocker: Empty,
            },
            Self::Blocked => StatusRule {
                status: self,
                evidence: Any,
                next_steps: Any,
                blocker: NonEmpty,
            },
        }
    }
}

/// Whether a status needs a field empty, non-empty, or either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Empty,
    NonEmpty,
    Any,
}

/// The per-status rule: the one table `check_rules` and the sampling grammar both follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusRule {
    pub status: ReportStatus,
    pub evidence: Need,
    pub next_steps: Need,
    pub blocker: Need,
}

/// A validated report. Only the engine's `validate` builds one from untrusted input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub status: ReportStatus,
    pub summary: String,
    pub evidence: Vec<String>,
    pub next_steps: Vec<String>,
    pub blocker: String,
}

/// Why a report was rejected: one rule, said plainly enough for the child to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection(pub String);

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Rejection {}

/// The schema as a JSON value (for tool specs and grammars).
pub fn schema_value() -> serde_json::Value {
    serde_json::from_str(REPORT_SCHEMA).unwrap_or(serde_json::Value::Null)
}

fn check_text(field: &str, text: &str, may_be_empty: bool) -> Result<(), Rejection> {
    if text.is_empty() {
        if may_be_empty {
            return Ok(());
        }
        return Err(Rejection(format!("{field} must not be empty")));
    }
    if text.trim() != text {
        return Err(Rejection(format!(
            "{field} must not start or end with whitespace"
        )));
    }
    Ok(())
}

fn check_list(field: &str, items: &[String]) -> Result<(), Rejection> {
    for (i, item) in items.iter().enumerate() {
        check_text(&format!("{field}[{i}]"), item, false)?;
    }
    Ok(())
}

/// Checks one field's emptiness against what the status needs.
fn check_need(
    status: ReportStatus,
    need: Need,
    is_empty: bool,
    needs_some: &str,
    needs_none: &str,
) -> Result<(), Rejection> {
    let phrase = match need {
        Need::NonEmpty if is_empty => needs_some,
        Need::Empty if !is_empty => needs_none,
        _ => return Ok(()),
    };
    Err(Rejection(format!(
        "status {} needs {phrase}",
        status.as_str()
    )))
}

/// The rules beyond the schema: text, status (from [`ReportStatus::rule`]), then size.
pub fn check_rules(report: &Report) -> Result<(), Rejection> {
    check_text("summary", &report.summary, false)?;
    check_list("evidence", &report.evidence)?;
    check_list("next_steps", &report.next_steps)?;
    check_text("blocker", &report.blocker, true)?;
    let rule = report.status.rule();
    check_need(
        report.status,
        rule.evidence,
        report.evidence.is_empty(),
        "at least one piece of evidence",
        "no evidence",
    )?;
    check_need(
        report.status,
        rule.next_steps,
        report.next_steps.is_empty(),
        "at least one next step",
        "no next steps",
    )?;
    check_need(
        report.status,
        rule.blocker,
        report.blocker.is_empty(),
        "a non-empty blocker",
        "an empty blocker",
    )?;
    let size = serialized_len(report);
    if size > MAX_REPORT_BYTES {
        return Err(Rejection(format!(
            "the report is {size} bytes serialized; the limit is {MAX_REPORT_BYTES}: shorten it"
        )));
    }
    Ok(())
}

/// Serialized size in bytes (compact JSON), the measure the cap applies to.
pub fn serialized_len(report: &Report) -> usize {
    serde_json::to_vec(report)
        .map(|v| v.len())
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn fields_and_statuses_match_the_schema() {
        let schema = schema_value();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(required, REPORT_FIELDS);
        let properties: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted_fields = REPORT_FIELDS.to_vec();
        sorted_fields.sort_unstable();
        let mut sorted_properties = properties.clone();
        sorted_properties.sort_unstable();
        assert_eq!(sorted_properties, sorted_fields);
        let statuses: Vec<&str> = schema["properties"]["status"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let ours: Vec<&str> = ReportStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(statuses, ours);
        for status in ReportStatus::ALL {
            assert_eq!(status.rule().status, status);
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                Value::from(status.as_str())
            );
        }
    }

    #[test]
    fn report_bounds_grow_with_the_room_and_keep_within_it() {
        assert_eq!(ReportBounds::within(usize::MAX), ReportBounds::FULL);
        assert_eq!(
            ReportBounds::within(ReportBounds::FULL.text_chars()),
            ReportBounds::FULL
        );
        assert_eq!(ReportBounds::within(0), ReportBounds::MIN);
        let mut previous = ReportBounds::MIN.text_chars();
        for chars in (ReportBounds::MIN.text_chars()..=ReportBounds::FULL.text_chars()).step_by(7) {
            let bounds = ReportBounds::within(chars);
            assert!(bounds.text_chars() <= chars, "{chars}: {bounds:?}");
            assert!(bounds.text_chars() + 16 >= previous, "{chars}: {bounds:?}");
            assert!(bounds.summary >= ReportBounds::MIN.summary && bounds.items >= 1);
            previous = bounds.text_chars();
        }
    }

    #[test]
    fn an_ordinary_turn_leaves_the_reserve_and_the_margin_free() {
        let tail = REPORT_RESERVE_TOKENS + TURN_MARGIN_TOKENS;
        assert_eq!(turn_cap(4096, 1000, 384), 384);
        assert_eq!(turn_cap(4096, 4096 - tail - 100, 384), 100);
        assert_eq!(turn_cap(4096, 4096 - tail, 384), 0);
        assert_eq!(turn_cap(4096, 5000, 384), 0);
    }

    #[test]
    fn the_largest_report_the_grammar_allows_fits_the_cap() {
        // A character the grammar allows may serialize as a six-byte `\uXXXX` escape.
        let widest = |chars: usize| "\u{1}".repeat(chars);
        let items = vec![widest(REPORT_ITEM_MAX); REPORT_ITEMS_MAX];
        let report = Report {
            status: ReportStatus::Continue,
            summary: widest(REPORT_SUMMARY_MAX),
            evidence: items.clone(),
            next_steps: items,
            blocker: widest(REPORT_BLOCKER_MAX),
        };
        let size = serialized_len(&report);
        assert!(size <= MAX_REPORT_BYTES, "{size} bytes");
    }

    #[test]
    fn each_status_rule_is_enforced() {
        let ok = |status| Report {
            status,
            summary: "s".into(),
            evidence: match status {
                ReportStatus::Complete => vec!["e".into()],
                _ => Vec::new(),
            },
            next_steps: match status {
                ReportStatus::Continue => vec!["n".into()],
                _ => Vec::new(),
            },
            blocker: match status {
                ReportStatus::Blocked => "b".into(),
                _ => String::new(),
            },
        };
        for status in ReportStatus::ALL {
            let report = ok(status);
            check_rules(&report).unwrap();
            let rule = status.rule();
            let mut flipped = report.clone();
            flipped.evidence = if report.evidence.is_empty() {
                vec!["e".into()]
            } else {
                Vec::new()
            };
            assert_eq!(
                check_rules(&flipped).is_ok(),
                rule.evidence == Need::Any,
                "{status:?} evidence"
            );
            let mut flipped = report.clone();
            flipped.next_steps = if report.next_steps.is_empty() {
                vec!["n".into()]
            } else {
                Vec::new()
            };
            assert_eq!(
                check_rules(&flipped).is_ok(),
                rule.next_steps == Need::Any,
                "{status:?} next_steps"
            );
            let mut flipped = report.clone();
            flipped.blocker = if report.blocker.is_empty() {
                "b".into()
            } else {
                String::new()
            };
            assert_eq!(
                check_rules(&flipped).is_ok(),
                rule.blocker == Need::Any,
                "{status:?} blocker"
            );
        }
    }
}
