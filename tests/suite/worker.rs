//! A worker that does the work, through the real binary and the script backend: calls in
//! the shapes small coder models write (```json fences, bare objects) run; an identical call
//! with nothing changed is not run again and the third begins the wrap-up (`repetition`);
//! a `complete` report that the round's own record contradicts is refused.

use serde_json::{json, Value};

use super::common::*;

/// A call the way Qwen2.5-Coder writes it: a ```json fence.
fn fenced(name: &str, arguments: Value) -> String {
    format!(
        "```json\n{}\n```",
        json!({"name": name, "arguments": arguments})
    )
}

fn tool_results<'a>(run: &'a Run, name: &str) -> Vec<&'a Value> {
    of_type(&run.events, "tool_result")
        .into_iter()
        .filter(|e| e["name"] == name)
        .collect()
}

/// Runs one scripted round of `items` on a one-word task and asserts the run's exit code.
fn run_round(repo: &TempRepo, items: &[String], expected: i32) -> Run {
    let run = run_script(repo, vec![turns(items)], &["-n", "1", "x"]);
    assert_eq!(
        code(&run.out),
        expected,
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    run
}

/// The reason of the run's one rejected report.
fn rejected_once(run: &Run) -> &str {
    let rejected = of_type(&run.events, "report_rejected");
    assert_eq!(rejected.len(), 1);
    rejected[0]["reason"].as_str().unwrap()
}

#[test]
fn fenced_and_bare_calls_run_in_every_json_format() {
    for format in ["hermes", "qwen-coder", "generic", "llama3"] {
        let repo = TempRepo::new();
        repo.write("a.txt", "alpha\n");
        let run = run_script(
            &repo,
            vec![turns(&[
                format!(
                    "I will read it.\n{}",
                    fenced("read_file", json!({"path": "a.txt"}))
                ),
                "{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}".to_string(),
                fenced(
                    "ralph_report",
                    json!({"status": "complete", "summary": "read a.txt", "evidence": ["read_file a.txt shows alpha"], "next_steps": [], "blocker": ""}),
                ),
            ])],
            &["--chat-format", format, "-n", "1", "read a.txt"],
        );
        assert_eq!(
            code(&run.out),
            0,
            "{format}: {}",
            String::from_utf8_lossy(&run.out.stderr)
        );
        let read = tool_results(&run, "read_file");
        assert_eq!(read.len(), 1, "{format}");
        assert_eq!(read[0]["ok"], true, "{format}");
        assert!(read[0]["output"].as_str().unwrap().contains("alpha"));
        assert_eq!(tool_results(&run, "list_dir").len(), 1, "{format}");
        assert_eq!(of_type(&run.events, "report_accepted").len(), 1, "{format}");
    }
}

#[test]
fn a_fence_with_broken_json_or_an_unknown_tool_is_a_tool_error_not_a_crash() {
    let repo = TempRepo::new();
    let run = run_round(
        &repo,
        &[
            "```json\n{\"name\": \"read_file\", \"arguments\": {path: \"a\"}}\n```".to_string(),
            fenced("delete_everything", json!({"path": "."})),
            continue_report("tried"),
        ],
        4,
    );
    let results = of_type(&run.events, "tool_result");
    assert_eq!(results[0]["name"], "(malformed)");
    assert!(results[0]["output"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    assert_eq!(results[1]["name"], "delete_everything");
    assert_eq!(results[1]["ok"], false);
    assert!(results[1]["output"]
        .as_str()
        .unwrap()
        .contains("unknown tool"));
}

#[test]
fn a_code_block_that_is_not_a_call_stays_prose() {
    let repo = TempRepo::new();
    let run = run_round(
        &repo,
        &[
            "Here is the fix:\n```python\nprint({\"name\": \"read_file\", \"arguments\": {}})\n```\n```json\n{\"name\": \"slug\", \"version\": 2}\n```".to_string(),
            continue_report("explained"),
        ],
        4,
    );
    let calls: Vec<&str> = of_type(&run.events, "tool_call")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["ralph_report"]);
}

#[test]
fn an_identical_call_is_refused_and_the_third_begins_the_wrap_up() {
    let repo = TempRepo::new();
    let read = call("read_file", json!({"path": "missing.md"}));
    let run = run_round(
        &repo,
        &[
            read.clone(),
            read.clone(),
            format!("{read}\n{read}"),
            continue_report("the file is missing"),
        ],
        4,
    );
    let results = tool_results(&run, "read_file");
    assert_eq!(results.len(), 4);
    let first = results[0]["output"].as_str().unwrap();
    assert!(!first.contains("not run again"), "{first}");
    let second = results[1]["output"].as_str().unwrap();
    assert!(second.starts_with("not run again"), "{second}");
    assert!(
        second.ends_with(first),
        "the earlier result is repeated: {second}"
    );
    // The third identical call begins the wrap-up; the fourth, in the same turn, is refused
    // as a wrap-up refusal, never run.
    let wrap = of_type(&run.events, "wrap_up");
    assert_eq!(wrap.len(), 1);
    assert_eq!(wrap[0]["reason"], "repetition");
    assert!(results[3]["output"]
        .as_str()
        .unwrap()
        .contains("wrap-up turn"));
    assert_eq!(of_type(&run.events, "report_accepted").len(), 1);
}

#[test]
fn a_file_change_lets_an_identical_call_run_again() {
    let repo = TempRepo::new();
    let check = call("run_command", json!({"command": "cat a.txt"}));
    let run = run_round(
        &repo,
        &[
            call("write_file", json!({"path": "a.txt", "content": "one\n"})),
            check.clone(),
            call("write_file", json!({"path": "a.txt", "content": "two\n"})),
            check.clone(),
            continue_report("wrote twice"),
        ],
        4,
    );
    let results = tool_results(&run, "run_command");
    assert_eq!(results.len(), 2);
    assert!(results[0]["output"].as_str().unwrap().contains("one"));
    assert!(results[1]["output"].as_str().unwrap().contains("two"));
    assert!(of_type(&run.events, "wrap_up").is_empty());
}

#[test]
fn a_complete_report_citing_a_failed_command_is_refused_with_its_exit_code() {
    let repo = TempRepo::new();
    let claim = report(
        "complete",
        "tests pass",
        &["`sh -c 'exit 3'` passed all tests"],
        &[],
        "",
    );
    let run = run_round(
        &repo,
        &[
            call("run_command", json!({"command": "sh -c 'exit 3'"})),
            claim.clone(),
            continue_report("the tests still fail"),
        ],
        4,
    );
    let reason = rejected_once(&run);
    assert!(reason.contains("exit code 3"), "{reason}");
    let accepted = of_type(&run.events, "report_accepted");
    assert_eq!(accepted[0]["report"]["status"], "continue");
}

/// 04-shell-greet, seed 3: the claim refused by what the run printed, the 1.5B filed the
/// refusal as its blocker. The round ends with `continue` and the refusal as its next step,
/// so the run goes on (here it has no round left: budget-limited, not blocked).
#[test]
fn a_blocker_filed_after_a_refused_claim_goes_on_as_continue() {
    let repo = TempRepo::new();
    repo.write("greet.sh", "echo \"Hello, $1\"\n");
    let blocked = report(
        "blocked",
        "greet.sh greets",
        &[],
        &[],
        "the report says greet.sh prints 'Hello, Ann!', but no run of it printed that",
    );
    let run = run_round(
        &repo,
        &[
            call("run_command", json!({"command": "sh greet.sh Ann"})),
            report(
                "complete",
                "greet.sh greets",
                &["`sh greet.sh Ann` printed \"Hello, Ann!\""],
                &[],
                "",
            ),
            blocked,
        ],
        4,
    );
    assert!(rejected_once(&run).contains("Hello, Ann"));
    let accepted = of_type(&run.events, "report_accepted");
    let report = &accepted[0]["report"];
    assert_eq!(report["status"], "continue");
    assert_eq!(report["blocker"], "");
    let step = report["next_steps"][0].as_str().unwrap();
    assert!(
        step.starts_with("a claim was refused:") && step.contains("Hello, Ann"),
        "{step}"
    );
    let answers: Vec<_> = of_type(&run.events, "tool_result")
        .into_iter()
        .filter(|e| e["name"] == "ralph_report" && e["ok"] == true)
        .collect();
    assert!(
        answers[0]["output"]
            .as_str()
            .unwrap()
            .starts_with("report accepted as status \"continue\", not \"blocked\""),
        "{answers:?}"
    );
}

#[test]
fn a_complete_report_whose_command_passed_is_accepted() {
    let repo = TempRepo::new();
    let run = run_round(
        &repo,
        &[
            call("run_command", json!({"command": "sh -c 'exit 3'"})),
            call("run_command", json!({"command": "true"})),
            report("complete", "done", &["`true` exits 0"], &[], ""),
        ],
        0,
    );
    assert!(of_type(&run.events, "report_rejected").is_empty());
}

#[test]
fn a_complete_report_from_a_round_without_tool_calls_is_refused() {
    let repo = TempRepo::new();
    let claim = report("complete", "done", &["it works"], &[], "");
    let run = run_round(
        &repo,
        &[claim.clone(), continue_report("nothing checked yet")],
        4,
    );
    assert!(rejected_once(&run).contains("called no tool"));
}

#[test]
fn a_blocker_after_a_failing_command_is_questioned_once_and_stands_when_said_again() {
    let repo = TempRepo::new();
    let blocked = report("blocked", "the tests fail", &[], &[], "the tests fail");
    let run = run_round(
        &repo,
        &[
            call("run_command", json!({"command": "sh -c 'exit 1'"})),
            blocked.clone(),
            blocked,
        ],
        3,
    );
    let reason = rejected_once(&run);
    assert!(
        reason.contains("not a blocker") && reason.contains("exit code 1"),
        "{reason}"
    );
    let accepted = of_type(&run.events, "report_accepted");
    assert_eq!(accepted[0]["report"]["status"], "blocked");
}
