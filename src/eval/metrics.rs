//! What one run's event stream says: status, tokens, rounds, repeated discovery and what the
//! round context (the check, the observation) did.
//!
//! Everything here reads the JSON Lines that `ralph-tui --headless` prints, as plain JSON
//! values rather than the engine's own types, so the harness measures the public contract and
//! tolerates fields added to it later. Pure functions, no I/O.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::tool::{LIST_DIR, READ_FILE, SEARCH};

/// The tools that only look at the workspace; repeating one of these is repeated discovery.
pub const DISCOVERY_TOOLS: [&str; 3] = [READ_FILE, LIST_DIR, SEARCH];

/// Discovery calls of one run, and how many of them an earlier round had already made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Discovery {
    /// Every `read_file`, `list_dir` and `search` call.
    pub calls: u32,
    /// Calls with the same name and arguments as a call made in an earlier round of the run.
    pub repeated: u32,
}

impl Discovery {
    /// The repeated share, or `None` when there were no discovery calls.
    pub fn share(&self) -> Option<f64> {
        ratio(self.repeated, self.calls)
    }
}

/// `part / whole`, or `None` when `whole` is zero.
pub fn ratio(part: u32, whole: u32) -> Option<f64> {
    (whole > 0).then(|| f64::from(part) / f64::from(whole))
}

/// Counts repeated discovery as tool calls arrive in order.
#[derive(Debug, Default)]
pub struct DiscoveryTracker {
    /// Canonical call → the first round that made it.
    first_round: HashMap<String, u32>,
    counts: Discovery,
}

impl DiscoveryTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one tool call; calls to other tools are ignored.
    pub fn record(&mut self, round: u32, name: &str, arguments: &Value) {
        if !DISCOVERY_TOOLS.contains(&name) {
            return;
        }
        self.counts.calls += 1;
        let key = format!("{name} {}", canonical_json(arguments));
        match self.first_round.get(&key) {
            Some(&first) if first < round => self.counts.repeated += 1,
            Some(_) => {}
            None => {
                self.first_round.insert(key, round);
            }
        }
    }

    pub fn counts(&self) -> Discovery {
        self.counts
    }
}

/// JSON text with every object's keys sorted, so equal arguments compare equal whatever
/// order the model wrote them in.
pub fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String(k.clone()),
                        canonical_json(&map[k.as_str()])
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// What the round context did in one run, from its `check_finished` and `round_observed`
/// events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundContextFigures {
    /// Rounds that were given the workspace observation.
    pub observed_rounds: u32,
    /// The check command the engine ran (what `--check auto` picked), when a check ran.
    pub check_command: Option<String>,
    /// Check runs, at rounds' starts and on `complete` claims.
    pub check_runs: u32,
    /// The verdict on the starting tree (the first round's start) and of the last check run:
    /// `passed`, `failed`, `no_tests`, `timed_out`, `not_run`.
    pub first_verdict: Option<String>,
    pub last_verdict: Option<String>,
    /// `complete` claims the check refused (a claim's check that did not pass).
    pub claims_refused: u32,
}

impl RoundContextFigures {
    /// Records one `check_finished` event.
    fn record_check(&mut self, event: &Value) {
        let check = event.get("check").unwrap_or(&Value::Null);
        let verdict = str_field(check, "verdict");
        if self.check_runs == 0 {
            self.first_verdict.clone_from(&verdict);
        }
        self.check_runs += 1;
        if self.check_command.is_none() {
            self.check_command = str_field(check, "command");
        }
        if event.get("at").and_then(Value::as_str) == Some("claim")
            && verdict.as_deref() != Some("passed")
        {
            self.claims_refused += 1;
        }
        self.last_verdict = verdict;
    }
}

/// What one run's events add up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    /// `run_finished.status`; `None` when the run never finished (it crashed or was killed).
    pub status: Option<String>,
    /// The status of the worker's last valid report, if it filed one.
    pub report_status: Option<String>,
    /// `run_finished.error`.
    pub error: Option<String>,
    /// `run_finished.rounds_started`, else the number of `round_started` events.
    pub rounds_used: u32,
    /// Sums over `round_finished`.
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    /// Every tool call, `ralph_report` and malformed calls included.
    pub tool_calls: u32,
    pub discovery: Discovery,
    /// Turns generated (`turn_finished`), and those after which no call came.
    pub turns: u32,
    pub turns_without_call: u32,
    /// Turns that wrote a call opening (a ```json fence, `{"name"`, `<tool_call>`) and yet
    /// no call came: calls lost to format.
    pub calls_lost: u32,
    /// Identical calls the loop guard refused to run again.
    pub repeats_refused: u32,
    /// Rounds whose wrap-up began for repetition.
    pub repetition_wrap_ups: u32,
    pub round_context: RoundContextFigures,
    /// Lines that were not JSON objects.
    pub bad_lines: u32,
}

