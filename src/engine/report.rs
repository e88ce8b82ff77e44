//! The report check at the trust boundary: untrusted JSON against the one schema in
//! `assets/`, then the rules in `protocol::report`.
//!
//! The same `validate` runs inside the child's `ralph_report` tool and again at the engine
//! boundary, and a rejection names the rule that failed. Nothing is ever truncated.

use std::sync::OnceLock;

use serde_json::Value;

use crate::protocol::report::{check_rules, Rejection, Report, REPORT_SCHEMA};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::report::{serialized_len, ReportStatus, MAX_REPORT_BYTES};
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
