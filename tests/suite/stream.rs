//! What the stream and the meters read from a real run: per-turn counts and times, the
//! context count after every tool result, the tree each round starts from (so a round's own
//! diff can be shown), and the headless summary line that tells the whole truth.

use serde_json::json;

use super::common::*;
use ralph_tui::terminal::event_loop::round_base;
use ralph_tui::workspace::Workspace;

#[test]
fn every_turn_reports_its_counts_and_the_context_is_counted_after_tool_results() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[
            call("list_dir", json!({"path": "."})),
            complete_report("listed"),
        ])],
        &["objective"],
    );
    assert_eq!(
        code(&run.out),
        0,
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let finished = of_type(&run.events, "turn_finished");
    assert_eq!(finished.len(), 2, "one per turn");
    for turn in &finished {
        assert!(turn["generated_tokens"].as_u64().unwrap() > 0, "{turn}");
        assert!(
            turn["prompt_ms"].is_u64() && turn["gen_ms"].is_u64(),
            "{turn}"
        );
        assert!(turn["context_tokens"].as_u64().unwrap() > 0, "{turn}");
    }
    let counted = of_type(&run.events, "context_counted");
    assert_eq!(counted.len(), 2, "one before each turn");
    // The second count comes after the tool result and includes it.
    let types: Vec<&str> = run
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let result_at = types.iter().position(|t| *t == "tool_result").unwrap();
    let second_count = types
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == "context_counted")
        .nth(1)
        .unwrap()
        .0;
    assert!(second_count > result_at, "{types:?}");
    assert!(
        counted[1]["tokens"].as_u64().unwrap() > counted[0]["tokens"].as_u64().unwrap(),
        "the count grows with the turn and the tool result"
    );
}

#[test]
fn a_round_shows_only_its_own_diff_for_a_file_touched_in_two_rounds() {
    let repo = TempRepo::new();
    repo.write("notes.txt", "one\n");
    repo.commit_all("notes");
    let run = run_script(
        &repo,
        vec![
            turns(&[
                call(
                    "edit_file",
                    json!({"path": "notes.txt", "old": "one\n", "new": "one\nround one\n"}),
                ),
                continue_report("first edit"),
            ]),
            turns(&[
                call(
                    "edit_file",
                    json!({"path": "notes.txt", "old": "round one\n", "new": "round one\nround two\n"}),
                ),
                complete_report("second edit"),
            ]),
        ],
        &["-n", "2", "objective"],
    );
    assert_eq!(
        code(&run.out),
        0,
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let workspace = Workspace::open(repo.path()).unwrap();
    let now = workspace.snapshot().unwrap();
    let base = round_base(&run.run_dir, 2).expect("round 2 names the tree it started from");
    let diff = workspace.diff(&base, &now).unwrap();
    assert_eq!(diff.files.len(), 1);
    assert_eq!((diff.insertions, diff.deletions), (1, 0), "{}", diff.patch);
    assert!(diff.patch.contains("+round two"), "{}", diff.patch);
    assert!(
        !diff.patch.contains("+round one"),
        "round 1's edit is not round 2's: {}",
        diff.patch
    );
    let first = round_base(&run.run_dir, 1).unwrap();
    let whole = workspace.diff(&first, &now).unwrap();
    assert_eq!(whole.insertions, 2, "from round 1's start both edits show");
}

#[test]
fn the_headless_summary_says_claim_and_verify_in_one_sentence() {
    let repo = TempRepo::new();
    let stderr = |run: &Run| String::from_utf8_lossy(&run.out.stderr).into_owned();
    let failed = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["--verify", "exit 1", "objective"],
    );
    let text = stderr(&failed);
    assert!(
        text.contains("the worker's claim; verify FAILED (exit 1) — the claimed completion did not pass verification"),
        "{text}"
    );
    // The claim stands as the run's status; the exit code says verification contradicted it.
    assert_eq!(code(&failed.out), 6, "{text}");
    assert_eq!(last(&failed.events)["status"], "complete");
    let passed = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["--verify", "true", "objective"],
    );
    let text = stderr(&passed);
    assert!(
        text.contains("the worker's claim; verify passed (exit 0)"),
        "{text}"
    );
    assert_eq!(code(&passed.out), 0, "{text}");
    assert!(!text.contains("claimed completion"), "{text}");
    let none = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["objective"],
    );
    let text = stderr(&none);
    assert!(
        text.contains("complete — not independently verified"),
        "{text}"
    );
    assert_eq!(code(&none.out), 0, "{text}");
}