fn u64_field(event: &Value, key: &str) -> u64 {
    event.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn u32_field(event: &Value, key: &str) -> u32 {
    u32::try_from(u64_field(event, key)).unwrap_or(u32::MAX)
}

fn str_field(event: &Value, key: &str) -> Option<String> {
    event.get(key).and_then(Value::as_str).map(String::from)
}

/// What opens a call in the shapes the formats read: a fence, a bare object, Hermes tags.
const CALL_OPENINGS: [&str; 4] = ["```json", "{\"name\"", "{ \"name\"", "<tool_call>"];

/// Reads a whole run's JSON Lines.
pub fn parse_events(text: &str) -> RunMetrics {
    let mut metrics = RunMetrics::default();
    let mut tracker = DiscoveryTracker::new();
    let mut rounds_started = 0;
    let mut finished_rounds = None;
    let mut turn_open = false;
    let mut wrote_call = false;
    let mut turn_text = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let event: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                metrics.bad_lines += 1;
                continue;
            }
        };
        let kind = event.get("type").and_then(Value::as_str);
        // A turn's calls come after its `turn_finished`: a turn that is followed by another
        // turn, or by the round's end, with no call in between called nothing.
        if matches!(kind, Some("turn_finished" | "round_finished")) && turn_open {
            metrics.turns_without_call += 1;
            if wrote_call {
                metrics.calls_lost += 1;
            }
        }
        match kind {
            Some("round_started") => rounds_started += 1,
            Some("check_finished") => metrics.round_context.record_check(&event),
            Some("round_observed") => metrics.round_context.observed_rounds += 1,
            Some("token") => {
                turn_text.push_str(event.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Some("turn_finished") => {
                metrics.turns += 1;
                turn_open = true;
                wrote_call = CALL_OPENINGS.iter().any(|o| turn_text.contains(o));
                turn_text.clear();
            }
            Some("tool_result")
                if event
                    .get("output")
                    .and_then(Value::as_str)
                    .is_some_and(|o| o.starts_with("not run again")) =>
            {
                metrics.repeats_refused += 1;
            }
            Some("wrap_up")
                if event.get("reason").and_then(Value::as_str) == Some("repetition") =>
            {
                metrics.repetition_wrap_ups += 1;
            }
            Some("tool_call") => {
                turn_open = false;
                metrics.tool_calls += 1;
                let name = event.get("name").and_then(Value::as_str).unwrap_or("");
                let arguments = event.get("arguments").unwrap_or(&Value::Null);
                tracker.record(u32_field(&event, "round"), name, arguments);
            }
            Some("round_finished") => {
                turn_open = false;
                metrics.prompt_tokens += u64_field(&event, "prompt_tokens");
                metrics.generated_tokens += u64_field(&event, "generated_tokens");
            }
            Some("run_finished") => {
                metrics.status = str_field(&event, "status");
                metrics.error = str_field(&event, "error");
                finished_rounds = Some(u32_field(&event, "rounds_started"));
                metrics.report_status = ["report", "last_valid_report"]
                    .iter()
                    .find_map(|key| event.get(*key).and_then(|r| str_field(r, "status")));
            }
            _ => {}
        }
    }
    metrics.rounds_used = finished_rounds.unwrap_or(rounds_started);
    metrics.discovery = tracker.counts();
    metrics
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn turns_without_a_call_and_refused_repeats_are_counted() {
        let lines = [
            json!({"type": "round_started", "round": 1}),
            json!({"type": "turn_finished", "round": 1}),
            json!({"type": "token", "round": 1, "text": "```json\n{\"name\": \"x\""}),
            json!({"type": "turn_finished", "round": 1}),
            json!({"type": "tool_call", "round": 1, "name": "read_file", "arguments": {"path": "a"}}),
            json!({"type": "tool_result", "round": 1, "name": "read_file", "ok": false, "output": "no such file"}),
            json!({"type": "turn_finished", "round": 1}),
            json!({"type": "tool_call", "round": 1, "name": "read_file", "arguments": {"path": "a"}}),
            json!({"type": "tool_result", "round": 1, "name": "read_file", "ok": false, "output": "not run again: ..."}),
            json!({"type": "wrap_up", "round": 1, "reason": "repetition"}),
            json!({"type": "turn_finished", "round": 1}),
            json!({"type": "round_finished", "round": 1}),
        ];
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        let m = parse_events(&text.join("\n"));
        assert_eq!((m.turns, m.turns_without_call), (4, 2));
        // The second turn wrote a fence and its call came; the first wrote nothing.
        assert_eq!(m.calls_lost, 0);
        let lost = format!(
            "{}\n{}\n{}",
            json!({"type": "token", "round": 1, "text": "<tool_call>{\"name\""}),
            json!({"type": "turn_finished", "round": 1}),
            json!({"type": "round_finished", "round": 1}),
        );
        assert_eq!(parse_events(&lost).calls_lost, 1);
        assert_eq!((m.repeats_refused, m.repetition_wrap_ups), (1, 1));
    }

    #[test]
    fn only_earlier_rounds_make_a_call_repeated() {
        let mut t = DiscoveryTracker::new();
        t.record(1, "list_dir", &json!({"path": "."}));
        t.record(1, "list_dir", &json!({"path": "."}));
        t.record(1, "run_command", &json!({"command": "ls"}));
        t.record(2, "list_dir", &json!({"path": "."}));
        t.record(2, "read_file", &json!({"path": "a", "limit": 5}));
        t.record(3, "read_file", &json!({"limit": 5, "path": "a"}));
        t.record(3, "read_file", &json!({"path": "a"}));
        assert_eq!(
            t.counts(),
            Discovery {
                calls: 6,
                repeated: 2
            }
        );
    }

    #[test]
    fn canonical_json_sorts_nested_keys() {
        assert_eq!(
            canonical_json(&json!({"b": [{"d": 1, "c": "x"}], "a": null})),
            r#"{"a":null,"b":[{"c":"x","d":1}]}"#
        );
    }

    #[test]
    fn events_add_up() {
        let lines = [
            json!({"type": "run_started"}).to_string(),
            json!({"type": "round_started", "round": 1}).to_string(),
            json!({"type": "tool_call", "round": 1, "name": "search", "arguments": {"pattern": "x"}}).to_string(),
            json!({"type": "round_finished", "round": 1, "prompt_tokens": 100, "generated_tokens": 7}).to_string(),
            "not json".to_string(),
            json!({"type": "round_started", "round": 2}).to_string(),
            json!({"type": "tool_call", "round": 2, "name": "search", "arguments": {"pattern": "x"}}).to_string(),
            json!({"type": "round_finished", "round": 2, "prompt_tokens": 50, "generated_tokens": 3}).to_string(),
            json!({"type": "run_finished", "status": "budget-limited", "rounds_started": 2, "report": null,
                   "last_valid_report": {"status": "continue"}, "error": null}).to_string(),
        ];
        let m = parse_events(&lines.join("\n"));
        assert_eq!(m.status.as_deref(), Some("budget-limited"));
        assert_eq!(m.report_status.as_deref(), Some("continue"));
        assert_eq!(m.rounds_used, 2);
        assert_eq!((m.prompt_tokens, m.generated_tokens), (150, 10));
        assert_eq!(m.tool_calls, 2);
        assert_eq!(m.discovery.share(), Some(0.5));
        assert_eq!(m.bad_lines, 1);
    }

    #[test]
    fn the_checks_and_observations_are_counted() {
        let check = |at: &str, verdict: &str| {
            json!({"type": "check_finished", "round": 1, "at": at, "check": {
                "command": "python3 -m unittest", "exit_code": 1, "verdict": verdict,
                "note": "", "wall_ms": 40, "output": "FAILED"}})
        };
        let lines = [
            json!({"type": "round_started", "round": 1}),
            check("round_start", "failed"),
            json!({"type": "round_observed", "round": 1, "files_listed": 3, "files_unlisted": 0,
                   "shown": [], "check": "failed", "text": "files: a.py"}),
            check("claim", "failed"),
            json!({"type": "round_started", "round": 2}),
            check("round_start", "failed"),
            json!({"type": "round_observed", "round": 2}),
            check("claim", "passed"),
        ];
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        let c = parse_events(&text.join("\n")).round_context;
        assert_eq!(c.observed_rounds, 2);
        assert_eq!((c.check_runs, c.claims_refused), (4, 1));
        assert_eq!(c.check_command.as_deref(), Some("python3 -m unittest"));
        assert_eq!(c.first_verdict.as_deref(), Some("failed"));
        assert_eq!(c.last_verdict.as_deref(), Some("passed"));
        assert_eq!(
            parse_events("").round_context,
            RoundContextFigures::default()
        );
    }

    #[test]
    fn an_unfinished_run_counts_its_rounds() {
        let text = format!(
            "{}\n{}\n",
            json!({"type": "round_started", "round": 1}),
            json!({"type": "round_started", "round": 2})
        );
        let m = parse_events(&text);
        assert_eq!(m.status, None);
        assert_eq!(m.rounds_used, 2);
    }
}
