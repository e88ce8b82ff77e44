//! The round report: the only conversational state that crosses rounds.
//!
//! `assets/report.schema.json` is the single source of truth for its shape, checked with
//! `jsonschema`; the status rules and the serialized-size cap sit beside it here. The same
//! `validate` runs inside the child's `ralph_report` tool and again at the engine boundary,
//! and a rejection names the rule that failed. Nothing is ever truncated.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most bytes a serialized report may take.
pub const MAX_REPORT_BYTES: usize = 16_384;

/// The schema text, as shipped in `assets/`.
pub const REPORT_SCHEMA: &str = include_str!("../../assets/report.schema.json");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    Continue,
    Complete,
    Blocked,
}

impl ReportStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Complete => "complete",
            Self::Blocked => "blocked",
        }
    }
}

/// A validated report. Only `validate` builds one from untrusted input.
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rejection(pub String);

fn schema_validator() -> Result<&'static jsonschema::Validator, Rejection> {
    static VALIDATOR: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let schema: Value = serde_json::from_str(REPORT_SCHEMA).map_err(|e| e.to_string())?;
            jsonschema::validator_for(&schema).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Rejection(format!("internal: the report schema does not load: {e}")))
}

/// The schema as a JSON value (for tool specs and grammars).
pub fn schema_value() -> Value {
    serde_json::from_str(REPORT_SCHEMA).unwrap_or(Value::Null)
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

/// Validates untrusted report JSON: schema, then text rules, then status rules, then size.
pub fn validate(value: &Value) -> Result<Report, Rejection> {
    let validator = schema_validator()?;
    if let Some(error) = validator.iter_errors(value).next() {
        let at = error.instance_path.to_string();
        let place = if at.is_empty() {
            "the report".to_string()
        } else {
            format!("field {at}")
        };
        return Err(Rejection(format!(
            "schema: {place}: {error} (a report is an object with exactly status, summary, evidence, next_steps, blocker)"
        )));
    }
    let report: Report =
        serde_json::from_value(value.clone()).map_err(|e| Rejection(format!("schema: {e}")))?;
    check_rules(&report)?;
    Ok(report)
}

/// The rules beyond the schema, shared by `validate` and the engine boundary.
pub fn check_rules(report: &Report) -> Result<(), Rejection> {
    check_text("summary", &report.summary, false)?;
    check_list("evidence", &report.evidence)?;
    check_list("next_steps", &report.next_steps)?;
    check_text("blocker", &report.blocker, true)?;
    match report.status {
        ReportStatus::Continue => {
            if report.next_steps.is_empty() {
                return Err(Rejection(
                    "status continue needs at least one next step".into(),
                ));
            }
            if !report.blocker.is_empty() {
                return Err(Rejection("status continue needs an empty blocker".into()));
            }
        }
        ReportStatus::Complete => {
            if report.evidence.is_empty() {
                return Err(Rejection(
                    "status complete needs at least one piece of evidence".into(),
                ));
            }
            if !report.next_steps.is_empty() {
                return Err(Rejection("status complete needs no next steps".into()));
            }
            if !report.blocker.is_empty() {
                return Err(Rejection("status complete needs an empty blocker".into()));
            }
        }
        ReportStatus::Blocked => {
            if report.blocker.is_empty() {
                return Err(Rejection("status blocked needs a non-empty blocker".into()));
            }
        }
    }
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
    use serde_json::json;

    fn base(status: &str) -> Value {
        json!({"status": status, "summary": "did a thing", "evidence": ["ran tests"], "next_steps": [], "blocker": ""})
    }

    #[test]
    fn complete_with_evidence_is_accepted() {
        let r = validate(&base("complete")).unwrap();
        assert_eq!(r.status, ReportStatus::Complete);
    }

    #[test]
    fn each_rule_names_itself() {
        let mut v = base("continue");
        assert!(validate(&v).unwrap_err().0.contains("next step"));
        v["next_steps"] = json!(["x"]);
        v["blocker"] = json!("no");
        assert!(validate(&v).unwrap_err().0.contains("empty blocker"));
        let mut v = base("complete");
        v["evidence"] = json!([]);
        assert!(validate(&v).unwrap_err().0.contains("evidence"));
        let mut v = base("blocked");
        assert!(validate(&v).unwrap_err().0.contains("blocker"));
        v["blocker"] = json!(" padded");
        assert!(validate(&v).unwrap_err().0.contains("whitespace"));
        let mut v = base("complete");
        v["extra"] = json!(1);
        assert!(validate(&v).unwrap_err().0.starts_with("schema"));
        let mut v = base("complete");
        v["status"] = json!("done");
        assert!(validate(&v).unwrap_err().0.starts_with("schema"));
        let mut v = base("complete");
        v["summary"] = json!("");
        assert!(validate(&v).is_err());
    }

    #[test]
    fn oversized_is_rejected_not_truncated() {
        let mut v = base("complete");
        v["summary"] = json!("x".repeat(MAX_REPORT_BYTES));
        let err = validate(&v).unwrap_err();
        assert!(err.0.contains("limit is 16384"), "{err}");
        // Just under the cap passes.
        let overhead = serialized_len(&validate(&base("complete")).unwrap()) - "did a thing".len();
        v["summary"] = json!("x".repeat(MAX_REPORT_BYTES - overhead));
        let ok = validate(&v).unwrap();
        assert_eq!(serialized_len(&ok), MAX_REPORT_BYTES);
    }
}
