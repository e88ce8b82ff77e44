//! Rounds that always hand off, through the binary with the script backend: a round that
//! runs out of turns or budget gets a wrap-up turn and hands its report to the next round; a
//! tool result too large for what is left of the context is cut and the round goes on; a round
//! prompt with no room for the report is refused before anything is written.

use std::path::Path;

use serde_json::{json, Value};

use ralph_tui::llm::script::pieces;

use super::common::*;

/// Runs a script (`extra_script` merged into its top-level object) with `args`.
fn run(repo: &TempRepo, rounds: Vec<Value>, extra_script: Value, args: &[&str]) -> Run {
    run_script_with(repo, rounds, extra_script, args)
}

fn stderr(run: &Run) -> String {
    String::from_utf8_lossy(&run.out.stderr).into_owned()
}

/// Position of the first event matching `pred`.
fn position(events: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    events
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no such event in {events:#?}"))
}

fn prompt_of(run_dir: &Path, round: u32) -> String {
    std::fs::read_to_string(run_dir.join(format!("rounds/{round:02}/prompt.json"))).unwrap()
}

#[test]
fn a_round_that_uses_every_turn_wraps_up_and_hands_its_report_to_the_next_round() {
    let repo = TempRepo::new();
    let run = run(
        &repo,
        vec![
            turns(&[
                call("list_dir", json!({"path": "."})),
                "Let me think about it some more.".into(),
                continue_report("wrapped up after three turns"),
            ]),
            turns(&[complete_report("done in round two")]),
        ],
        json!({}),
        &["--max-turns", "3", "objective"],
    );
    assert_eq!(code(&run.out), 0, "{}", stderr(&run));
    let wrap_ups = of_type(&run.events, "wrap_up");
    assert_eq!(wrap_ups.len(), 1, "{:#?}", run.events);
    assert_eq!(wrap_ups[0]["round"], 1);
    assert_eq!(wrap_ups[0]["reason"], "turns");
    // The wrap-up comes before the last turn, whose report is accepted.
    let wrap_at = position(&run.events, |e| e["type"] == "wrap_up");
    let report_call = position(&run.events, |e| {
        e["type"] == "tool_call" && e["name"] == "ralph_report"
    });
    let last_think = run
        .events
        .iter()
        .rposition(|e| e["type"] == "token" && e["text"].as_str().unwrap().contains("more."))
        .unwrap();
    assert!(last_think < wrap_at && wrap_at < report_call);
    let accepted = of_type(&run.events, "report_accepted");
    assert_eq!(accepted[0]["round"], 1);
    assert_eq!(accepted[0]["report"]["status"], "continue");
    // Round 2 starts from that report, and the wrap-up words are in round 1's transcript.
    assert!(prompt_of(&run.run_dir, 2).contains("wrapped up after three turns"));
    let transcript =
        std::fs::read_to_string(run.run_dir.join("rounds/01/transcript.jsonl")).unwrap();
    assert!(transcript.contains("file your report now"), "{transcript}");
    let end = last(&run.events);
    assert_eq!(end["status"], "complete");
}

#[test]
fn a_round_near_the_token_budget_wraps_up_and_the_next_round_starts_from_its_report() {
    let repo = TempRepo::new();
    let thinking = "a b c d e f g h i j".to_string();
    let report = continue_report("wrapped up before the budget");
    let done = complete_only("never reached");
    // The script's per-turn bound is its longest turn; the budget lets the first turn run
    // whole but not a second one after it.
    let longest = [&thinking, &report, &done]
        .iter()
        .map(|t| pieces(t).len())
        .max()
        .unwrap();
    let budget = (longest + 5).to_string();
    let run = run(
        &repo,
        vec![turns(&[thinking, report]), turns(&[done])],
        json!({}),
        &["--token-budget", &budget, "objective"],
    );
    let wrap_ups = of_type(&run.events, "wrap_up");
    assert_eq!(wrap_ups.len(), 1, "{:#?}", run.events);
    assert_eq!(wrap_ups[0]["round"], 1);
    assert_eq!(wrap_ups[0]["reason"], "budget");
    let accepted = of_type(&run.events, "report_accepted");
    assert_eq!(accepted.len(), 1);
    assert_eq!(
        accepted[0]["report"]["summary"],
        "wrapped up before the budget"
    );
    assert_eq!(of_type(&run.events, "round_started").len(), 2);
    assert!(prompt_of(&run.run_dir, 2).contains("wrapped up before the budget"));
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    let end = last(&run.events);
    assert_eq!(end["status"], "budget-limited");
    assert_eq!(
        end["last_valid_report"]["summary"],
        "wrapped up before the budget"
    );
}

#[test]
fn a_wrap_up_turn_runs_no_other_tool_and_fails_the_round_when_no_report_comes() {
    let repo = TempRepo::new();
    let run = run(
        &repo,
        vec![turns(&[
            call("write_file", json!({"path": "x.txt", "content": "x"})),
            "no report".into(),
            "still no report".into(),
            continue_report("too late"),
        ])],
        json!({}),
        &["--max-turns", "1", "objective"],
    );
    assert_eq!(code(&run.out), 5, "{}", stderr(&run));
    assert!(!repo.path().join("x.txt").exists());
    let refused = of_type(&run.events, "tool_result")[0];
    assert_eq!(refused["ok"], false);
    assert!(refused["output"]
        .as_str()
        .unwrap()
        .contains("only ralph_report"));
    let end = last(&run.events);
    assert_eq!(end["status"], "round-failed");
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("without a valid report"),
        "{end}"
    );
    assert!(of_type(&run.events, "report_accepted").is_empty());
}

#[test]
fn a_tool_result_larger_than_what_is_left_is_cut_and_the_round_goes_on() {
    let repo = TempRepo::new();
    let line = "0123456789".repeat(7);
    let big: String = (0..200).map(|i| format!("{i:03} {line}\n")).collect();
    repo.write("big.txt", &big);
    let run = run(
        &repo,
        vec![turns(&[
            call("read_file", json!({"path": "big.txt"})),
            complete_report("read what fitted"),
        ])],
        json!({"ctx_size": 5000}),
        &["objective"],
    );
    assert_eq!(code(&run.out), 0, "{}", stderr(&run));
    let result = of_type(&run.events, "tool_result")[0]["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("cut to fit the context window"), "{result}");
    assert!(result.contains("\n000 0123"), "{result}");
    assert!(result.len() < big.len());
    assert_eq!(of_type(&run.events, "report_accepted").len(), 1);
}

#[test]
fn a_prompt_that_cannot_fit_is_refused_before_anything_is_written() {
    let repo = TempRepo::new();
    let run = run(
        &repo,
        vec![turns(&[complete_report("never")])],
        json!({"ctx_size": 700}),
        &["objective"],
    );
    assert_eq!(code(&run.out), 2);
    let stderr = stderr(&run);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("700") && lines[0].contains("--ctx-size"));
    assert!(lines[0].contains("AGENTS.md"));
    assert!(run.events.is_empty(), "{:#?}", run.events);
    assert!(!run.run_dir.exists(), "the run directory was written");
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(status.stdout.is_empty());
}
