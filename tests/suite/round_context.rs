//! The round observation and the check (`--observe`, `--check`) through the real binary with
//! the script backend: what the child is given after the fixed prompt, what it leaves out,
//! the check at each round's start and on a `complete` claim, `auto`, and a check that hangs
//! or reaches outside.

use serde_json::{json, Value};

use super::common::*;

/// The round's prompt as the run log keeps it.
fn prompt(run: &Run, round: u32) -> Value {
    let path = run.run_dir.join(format!("rounds/{round:02}/prompt.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// The round's user message (the fixed text, then the observation).
fn user_message(run: &Run, round: u32) -> String {
    prompt(run, round)["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn stderr(run: &Run) -> String {
    String::from_utf8_lossy(&run.out.stderr).into_owned()
}

/// `calc.py`'s test, in a file that follows the `<module>_test.py` habit.
const CALC_TEST: &str = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";
/// The check that finds `calc_test.py`.
const CALC_CHECK: &str = "python3 -m unittest discover -p '*_test.py'";

/// A repository with a failing unittest whose files follow the `<module>_test.py` habit.
fn failing_repo() -> TempRepo {
    calc_repo("def add(a, b):\n    return a - b\n")
}

/// A calculator whose `add` is `source`, with its test.
fn calc_repo(source: &str) -> TempRepo {
    let repo = TempRepo::new();
    repo.write("calc.py", source);
    repo.write("calc_test.py", CALC_TEST);
    repo.write("README.md", "A calculator.\n");
    repo.commit_all("start");
    repo
}

/// Each tool result of the run: whether it succeeded, and its output.
fn tool_results(run: &Run) -> Vec<(bool, String)> {
    of_type(&run.events, "tool_result")
        .iter()
        .map(|r| {
            (
                r["ok"].as_bool().unwrap(),
                r["output"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const FIXED_ADD: &str = "def add(a, b):\n    return a + b\n";

#[test]
fn the_observation_lists_files_shows_texts_and_the_check_after_the_fixed_prompt() {
    let repo = failing_repo();
    let check = CALC_CHECK;
    let run = run_script(
        &repo,
        vec![
            turns(&[continue_report("saw it")]),
            turns(&[
                write_file_call("calc.py", FIXED_ADD),
                report("complete", "fixed add", &["the check passes"], &[], ""),
            ]),
        ],
        &["--check", check, "--observe", "on", "fix add() in calc.py"],
    );
    assert_eq!(code(&run.out), 0, "{}", stderr(&run));
    let observed = of_type(&run.events, "round_observed");
    assert_eq!(observed.len(), 2);
    let first = observed[0];
    assert_eq!(first["round"], 1);
    assert_eq!(first["files_listed"], 3);
    assert_eq!(first["check"], "failed");
    let shown: Vec<&str> = first["shown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    // Named in the objective first, then the check's output names the test file.
    assert_eq!(shown[0], "calc.py", "{shown:?}");
    assert!(shown.contains(&"calc_test.py"), "{shown:?}");
    assert_eq!(first["shown"][0]["shown"], "whole");

    // The child got exactly the event's text, after the fixed text.
    let user = user_message(&run, 1);
    let text = first["text"].as_str().unwrap();
    let fixed_end = user.find("Start by inspecting the workspace.").unwrap();
    let at = user.find(text).expect("the observation is in the prompt");
    assert!(at > fixed_end, "the observation comes after the fixed text");
    assert!(text.contains("calc.py (2 lines)"), "{text}");
    assert!(text.contains("return a - b"), "{text}");
    assert!(text.contains(&format!("The check `{check}`")), "{text}");
    assert!(text.contains("FAILED (exit code 1"), "{text}");
    assert!(text.contains("AssertionError"), "{text}");

    // Round 2 sees the workspace as it is then, never round 1's conversation.
    let second = user_message(&run, 2);
    assert!(!second.contains("<tool_call>"), "{second}");

    // The check ran at each round's start, after round 2's fix and on the claim, and is
    // logged with its time.
    let checks = of_type(&run.events, "check_finished");
    let points: Vec<(u64, &str, &str)> = checks
        .iter()
        .map(|c| {
            (
                c["round"].as_u64().unwrap(),
                c["at"].as_str().unwrap(),
                c["check"]["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        points,
        [
            (1, "round_start", "failed"),
            (2, "round_start", "failed"),
            (2, "change", "passed"),
            (2, "claim", "passed")
        ]
    );
    assert!(checks.iter().all(|c| c["check"]["wall_ms"].is_u64()));
    let order: Vec<&str> = run
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| matches!(*t, "round_started" | "check_finished" | "round_observed"))
        .take(3)
        .collect();
    assert_eq!(order, ["round_started", "check_finished", "round_observed"]);
}

#[test]
fn a_later_round_sees_what_the_run_has_changed_so_far_as_a_diff() {
    let repo = failing_repo();
    let run = run_script(
        &repo,
        vec![
            turns(&[
                write_file_call("calc.py", FIXED_ADD),
                continue_report("fixed it"),
            ]),
            turns(&[continue_report("looked")]),
        ],
        &["--observe", "on", "-n", "2", "fix add() in calc.py"],
    );
    // Out of rounds with the work reported as not done: budget-limited.
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    // Round 1 starts before any change: no diff.
    assert!(!user_message(&run, 1).contains("changed so far"));
    // Round 2 sees round 1's change as the diff from where the run started.
    let second = user_message(&run, 2);
    let at = second
        .find("What this run has changed so far")
        .unwrap_or_else(|| panic!("{second}"));
    let diff = &second[at..];
    assert!(
        diff.contains("-    return a - b\n+    return a + b"),
        "{diff}"
    );
    assert!(
        at < second.find("File texts (current)").unwrap(),
        "{second}"
    );
}

#[test]
fn the_system_prompt_is_the_same_with_and_without_the_observation() {
    let repo = failing_repo();
    let rounds = || vec![turns(&[continue_report("looked")])];
    let on = run_script(&repo, rounds(), &["-n", "1", "--observe", "on", "x"]);
    let off = run_script(
        &repo,
        rounds(),
        &["-n", "1", "--observe", "off", "--check", "off", "x"],
    );
    assert_eq!(code(&on.out), 4, "{}", stderr(&on));
    assert_eq!(code(&off.out), 4, "{}", stderr(&off));
    assert_eq!(
        prompt(&on, 1)["messages"][0],
        prompt(&off, 1)["messages"][0]
    );
    let plain = user_message(&off, 1);
    let observed = user_message(&on, 1);
    assert!(observed.starts_with(&plain), "the fixed text is unchanged");
    assert!(observed.len() > plain.len());
    assert!(of_type(&off.events, "round_observed").is_empty());
    assert!(of_type(&off.events, "check_finished").is_empty());
    assert!(!plain.contains("Observation of the workspace"));
}

#[test]
fn a_failing_check_refuses_the_claim_quoting_its_output_and_the_round_goes_on() {
    let repo = failing_repo();
    let run = run_script(
        &repo,
        vec![turns(&[
            call("read_file", json!({"path": "calc.py"})),
            report("complete", "all good", &["looks right"], &[], ""),
            write_file_call("calc.py", FIXED_ADD),
            report("complete", "fixed add", &["the check passes"], &[], ""),
        ])],
        &["-n", "1", "--check", CALC_CHECK, "fix add()"],
    );
    assert_eq!(code(&run.out), 0, "{}", stderr(&run));
    let rejected = of_type(&run.events, "report_rejected");
    assert_eq!(rejected.len(), 1);
    let reason = rejected[0]["reason"].as_str().unwrap();
    assert!(reason.contains("does not pass"), "{reason}");
    assert!(reason.contains("AssertionError"), "{reason}");
    assert!(reason.contains("-1 != 5"), "{reason}");
    assert_eq!(repo.read("calc.py"), FIXED_ADD);
    assert_eq!(last(&run.events)["status"], "complete");
}

#[test]
fn claims_the_check_refuses_three_times_end_the_round_as_work_for_the_next() {
    // Seed 3, 05 at 0e12c44: three claims refused by the doctest ended the run in round 1.
    let repo = failing_repo();
    let claim = report("complete", "all good", &["looks right"], &[], "");
    let run = run_script(
        &repo,
        vec![
            turns(&[
                call("read_file", json!({"path": "calc.py"})),
                claim.clone(),
                claim.clone(),
                claim,
            ]),
            turns(&[
                write_file_call("calc.py", FIXED_ADD),
                report("complete", "fixed add", &["the check passes"], &[], ""),
            ]),
        ],
        &["-n", "2", "--check", CALC_CHECK, "fix add()"],
    );
    assert_eq!(code(&run.out), 0, "{}", stderr(&run));
    assert_eq!(of_type(&run.events, "report_rejected").len(), 3);
    let accepted = of_type(&run.events, "report_accepted");
    assert_eq!(accepted[0]["round"], 1);
    assert_eq!(accepted[0]["report"]["status"], "continue");
    let first_step = accepted[0]["report"]["next_steps"][0].as_str().unwrap();
    assert!(
        first_step.contains("make the repository's check") && first_step.contains("failed"),
        "{first_step}"
    );
    // The next round is given that report.
    assert!(user_message(&run, 2).contains(first_step));
    assert_eq!(last(&run.events)["status"], "complete");
}

#[test]
fn a_change_is_checked_at_once_and_the_worker_sees_what_it_did() {
    let still_wrong = "def add(a, b):\n    return a * b\n";
    let script = || {
        vec![turns(&[
            write_file_call("calc.py", still_wrong),
            write_file_call("calc.py", FIXED_ADD),
            call("read_file", json!({"path": "calc.py"})),
            report("continue", "fixed add", &[], &["run the tests"], ""),
        ])]
    };
    let check = CALC_CHECK;
    let on_repo = failing_repo();
    let on = run_script(
        &on_repo,
        script(),
        &["-n", "1", "--check", check, "fix add()"],
    );
    assert_eq!(code(&on.out), 4, "{}", stderr(&on));
    let at = |run: &Run, at: &str| -> Vec<Value> {
        of_type(&run.events, "check_finished")
            .into_iter()
            .filter(|c| c["at"] == at)
            .cloned()
            .collect()
    };
    let changes = at(&on, "change");
    let verdicts: Vec<&Value> = changes.iter().map(|c| &c["check"]["verdict"]).collect();
    assert_eq!(
        verdicts,
        [&json!("failed"), &json!("passed")],
        "one run per change, none for the read"
    );
    let results: Vec<String> = of_type(&on.events, "tool_result")
        .iter()
        .map(|r| r["output"].as_str().unwrap().to_string())
        .collect();
    assert!(
        results[0].contains("(run by ralph-tui after this change): FAILED"),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains("6 != 5"),
        "the failure is quoted: {}",
        results[0]
    );
    assert!(results[0].contains("The objective is not met while this check fails"));
    assert!(
        results[1].contains("(run by ralph-tui after this change): PASSED"),
        "{}",
        results[1]
    );
    assert!(
        !results[2].contains("The check"),
        "a read changes nothing: {}",
        results[2]
    );
    assert!(
        stderr(&on).contains(
            "round 1: check after the change: `python3 -m unittest discover -p '*_test.py'` failed"
        ),
        "{}",
        stderr(&on)
    );

    let off_repo = failing_repo();
    let off = run_script(
        &off_repo,
        script(),
        &[
            "-n",
            "1",
            "--check",
            check,
            "--check-on-change=false",
            "fix add()",
        ],
    );
    assert_eq!(code(&off.out), 4, "{}", stderr(&off));
    assert!(at(&off, "change").is_empty());
    assert_eq!(at(&off, "round_start").len(), 1);
    let first = of_type(&off.events, "tool_result")[0]["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!first.contains("The check"), "{first}");
}

#[test]
fn a_function_written_out_under_a_new_name_renames_its_definition() {
    // Seed 2, 09 at 1b2c3f5: "We need to change it to:" and `get_usr` written out whole as
    // `get_user`, three times in round 1; each was answered that no file defines `get_user`.
    let repo = TempRepo::new();
    let users = "\"\"\"Users.\"\"\"\n\nUSERS = {1: \"Ada\"}\n\n\ndef get_usr(user_id):\n    \"\"\"The user.\"\"\"\n    return USERS[user_id]\n\n\ndef count():\n    return len(USERS)\n";
    repo.write("shop/users.py", users);
    repo.write(
        "shop/orders.py",
        "from shop.users import get_usr\n\n\ndef name_of(order):\n    return get_usr(order)\n",
    );
    // The same lines under two names: a rename of neither.
    repo.write(
        "shop/twins.py",
        "def left(x):\n    return x + 1\n\n\ndef right(x):\n    return x + 1\n",
    );
    repo.commit_all("start");
    let renamed = "def get_user(user_id):\n    \"\"\"The user.\"\"\"\n    return USERS[user_id]\n";
    let run = run_script(
        &repo,
        vec![turns(&[
            format!("The definition is in `shop/users.py`. Here is the renamed `get_user` function:\n```python\n{renamed}```\n"),
            "Here is the `middle` function:\n```python\ndef middle(x):\n    return x + 1\n```\n".to_string(),
            report("continue", "renamed the definition", &[], &["rename the uses"], ""),
        ])],
        &["-n", "1", "rename get_usr to get_user"],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    assert_eq!(
        repo.read("shop/users.py"),
        users.replace("def get_usr", "def get_user"),
        "only the definition's line changed"
    );
    let results = tool_results(&run);
    let (ok, first) = &results[0];
    assert!(*ok, "{first}");
    assert!(
        first.starts_with(
            "put your answer's `get_user` in place of `get_usr` (the same lines under another name: a rename) at lines 6-8 of 'shop/users.py'"
        ),
        "{first}"
    );
    assert!(
        first.contains(
            "`get_usr` this change renamed still stands in 'shop/orders.py' at lines 1, 5"
        ),
        "where the old name still stands: {first}"
    );
    let (ok, second) = &results[1];
    assert!(!*ok);
    assert!(
        second.starts_with("nothing changed: your answer shows a new `middle`, but no source file here defines `middle`"),
        "{second}"
    );
    assert_eq!(
        repo.read("shop/twins.py").matches("return x + 1").count(),
        2
    );
}

/// The objective of the misspelling tests (02's shape).
const MISSPELLED: &str =
    "The guide docs/guide.md misspells the word \"receive\" as \"recieve\". Fix every occurrence.";

/// One round of `calls` then a `continue` report, with `args`: each call's (ok, output).
fn one_round(repo: &TempRepo, mut calls: Vec<String>, args: &[&str]) -> Vec<(bool, String)> {
    calls.push(report("continue", "done", &[], &["check the work"], ""));
    let run = run_script(repo, vec![turns(&calls)], args);
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    tool_results(&run)
}

#[test]
fn an_edit_that_makes_the_objectives_rename_in_one_place_makes_it_in_the_whole_file() {
    // Seeds 1 and 3, 09 at 4b2c978: the 1.5B renamed `get_usr` one call at a time, or gave
    // the definition's line as `old` in files that only call it, and the rename was still
    // half made when the rounds ran out.
    let repo = TempRepo::new();
    let users = "USERS = {1: \"Ada\"}\n\n\ndef get_usr(user_id):\n    return USERS[user_id]\n";
    let cli = "from shop.users import get_usr\n\n\ndef show(user_id):\n    print(get_usr(user_id))\n    return get_usr(user_id)['name']\n";
    let orders = "from shop import users\n\n\ndef owner(order):\n    return users.get_usr(order)  # get_usr_cached is another\n";
    repo.write("shop/users.py", users);
    repo.write("shop/cli.py", cli);
    repo.write("shop/orders.py", orders);
    repo.commit_all("start");
    let results = one_round(
        &repo,
        vec![
            // `old` twice in the file: the word renamed at all its places.
            call(
                "edit_file",
                json!({"path": "shop/cli.py", "old": "get_usr(user_id)", "new": "get_user(user_id)"}),
            ),
            // `old` not in the file: the rename it makes is made where the word stands.
            call(
                "edit_file",
                json!({"path": "shop/orders.py", "old": "from shop.users import get_usr", "new": "from shop.users import get_user"}),
            ),
            // A rename the objective does not ask for stays an edit of one place.
            call(
                "edit_file",
                json!({"path": "shop/users.py", "old": "USERS[user_id]", "new": "TABLE[user_id]"}),
            ),
            // `old` once, the word in another place too.
            call(
                "edit_file",
                json!({"path": "shop/users.py", "old": "def get_usr(user_id):", "new": "def get_user(user_id):"}),
            ),
        ],
        &[
            "-n",
            "1",
            "Rename the function `get_usr` to `get_user` everywhere in this repository.",
        ],
    );
    assert!(results.iter().take(4).all(|(ok, _)| *ok), "{results:?}");
    assert_eq!(repo.read("shop/cli.py"), cli.replace("get_usr", "get_user"));
    assert!(
        results[0].1.starts_with("renamed `get_usr` to `get_user` wherever it stood as a whole word in 'shop/cli.py' (lines 1, 5, 6), the rename the objective asks for; this edit's `old` matches several times. The word `get_usr` this change renamed still stands in 'shop/orders.py' at line 5, in 'shop/users.py' at line 4"),
        "{}",
        results[0].1
    );
    // A longer word that starts with it is another name.
    assert_eq!(
        repo.read("shop/orders.py"),
        orders.replace("users.get_usr(order)", "users.get_user(order)")
    );
    assert!(
        results[1]
            .1
            .contains("this edit's `old` is not in the file as given"),
        "{}",
        results[1].1
    );
    assert!(
        results[2]
            .1
            .starts_with("replaced 1 occurrence(s) in 'shop/users.py'. The word `USERS` this change renamed still stands in 'shop/users.py' at line 1"),
        "{}",
        results[2].1
    );
    assert_eq!(
        repo.read("shop/users.py"),
        users
            .replace("USERS[user_id]", "TABLE[user_id]")
            .replace("get_usr", "get_user")
    );
    assert!(
        results[3]
            .1
            .starts_with("replaced 1 occurrence(s) in 'shop/users.py'"),
        "the edit that finished the file is a plain one: {}",
        results[3].1
    );
}

#[test]
fn a_whole_file_write_that_makes_the_objectives_rename_in_part_makes_it_everywhere_in_the_file() {
    // Seed 1, 02 at b743a97: the guide written whole with two of its three misspellings
    // fixed, then claimed fixed.
    let repo = TempRepo::new();
    let guide = "# Guide\n\nTo recieve mail, sync.\n\nFilters sort what you recieve.\n\nYou may recieve a summary.\n";
    repo.write("docs/guide.md", guide);
    repo.commit_all("start");
    let partial = guide.replacen("recieve", "receive", 2);
    let results = one_round(
        &repo,
        vec![write_file_call("docs/guide.md", &partial)],
        &["-n", "1", MISSPELLED],
    );
    assert_eq!(
        repo.read("docs/guide.md"),
        guide.replace("recieve", "receive")
    );
    assert_eq!(
        results[0].1,
        "replaced 'docs/guide.md' (92 bytes, 7 lines). The rename the objective asks for, which this content made in part, was made at its other places too (line 7)"
    );
}

#[test]
fn an_edit_that_copies_the_word_the_objective_renames_into_new_makes_the_rename() {
    // Seeds 1 and 2, 02 at b743a97: the guide's line 5 given as both `old` and `new`, the
    // misspelling copied into `new`, round after round until the run stalled.
    let repo = TempRepo::new();
    let guide = "# Guide\n\nTo recieve mail, sync.\n\nFilters sort what you recieve.\n";
    repo.write("docs/guide.md", guide);
    repo.write("docs/other.md", "Other.\n");
    repo.commit_all("start");
    let line = "To recieve mail, sync.";
    let results = one_round(
        &repo,
        vec![
            call(
                "edit_file",
                json!({"path": "docs/other.md", "old": "Other.", "new": "Other."}),
            ),
            call(
                "edit_file",
                json!({"path": "docs/guide.md", "old": line, "new": line}),
            ),
        ],
        &["-n", "1", MISSPELLED],
    );
    // A text without the word: the usual answer.
    assert!(!results[0].0, "{results:?}");
    assert!(
        results[0].1.starts_with("already in place: "),
        "{}",
        results[0].1
    );
    assert!(results[1].0, "{results:?}");
    assert_eq!(
        results[1].1,
        "renamed `recieve` to `receive` wherever it stood as a whole word in 'docs/guide.md' (lines 3, 5), the rename the objective asks for; this edit's `old` and `new` are the same, both with the old word"
    );
    assert_eq!(
        repo.read("docs/guide.md"),
        guide.replace("recieve", "receive")
    );
}

#[test]
fn after_the_objectives_rename_is_made_the_file_is_said_done_and_kept_from_slips() {
    // Seed 3, 02 at e7773b0: the guide fixed whole by one edit, then `recieve` → `receive`
    // answered `no match` and "read the file first", then the guide written whole with the
    // read's heading as its first line; seed 1 wrote it whole with a backtick dropped.
    let repo = TempRepo::new();
    let guide = "# Guide\n\nTo receive mail, sync.\n\nTurn it off with `notify off`.\n";
    repo.write("docs/guide.md", guide);
    repo.commit_all("start");
    let heading = "docs/guide.md (lines 1-5 of 5):\n";
    let slipped = guide.replace("off`.", "off.");
    let longer = format!("{guide}\nSee also the FAQ.\n");
    let results = one_round(
        &repo,
        vec![
            call(
                "edit_file",
                json!({"path": "docs/guide.md", "old": "recieve", "new": "receive"}),
            ),
            write_file_call("docs/guide.md", &format!("{heading}{slipped}")),
            write_file_call("docs/guide.md", &format!("{heading}{longer}")),
        ],
        &["-n", "1", MISSPELLED],
    );
    assert_eq!(
        results[0].1,
        "already in place: the rename the objective asks for is made in 'docs/guide.md': `recieve` stands nowhere in it, and `receive` at line 3; nothing changed. Do not make it again: check the work, then call ralph_report"
    );
    assert!(!results[1].0);
    assert_eq!(
        results[1].1,
        "nothing written: beside the rename the objective asks for (`recieve` → `receive`), this content changes a line of 'docs/guide.md' by a character or two: line 5 `Turn it off with `notify off`.` as `Turn it off with `notify off.`. Copy every other line exactly as the file has it, or change only the word with edit_file"
    );
    assert!(results[2].0, "{results:?}");
    assert!(
        results[2].1.ends_with(". Its first line, `docs/guide.md (lines 1-5 of 5):`, is read_file's heading, not a line of the file, so it was left out"),
        "{}",
        results[2].1
    );
    assert_eq!(repo.read("docs/guide.md"), longer);
}

#[test]
fn a_python_change_that_uses_a_name_bound_nowhere_is_refused() {
    // Seed 3, 09 at 4b2c978: `shop/users.py` written whole as `def get_user(user_id): pass`,
    // the `USERS` table gone and unused, then edited to `return USERS[user_id]`: every test
    // then stopped at a NameError.
    let repo = TempRepo::new();
    repo.write(
        "shop/users.py",
        "USERS = {1: \"Ada\"}\n\n\ndef get_usr(user_id):\n    return USERS[user_id]\n",
    );
    repo.write(
        "shop/orders.py",
        "from shop.users import get_usr\n\n\ndef owner(o):\n    return get_usr(o)\n",
    );
    repo.commit_all("start");
    let stub = "def get_user(user_id):\n    pass\n";
    let results = one_round(
        &repo,
        vec![
            write_file_call("shop/users.py", stub),
            call(
                "edit_file",
                json!({"path": "shop/users.py", "old": "    pass", "new": "    return USERS[user_id]"}),
            ),
            // A name the last commit did not define either: a rename under way.
            call(
                "edit_file",
                json!({"path": "shop/orders.py", "old": "return get_usr(o)", "new": "return get_user(o)"}),
            ),
            // The name bound in the same change: written.
            call(
                "edit_file",
                json!({"path": "shop/users.py", "old": "def get_user(user_id):\n    pass", "new": "USERS = {1: \"Ada\"}\n\n\ndef get_user(user_id):\n    return USERS[user_id]"}),
            ),
        ],
        &["-n", "1", "--check", "off", "tidy the users module"],
    );
    assert!(results[0].0, "{results:?}");
    assert!(!results[1].0, "{results:?}");
    assert_eq!(
        results[1].1,
        "nothing written: with this change 'shop/users.py' would use `USERS` (line 2; at the last commit line 1: `USERS = {1: \"Ada\"}`), which it no longer defines or imports, so running it would stop at a NameError. Put each definition back in the same change, as the last commit had it, or use a name the file has"
    );
    assert!(results[2].0, "{results:?}");
    assert!(results[3].0, "{results:?}");
    assert_eq!(
        repo.read("shop/users.py"),
        "USERS = {1: \"Ada\"}\n\n\ndef get_user(user_id):\n    return USERS[user_id]\n"
    );
}

#[test]
fn a_function_written_out_in_prose_replaces_its_definition_and_is_checked() {
    // Seed 1, 06 at b315e69: the 1.5B wrote the fixed function after a sentence announcing
    // it, in eight turns over three rounds, and the fix was never made.
    let repo = TempRepo::new();
    let calc = "\"\"\"Calc.\"\"\"\n\n\ndef add(a, b):\n    \"\"\"Sum.\"\"\"\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
    repo.write("calc.py", calc);
    repo.write("calc_test.py", CALC_TEST);
    repo.commit_all("start");
    let fixed = "def add(a, b):\n    \"\"\"Sum.\"\"\"\n    return a + b\n";
    let run = run_script(
        &repo,
        vec![turns(&[
            format!("The test fails because `add` subtracts. Here's the corrected `add` function:\n\n```python\n{fixed}```\n\nThis makes the test pass."),
            "Here's the corrected `mul` function:\n```python\ndef mul(a, b):\n    return a * b\n```".to_string(),
            report("continue", "fixed add", &[], &["run the tests"], ""),
        ])],
        &[
            "-n",
            "1",
            "--check",
            CALC_CHECK,
            "fix add()",
        ],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    assert_eq!(
        repo.read("calc.py"),
        calc.replace("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub"),
        "only add's lines changed"
    );
    let calls = of_type(&run.events, "tool_call");
    assert_eq!(calls[0]["name"], "replace_definition");
    assert_eq!(
        calls[0]["arguments"],
        json!({"name": "add", "content": fixed})
    );
    let results: Vec<String> = of_type(&run.events, "tool_result")
        .iter()
        .map(|r| r["output"].as_str().unwrap().to_string())
        .collect();
    assert!(
        results[0].starts_with(
            "put your answer's `add` in place of the one at lines 4-6 of 'calc.py' (replaced 1 occurrence(s) in 'calc.py')"
        ),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains("(run by ralph-tui after this change): PASSED"),
        "the change is checked like an edit: {}",
        results[0]
    );
    assert!(
        results[1].starts_with(
            "nothing changed: your answer shows a new `mul`, but no source file here defines `mul`"
        ),
        "{}",
        results[1]
    );
    // The run's changes are the worker's, as for any file tool.
    let changed = of_type(&run.events, "workspace_changed");
    assert!(
        changed.iter().any(|c| c["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "calc.py")),
        "{changed:?}"
    );
}

#[test]
fn a_change_after_which_fewer_tests_pass_is_put_back() {
    // Seed 1 and 3, 08: the 1.5B wrote `inventory/items.py` whole without its `class Item`,
    // the tests could no longer import it, and the next rounds worked on the broken file.
    let repo = TempRepo::new();
    let lib = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n";
    repo.write("calc.py", lib);
    repo.write(
        "test_calc.py",
        "import unittest\nfrom calc import add, sub\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 1), 3)\n\n    def test_add_zero(self):\n        self.assertEqual(add(2, 0), 2)\n\n    def test_sub(self):\n        self.assertEqual(sub(2, 1), 1)\n",
    );
    repo.commit_all("start");
    let fixed =
        lib.replace("return a + b\n", "return a - b\n")
            .replacen("return a - b", "return a + b", 1);
    let run = run_script(
        &repo,
        vec![turns(&[
            write_file_call("calc.py", "def sub(a, b):\n    return a - b\n"),
            write_file_call("calc.py", &fixed),
            report("continue", "fixed sub", &[], &["run the tests"], ""),
        ])],
        &[
            "-n",
            "1",
            "--check",
            "python3 -m unittest test_calc",
            "fix sub()",
        ],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    let results = tool_results(&run);
    assert!(!results[0].0, "{results:?}");
    assert!(
        results[0]
            .1
            .starts_with("undone: replaced 'calc.py' (32 bytes, 2 lines)"),
        "{}",
        results[0].1
    );
    assert!(
        results[0].1.contains("but after it the check `python3 -m unittest test_calc` passed no test where 2 tests passed before, so the change broke what worked. 'calc.py' is back as it was before this call. What the check printed after the change:"),
        "{}",
        results[0].1
    );
    assert!(
        results[0]
            .1
            .contains("ImportError: cannot import name 'add'"),
        "the worker is shown what broke: {}",
        results[0].1
    );
    // The file was put back before the second write, which then passed every test.
    assert!(results[1].0, "{results:?}");
    assert!(
        results[1]
            .1
            .contains("(run by ralph-tui after this change): PASSED"),
        "{}",
        results[1].1
    );
    assert_eq!(repo.read("calc.py"), fixed);
    let verdicts: Vec<Value> = of_type(&run.events, "check_finished")
        .iter()
        .map(|c| c["check"]["verdict"].clone())
        .collect();
    assert_eq!(
        verdicts,
        [json!("failed"), json!("failed"), json!("passed")]
    );
}

#[test]
fn a_change_that_fixes_one_test_and_breaks_another_stays() {
    // Only a change that leaves fewer tests passing is put back: trading one for another
    // is a step the next change may build on.
    let repo = TempRepo::new();
    repo.write(
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n",
    );
    repo.write(
        "test_calc.py",
        "import unittest\nfrom calc import add, sub\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 1), 3)\n\n    def test_sub(self):\n        self.assertEqual(sub(2, 1), 1)\n",
    );
    repo.commit_all("start");
    let traded = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
    let run = run_script(
        &repo,
        vec![turns(&[
            write_file_call("calc.py", traded),
            report("continue", "fixed sub", &[], &["fix add"], ""),
        ])],
        &[
            "-n",
            "1",
            "--check",
            "python3 -m unittest test_calc",
            "fix sub()",
        ],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    let results = of_type(&run.events, "tool_result");
    assert_eq!(results[0]["ok"], json!(true), "{results:?}");
    assert_eq!(repo.read("calc.py"), traded);
}

#[test]
fn a_change_after_which_the_check_runs_no_test_is_put_back() {
    // Seed 1, 05 and 07: the 1.5B wrote the file whole without its doctests (or its
    // `#[cfg(test)]` module), and the check then ran no test.
    let repo = TempRepo::new();
    let doubled = "def double(x):\n    \"\"\"Twice x.\n\n    >>> double(2)\n    4\n    \"\"\"\n    return x * 3\n";
    repo.write("twice.py", doubled);
    repo.commit_all("start");
    let kept = doubled.replace("x * 3", "x * 2");
    let run = run_script(
        &repo,
        vec![turns(&[
            write_file_call("twice.py", "def double(x):\n    return x * 2\n"),
            write_file_call("twice.py", &kept),
            report("continue", "fixed double", &[], &["run the doctest"], ""),
        ])],
        &[
            "-n",
            "1",
            "--check",
            "python3 -m doctest -v twice.py",
            "fix double()",
        ],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    let results = tool_results(&run);
    assert!(!results[0].0, "{results:?}");
    assert!(
        results[0].1.starts_with("undone: replaced 'twice.py' (32 bytes, 2 lines); but after it the check `python3 -m doctest -v twice.py` ran no test (doctest ran 0 tests: a run that tests nothing is not a pass), where before it ran some, so the change removed the tests or what runs them. 'twice.py' is back as it was before this call."),
        "{}",
        results[0].1
    );
    // The file was put back, so the second write (which keeps the doctest) replaced it.
    assert!(results[1].0, "{results:?}");
    assert!(
        results[1]
            .1
            .contains("(run by ralph-tui after this change): PASSED"),
        "{}",
        results[1].1
    );
    assert_eq!(repo.read("twice.py"), kept);
    let verdicts: Vec<Value> = of_type(&run.events, "check_finished")
        .iter()
        .map(|c| c["check"]["verdict"].clone())
        .collect();
    assert_eq!(
        verdicts,
        [json!("failed"), json!("no_tests"), json!("passed")]
    );
}

#[test]
fn a_check_that_ran_no_test_is_not_a_pass() {
    let repo = failing_repo();
    // The unittest default pattern misses `calc_test.py`: exit 0, `Ran 0 tests`.
    let run = run_script(
        &repo,
        vec![turns(&[
            call("list_dir", json!({"path": "."})),
            report("complete", "done", &["python3 -m unittest passed"], &[], ""),
            report("continue", "not yet", &[], &["find the tests"], ""),
        ])],
        &["-n", "1", "--check", "python3 -m unittest", "x"],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    let checks = of_type(&run.events, "check_finished");
    assert_eq!(checks.len(), 2);
    for check in &checks {
        assert_eq!(check["check"]["exit_code"], 0);
        assert_eq!(check["check"]["verdict"], "no_tests", "{check}");
        assert!(check["check"]["note"]
            .as_str()
            .unwrap()
            .contains("ran 0 tests"));
    }
    let reason = of_type(&run.events, "report_rejected")[0]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("ran no test"), "{reason}");
}

/// What `--check auto` picks in [`failing_repo`].
const AUTO_PICKED: &str = "python3 -m unittest discover -s . -p '*_test.py'";

/// A repository with no test or build command in it.
fn nothing_to_test() -> TempRepo {
    let bare = TempRepo::new();
    bare.write("notes.txt", "nothing to test\n");
    bare.commit_all("start");
    bare
}

/// A one-round run whose worker only reports that it looked.
fn one_look(repo: &TempRepo, args: &[&str]) -> Run {
    run_script(repo, vec![turns(&[continue_report("looked")])], args)
}

#[test]
fn check_auto_says_what_it_picked_and_when_it_finds_none() {
    let repo = failing_repo();
    let run = one_look(&repo, &["-n", "1", "--check", "auto", "x"]);
    let warnings: Vec<&str> = of_type(&run.events, "warning")
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    let picked = AUTO_PICKED;
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(picked) && w.contains("--check auto")),
        "{warnings:?}"
    );
    assert_eq!(
        of_type(&run.events, "check_finished")[0]["check"]["command"],
        picked
    );

    let bare = nothing_to_test();
    let run = one_look(&bare, &["-n", "1", "--check", "auto", "x"]);
    let warnings: Vec<String> = of_type(&run.events, "warning")
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("found no test or build command")),
        "{warnings:?}"
    );
    assert!(of_type(&run.events, "check_finished").is_empty());
}

#[test]
fn by_default_the_round_is_observed_and_the_found_check_runs_without_a_warning() {
    let repo = failing_repo();
    let run = one_look(&repo, &["-n", "1", "x"]);
    let picked = AUTO_PICKED;
    assert_eq!(
        of_type(&run.events, "check_finished")[0]["check"]["command"],
        picked
    );
    let observed = of_type(&run.events, "round_observed");
    assert_eq!(observed.len(), 1);
    assert!(
        observed[0]["text"].as_str().unwrap().contains(picked),
        "{}",
        observed[0]["text"]
    );
    // The default's pick is the run log's, not a warning: the observation names the check.
    assert!(
        of_type(&run.events, "warning")
            .iter()
            .all(|w| !w["message"].as_str().unwrap().starts_with("check:")),
        "{:?}",
        of_type(&run.events, "warning")
    );
    // And a repository with nothing to test runs without a check, quietly.
    let bare = nothing_to_test();
    let run = one_look(&bare, &["-n", "1", "x"]);
    assert!(of_type(&run.events, "check_finished").is_empty());
    assert!(
        of_type(&run.events, "warning").is_empty(),
        "{:?}",
        run.events
    );
    assert_eq!(of_type(&run.events, "round_observed").len(), 1);
}

#[test]
fn the_commands_the_objective_names_are_run_and_shown_read_only() {
    // Seed 1, 04: a round rewrote a `greet.sh` the round before had made right; nothing
    // outside the model said what it printed.
    let repo = TempRepo::new();
    repo.write(
        "greet.sh",
        "#!/bin/sh\necho \"Hello, $name\"\necho written > out.txt\n",
    );
    repo.commit_all("start");
    let objective = "Fix greet.sh: `sh greet.sh Ann` must print exactly \"Hello, Ann!\" and `sh greet.sh` must print \"Hello, world!\"; `python3 -m unittest` is not a file";
    let run = one_look(&repo, &["-n", "1", objective]);
    let observed = of_type(&run.events, "round_observed");
    let text = observed[0]["text"].as_str().unwrap();
    assert!(
        text.contains("What the commands the objective names print now (run by ralph-tui at this round's start; run them yourself after a change):\n`sh greet.sh Ann` (exit code "),
        "{text}"
    );
    assert!(text.contains("```\nHello, \n"), "{text}");
    assert!(text.contains("`sh greet.sh` (exit code "), "{text}");
    assert!(!text.contains("`python3 -m unittest` ("), "{text}");
    // What the child was given is the observation, after the fixed prompt.
    assert!(user_message(&run, 1).contains("`sh greet.sh Ann` (exit code "));
    // They looked and changed nothing, where the sandbox holds.
    let support = ralph_tui::tools::sandbox::probe_with(std::path::Path::new(BIN));
    if support
        .check(ralph_tui::protocol::policy::SandboxMode::ReadOnly, false)
        .is_ok()
    {
        assert!(!repo.path().join("out.txt").exists());
    }
    // `--observe off` runs none.
    let off = one_look(&repo, &["-n", "1", "--observe", "off", objective]);
    assert!(of_type(&off.events, "round_observed").is_empty());
    assert!(!user_message(&off, 1).contains("What the commands the objective names"));
}

#[test]
fn a_claim_is_refused_while_a_command_the_objective_names_prints_other_than_it_asks() {
    // Seeds 2 and 3, 04 at b743a97: `greet.sh` printed `Hello, Ann` where the objective asks
    // for exactly "Hello, Ann!", the observation showed it every round, and no round saw
    // the difference; the run ended budget-limited with the `!` never written.
    let repo = TempRepo::new();
    repo.write("greet.sh", "#!/bin/sh\necho \"Hello, $1\"\n");
    repo.commit_all("start");
    let objective = "Fix greet.sh: `sh greet.sh Ann` must print exactly \"Hello, Ann!\".";
    let fixed = "#!/bin/sh\necho \"Hello, $1!\"\n";
    let worker = || {
        let greet = || call("run_command", json!({"command": "sh greet.sh Ann"}));
        vec![turns(&[
            greet(),
            report(
                "complete",
                "greets Ann",
                &["sh greet.sh Ann printed Hello, Ann"],
                &[],
                "",
            ),
            write_file_call("greet.sh", fixed),
            greet(),
            report(
                "complete",
                "greets Ann",
                &["sh greet.sh Ann printed Hello, Ann!"],
                &[],
                "",
            ),
        ])]
    };
    let run = run_script(&repo, worker(), &["-n", "1", objective]);
    assert_eq!(code(&run.out), 0, "{}", stderr(&run));
    let observed = of_type(&run.events, "round_observed");
    let text = observed[0]["text"].as_str().unwrap();
    assert!(
        text.contains("The objective says it must print exactly \"Hello, Ann!\"; it prints \"Hello, Ann\": NOT MET yet.\n"),
        "{text}"
    );
    let rejected = of_type(&run.events, "report_rejected");
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    let reason = rejected[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the objective says `sh greet.sh Ann` must print exactly \"Hello, Ann!\", and it prints \"Hello, Ann\" now"),
        "{reason}"
    );
    assert_eq!(last(&run.events)["status"], "complete");
    assert_eq!(repo.read("greet.sh"), fixed);

    // Without the observation nothing runs them, and the first claim stands.
    let repo = TempRepo::new();
    repo.write("greet.sh", "#!/bin/sh\necho \"Hello, $1\"\n");
    repo.commit_all("start");
    let off = run_script(&repo, worker(), &["-n", "1", "--observe", "off", objective]);
    assert!(of_type(&off.events, "report_rejected").is_empty());
    assert_eq!(last(&off.events)["status"], "complete");
}

#[test]
fn a_hanging_or_missing_check_is_bounded_and_the_round_still_starts() {
    let repo = failing_repo();
    for (check, verdict) in [
        ("sleep 30", "timed_out"),
        ("no-such-command-anywhere", "failed"),
    ] {
        let run = run_script(
            &repo,
            vec![turns(&[continue_report("looked")])],
            &[
                "-n",
                "1",
                "--command-timeout",
                "1",
                "--observe",
                "on",
                "--check",
                check,
                "x",
            ],
        );
        assert_eq!(code(&run.out), 4, "{check}: {}", stderr(&run));
        let ran = &of_type(&run.events, "check_finished")[0]["check"];
        assert_eq!(ran["verdict"], verdict, "{check}: {ran}");
        let observed = of_type(&run.events, "round_observed");
        assert_eq!(observed[0]["check"], verdict);
        assert_eq!(of_type(&run.events, "round_finished").len(), 1);
    }
}

#[test]
fn a_check_that_prints_megabytes_stays_within_its_bound() {
    let repo = failing_repo();
    let run = run_script(
        &repo,
        vec![turns(&[continue_report("looked")])],
        &[
            "-n",
            "1",
            "--observe",
            "on",
            "--check",
            "yes 'FAIL: a line of output' | head -c 5000000; exit 1",
            "x",
        ],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    let ran = &of_type(&run.events, "check_finished")[0]["check"];
    assert_eq!(ran["verdict"], "failed");
    assert!(ran["output"].as_str().unwrap().len() <= 4096);
    let text = of_type(&run.events, "round_observed")[0]["text"]
        .as_str()
        .unwrap()
        .len();
    assert!(text < 16 * 1024, "{text}");
}

#[test]
fn the_check_is_confined_like_a_worker_command() {
    let support = ralph_tui::tools::sandbox::probe_with(std::path::Path::new(BIN));
    if let Err(why) = support.check(
        ralph_tui::protocol::policy::SandboxMode::WorkspaceWrite,
        false,
    ) {
        eprintln!("skipped: this kernel has no sandbox ({why})");
        return;
    }
    let repo = failing_repo();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("written-by-the-check");
    let check = format!("echo x > {}", target.display());
    let run = run_script(
        &repo,
        vec![turns(&[continue_report("looked")])],
        &["-n", "1", "--check", &check, "x"],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    assert!(!target.exists(), "the check wrote outside the workspace");
    let ran = &of_type(&run.events, "check_finished")[0]["check"];
    assert_eq!(ran["verdict"], "failed", "{ran}");
}

/// Every file's path beneath `dir`.
fn walkdir(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walkdir(&path));
        } else {
            found.push(path.display().to_string());
        }
    }
    found
}

/// A library with two bugs in two files, and tests whose tracebacks name only their own lines.
fn two_bug_library() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("shop/__init__.py", "");
    repo.write(
        "shop/price.py",
        "def total(price, quantity):\n    return price + quantity\n",
    );
    repo.write(
        "shop/money.py",
        "def cents(value):\n    return f\"{value // 100}.{value % 100}\"\n",
    );
    repo.write(
        "tests/test_shop.py",
        "import unittest\nfrom shop.money import cents\nfrom shop.price import total\n\n\nclass ShopTest(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total(150, 4), 600)\n\n    def test_cents(self):\n        self.assertEqual(cents(105), \"1.05\")\n\n    def test_whole(self):\n        self.assertEqual(cents(200), \"2.0\")\n",
    );
    repo.commit_all("start");
    repo
}

#[test]
fn the_observation_says_what_code_each_failing_test_ran() {
    let repo = two_bug_library();
    let check = "python3 -m unittest discover -s tests";
    let run = run_script(
        &repo,
        vec![
            turns(&[
                write_file_call(
                    "shop/price.py",
                    "def total(price, quantity):\n    return price * quantity\n",
                ),
                continue_report("fixed total"),
            ]),
            turns(&[continue_report("looked")]),
        ],
        &[
            "-n",
            "2",
            "--check",
            check,
            "--observe",
            "on",
            "make the tests pass",
        ],
    );
    assert_eq!(code(&run.out), 4, "{}", stderr(&run));
    let observed = of_type(&run.events, "round_observed");
    let first = observed[0]["text"].as_str().unwrap();
    assert!(
        first.contains("The code of the workspace each failing test ran"),
        "{first}"
    );
    assert!(
        first.contains("- test_total (tests/test_shop.py): shop/price.py total (lines 1-2)\n"),
        "{first}"
    );
    assert!(
        first.contains("- test_cents (tests/test_shop.py): shop/money.py cents (lines 1-2)\n"),
        "{first}"
    );
    // The passing test is not named; the section follows the check's output.
    assert!(!first.contains("- test_whole"), "{first}");
    assert!(first.find("FAILED (failures=2)").unwrap() < first.find("- test_total").unwrap());
    // Round 2, after the fix: only the test still failing.
    let second = observed[1]["text"].as_str().unwrap();
    assert!(!second.contains("- test_total"), "{second}");
    assert!(
        second.contains("- test_cents (tests/test_shop.py)"),
        "{second}"
    );
    // The trace wrote nothing into the workspace, and the check's own output is as it was.
    let left: Vec<String> = walkdir(repo.path())
        .into_iter()
        .filter(|p| p.ends_with("trace.json") || p.ends_with("sitecustomize.py"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let checks = of_type(&run.events, "check_finished");
    assert!(!checks[0]["check"]["output"]
        .as_str()
        .unwrap()
        .contains("pytrace"));

    // Without the observation nothing is traced, and the check is the same.
    let plain = run_script(
        &two_bug_library(),
        vec![turns(&[continue_report("looked")])],
        &[
            "-n",
            "1",
            "--check",
            check,
            "--observe",
            "off",
            "make the tests pass",
        ],
    );
    assert!(of_type(&plain.events, "round_observed").is_empty());
    assert_eq!(
        of_type(&plain.events, "check_finished")[0]["check"]["verdict"],
        "failed"
    );
}

#[test]
fn a_blocker_while_the_round_start_check_fails_is_questioned_once() {
    // Seed 1, 06 at aea265d: the round's only edit was refused, and "the test still fails"
    // was filed as a blocker at once; the run ended in round 1 of 4.
    let repo = failing_repo();
    let blocked = report(
        "blocked",
        "the test still fails",
        &[],
        &[],
        "test_add still fails",
    );
    let failed_edit = call(
        "edit_file",
        json!({"path": "calc.py", "old": "return a * b", "new": "return a + b"}),
    );
    let run = run_script(
        &repo,
        vec![
            turns(&[
                failed_edit,
                blocked,
                continue_report("add() still subtracts"),
            ]),
            turns(&[
                write_file_call("calc.py", FIXED_ADD),
                complete_only("fixed add"),
            ]),
        ],
        &["-n", "2", "--check", CALC_CHECK, "fix add() in calc.py"],
    );
    let rejected = of_type(&run.events, "report_rejected");
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    let reason = rejected[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("not a blocker") && reason.contains("at this round's start"),
        "{reason}"
    );
    let accepted = of_type(&run.events, "report_accepted");
    assert_eq!(accepted[0]["round"], 1);
    assert_eq!(accepted[0]["report"]["status"], "continue");
    assert_eq!(accepted[1]["report"]["status"], "complete");
    assert_eq!(code(&run.out), 0, "{}", stderr(&run));

    // Filed again, the block stands: a failing check cannot tell a real blocker from work.
    let again = report(
        "blocked",
        "no package",
        &[],
        &[],
        "python-slugify is not installed",
    );
    let run = run_script(
        &failing_repo(),
        vec![turns(&[again.clone(), again])],
        &["-n", "2", "--check", CALC_CHECK, "fix add() in calc.py"],
    );
    assert_eq!(of_type(&run.events, "report_rejected").len(), 1);
    assert_eq!(
        of_type(&run.events, "report_accepted")[0]["report"]["status"],
        "blocked"
    );

    // A check that passed at the round's start questions nothing.
    let fine = calc_repo(FIXED_ADD);
    let blocked = report(
        "blocked",
        "need a password",
        &[],
        &[],
        "the deploy needs a password",
    );
    let run = run_script(
        &fine,
        vec![turns(&[blocked])],
        &["-n", "2", "--check", CALC_CHECK, "deploy it"],
    );
    assert!(of_type(&run.events, "report_rejected").is_empty());
    assert_eq!(
        of_type(&run.events, "report_accepted")[0]["report"]["status"],
        "blocked"
    );
}
