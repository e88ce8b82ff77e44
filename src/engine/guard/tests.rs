//! The loop guard, the claims check and the questioned blocker, on rounds written out call by
//! call as small models made them.

use super::*;
use crate::protocol::event::CheckVerdict;
use serde_json::json;

fn ok(output: &str) -> ToolResult {
    ToolResult {
        ok: true,
        output: output.into(),
    }
}

fn failed(output: &str) -> ToolResult {
    ToolResult {
        ok: false,
        output: output.into(),
    }
}

fn complete(evidence: &[&str]) -> Report {
    Report {
        status: ReportStatus::Complete,
        summary: "done".into(),
        evidence: evidence.iter().map(|e| (*e).to_string()).collect(),
        next_steps: vec![],
        blocker: String::new(),
    }
}

#[test]
fn an_identical_call_with_nothing_changed_is_refused_with_the_earlier_result() {
    let mut log = CallLog::default();
    let args = json!({"path": "README.md"});
    assert_eq!(log.check("read_file", &args), Repeat::Fresh);
    log.record(
        "read_file",
        &args,
        &failed("no such file: README.md"),
        false,
    );
    match log.check("read_file", &args) {
        Repeat::Refused { result, times } => {
            assert_eq!(times, 2);
            assert!(!result.ok);
            assert!(result.output.contains("not run again"));
            assert!(result.output.ends_with("no such file: README.md"));
        }
        Repeat::Fresh => panic!("the repeat ran"),
    }
    assert!(matches!(
        log.check("read_file", &args),
        Repeat::Refused { times: 3, .. }
    ));
    // Other arguments are another call.
    assert_eq!(
        log.check("read_file", &json!({"path": "a.py"})),
        Repeat::Fresh
    );
}

#[test]
fn a_file_change_in_between_lets_the_call_run_again() {
    let mut log = CallLog::default();
    let test = json!({"command": "python3 -m unittest"});
    log.check("run_command", &test);
    log.record("run_command", &test, &failed("exit code 1\nFAILED"), false);
    let edit = json!({"path": "a.py", "old": "-", "new": "+"});
    log.check("edit_file", &edit);
    log.record("edit_file", &edit, &ok("edited a.py"), true);
    assert_eq!(log.check("run_command", &test), Repeat::Fresh);
    log.record("run_command", &test, &ok("exit code 0\nOK"), false);
    assert!(matches!(
        log.check("run_command", &test),
        Repeat::Refused { times: 2, .. }
    ));
}

#[test]
fn a_complete_report_citing_a_failed_command_is_refused_with_its_exit_code() {
    let mut log = CallLog::default();
    let test = json!({"command": "python3  -m unittest"});
    log.check("run_command", &test);
    log.record(
        "run_command",
        &test,
        &failed("exit code 1\nFAILED (failures=1)"),
        false,
    );
    let why = log
        .contradiction(&complete(&["`python3 -m unittest` passed all tests"]))
        .unwrap();
    assert!(why.contains("exit code 1"), "{why}");
    assert!(why.contains("python3 -m unittest"), "{why}");
    // Unrelated evidence, and other statuses, are not checked against it.
    assert_eq!(
        log.contradiction(&complete(&["slug.py handles spaces"])),
        None
    );
    let mut report = complete(&["python3 -m unittest passed"]);
    report.status = ReportStatus::Continue;
    assert_eq!(log.contradiction(&report), None);
}

#[test]
fn the_last_run_of_the_named_command_decides() {
    let mut log = CallLog::default();
    let plain = json!({"command": "python3 -m unittest"});
    let verbose = json!({"command": "python3 -m unittest -v"});
    log.record("run_command", &plain, &failed("exit code 1"), false);
    log.record("run_command", &verbose, &ok("exit code 0"), false);
    log.tool_calls = 2;
    assert_eq!(
        log.contradiction(&complete(&["`python3 -m unittest` passes"])),
        None
    );
    log.record("run_command", &plain, &failed("exit code 2"), false);
    assert!(log
        .contradiction(&complete(&["python3 -m unittest passes"]))
        .unwrap()
        .contains("exit code 2"));
}

#[test]
fn an_exit_code_cited_for_a_command_this_round_never_ran_is_refused() {
    let mut log = CallLog::default();
    let run = json!({"command": "sh greet.sh Ann"});
    log.check("run_command", &run);
    log.record("run_command", &run, &ok("exit code 0\nHello, Ann!"), false);
    assert_eq!(
        log.contradiction(&complete(&["sh greet.sh Ann: exit code 0"])),
        None
    );
    let why = log
        .contradiction(&complete(&[
            "sh greet.sh Ann: exit code 0",
            "`sh greet.sh`: exit code 0",
        ]))
        .unwrap();
    assert!(why.contains("did not run it"), "{why}");
    let why = log
        .contradiction(&complete(&["sh greet.sh Ann: exit code 2"]))
        .unwrap();
    assert!(why.contains("exited with code 2"), "{why}");
    // Evidence in other words is not read as a cited exit code.
    assert_eq!(
        log.contradiction(&complete(&["greet.sh prints Hello"])),
        None
    );
}

#[test]
fn a_complete_report_after_a_failed_change_is_refused_until_a_change_succeeds() {
    let mut log = CallLog::default();
    let edit = json!({"path": "textutil.py", "old": "x", "new": "x"});
    log.check("edit_file", &edit);
    log.record(
        "edit_file",
        &edit,
        &failed("`old` and `new` are the same; nothing would change"),
        false,
    );
    let test = json!({"command": "python3 -m unittest"});
    log.record(
        "run_command",
        &test,
        &ok("exit code 0\nRan 3 tests in 0.001s\n\nOK"),
        false,
    );
    let why = log
        .contradiction(&complete(&["python3 -m unittest: exit code 0"]))
        .unwrap();
    assert!(why.contains("edit_file textutil.py"), "{why}");
    assert!(why.contains("nothing would change"), "{why}");
    let write = json!({"path": "textutil.py", "content": "def slugify(t): ..."});
    log.record("write_file", &write, &ok("wrote textutil.py"), true);
    assert_eq!(
        log.contradiction(&complete(&["python3 -m unittest: exit code 0"])),
        None
    );
}

#[test]
fn output_quoted_that_the_command_did_not_print_is_refused_with_what_it_printed() {
    let mut log = CallLog::default();
    let run = json!({"command": "sh greet.sh Ann"});
    log.check("run_command", &run);
    log.record("run_command", &run, &ok("exit code 0\nHello, !"), false);
    for evidence in [
        "sh greet.sh Ann prints Hello, Ann!",
        "`sh greet.sh Ann` printed 'Hello, Ann!'",
        "sh greet.sh Ann: exit code 0, output: \"Hello, Ann!\"",
    ] {
        let why = log.contradiction(&complete(&[evidence])).unwrap();
        assert!(
            why.contains("says `sh greet.sh Ann` printed \"Hello, Ann")
                && why.contains("printed:\nHello, !\n"),
            "{why}"
        );
    }
    // Naming the command and its exit code is left to the exit-code rule, which it passes.
    assert_eq!(
        log.contradiction(&complete(&["sh greet.sh Ann: exit code 0"])),
        None
    );
    // Fixed and run again, chained with another run: the same words are true now.
    let both = json!({"command": "sh greet.sh Ann; sh greet.sh"});
    log.record(
        "run_command",
        &both,
        &ok("exit code 0\nHello, Ann!\nHello, world!"),
        false,
    );
    assert_eq!(
        log.contradiction(&complete(&[
            "sh greet.sh Ann prints Hello, Ann!",
            "sh greet.sh prints Hello, world!",
            "`sh greet.sh Ann` printed 'Hello,  Ann!'",
        ])),
        None
    );
    let why = log
        .contradiction(&complete(&["sh greet.sh prints \"Hello, Bob!\""]))
        .unwrap();
    assert!(why.contains("Hello, Ann!\nHello, world!"), "{why}");
}

#[test]
fn a_run_that_ran_no_test_is_no_evidence_of_a_pass() {
    let mut log = CallLog::default();
    let bare = json!({"command": "python3 -m unittest"});
    log.check("run_command", &bare);
    let empty = "exit code 0\n\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK";
    log.record("run_command", &bare, &ok(empty), false);
    for evidence in [
        "python3 -m unittest: exit code 0",
        "`python3 -m unittest` passes",
        "python3 -m unittest: Ran 0 tests, OK",
    ] {
        let why = log.contradiction(&complete(&[evidence])).unwrap();
        assert!(
            why.contains("ran no test (unittest ran 0 tests)")
                && why.contains("discover -p '*test*.py'"),
            "{why}"
        );
    }
    // A run that found the tests is evidence, cited by its exit code or its words.
    let found = json!({"command": "python3 -m unittest discover -p '*test*.py'"});
    log.record(
        "run_command",
        &found,
        &ok("exit code 0\n...\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nOK"),
        false,
    );
    for evidence in [
        "python3 -m unittest discover -p '*test*.py': exit code 0",
        "python3 -m unittest discover -p '*test*.py': Ran 3 tests, OK",
        "`python3 -m unittest discover -p '*test*.py'` shows all tests pass",
    ] {
        assert_eq!(
            log.contradiction(&complete(&[evidence])),
            None,
            "{evidence}"
        );
    }
    assert!(log
        .contradiction(&complete(&[
            "python3 -m unittest discover -p '*test*.py': Ran 5 tests, OK"
        ]))
        .unwrap()
        .contains("Ran 3 tests in 0.001s"));
}

#[test]
fn honest_evidence_in_the_shapes_workers_write_stands() {
    let runs = [
        (
            "grep -n port config/app.ini",
            "exit code 0\n3:port = 8080\n8:port = 5432",
        ),
        (
            "cargo test --offline",
            "exit code 0\n   Compiling leap v0.1.0\nrunning 2 tests\ntest tests::century ... ok\ntest tests::plain ... ok\n\ntest result: ok. 2 passed; 0 failed; 0 ignored\n\n   Doc-tests leap\n\nrunning 0 tests\n",
        ),
        (
            "python3 -m unittest discover -s tests",
            "exit code 0\n.......\n----------------------------------------------------------------------\nRan 7 tests in 0.003s\n\nOK",
        ),
        ("ls", "exit code 0\nREADME.md\nslug.py\nslug_test.py"),
    ];
    let mut log = CallLog::default();
    for (command, output) in runs {
        let args = json!({ "command": command });
        log.check("run_command", &args);
        log.record("run_command", &args, &ok(output), false);
    }
    for evidence in [
        "grep -n port config/app.ini shows 3:port = 8080 and 8:port = 5432",
        "cargo test --offline: 2 passed, 0 failed",
        "`cargo test --offline` prints \"test result: ok. 2 passed\"",
        "python3 -m unittest discover -s tests: Ran 7 tests, OK",
        "python3 -m unittest discover -s tests: exit code 0",
        "`python3 -m unittest discover -s tests` passes for `slug.py`",
        "`ls` shows slug.py and slug_test.py",
        "slug.py handles spaces: \"a b\" becomes \"a-b\"",
    ] {
        assert_eq!(
            log.contradiction(&complete(&[evidence])),
            None,
            "{evidence}"
        );
    }
}

#[test]
fn a_run_keeps_the_end_of_its_output_and_a_refusal_quotes_less() {
    let mut log = CallLog::default();
    let run = json!({"command": "make test"});
    let long: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    log.record(
        "run_command",
        &run,
        &ok(&format!("exit code 0\n{long}all green")),
        false,
    );
    log.tool_calls = 1;
    let kept = &log.commands[0].output;
    assert!(kept.len() <= KEPT_OUTPUT_BYTES && kept.ends_with("all green"));
    let why = log
        .contradiction(&complete(&["make test printed \"all 7 suites pass\""]))
        .unwrap();
    let quoted = why.split("printed:\n").nth(1).unwrap();
    assert!(
        quoted.starts_with('…') && quoted.contains("all green"),
        "{why}"
    );
    assert!(quoted.len() < QUOTED_OUTPUT_BYTES + 200, "{why}");
    assert_eq!(
        log.contradiction(&complete(&["make test: all green"])),
        None
    );
    // Whether a run ran no test is read from all of its output, not the end kept.
    let cargo = json!({"command": "cargo test"});
    let tests: String = (0..400)
        .map(|i| format!("test tests::case_{i} ... ok\n"))
        .collect();
    let output = format!("exit code 0\nrunning 400 tests\n{tests}\ntest result: ok. 400 passed; 0 failed\n\n   Doc-tests m\n\nrunning 0 tests\n");
    log.record("run_command", &cargo, &ok(&output), false);
    assert_eq!(
        log.contradiction(&complete(&["cargo test: exit code 0"])),
        None
    );
}

#[test]
fn a_blocker_after_a_failing_command_is_questioned_once() {
    let mut log = CallLog::default();
    let mut blocked = complete(&[]);
    blocked.status = ReportStatus::Blocked;
    blocked.blocker = "the tests fail".into();
    assert_eq!(log.question_block(&blocked), None, "no command ran");
    let test = json!({"command": "python3 -m unittest"});
    log.record("run_command", &test, &failed("exit code 1\nFAILED"), false);
    let why = log.question_block(&blocked).unwrap();
    assert!(
        why.contains("python3 -m unittest") && why.contains("exit code 1"),
        "{why}"
    );
    // Said again, the claim stands.
    assert_eq!(log.question_block(&blocked), None);
    // A passing last command is no reason to question it.
    let mut log = CallLog::default();
    log.record("run_command", &test, &ok("exit code 0"), false);
    assert_eq!(log.question_block(&blocked), None);
}

#[test]
fn a_round_without_tool_calls_cannot_report_complete() {
    let log = CallLog::default();
    assert!(log
        .contradiction(&complete(&["it works"]))
        .unwrap()
        .contains("called no tool"));
}

#[test]
fn a_write_repeated_after_it_succeeded_says_to_check_and_report() {
    let mut log = CallLog::default();
    let args = json!({"path": "hello.txt", "content": "Hello, Ralph!"});
    assert_eq!(log.check("write_file", &args), Repeat::Fresh);
    log.record("write_file", &args, &ok("created 'hello.txt'"), true);
    match log.check("write_file", &args) {
        Repeat::Refused { result, .. } => {
            assert!(
                result.output.contains("already succeeded"),
                "{}",
                result.output
            );
            assert!(
                result.output.contains("call ralph_report"),
                "{}",
                result.output
            );
        }
        Repeat::Fresh => panic!("the repeat ran"),
    }
    // A failed write repeated is told to do something different, as any other call.
    let bad = json!({"path": "x.txt"});
    log.check("write_file", &bad);
    log.record("write_file", &bad, &failed("content is required"), false);
    match log.check("write_file", &bad) {
        Repeat::Refused { result, .. } => assert!(result.output.contains("Do something different")),
        Repeat::Fresh => panic!("the repeat ran"),
    }
}

#[test]
fn an_edit_made_again_after_a_later_change_undid_it_is_refused_as_back_and_forth() {
    // The 1.5B's round: $name -> $1, then $1 -> $2 and back, twenty times.
    let mut log = CallLog::default();
    let edit = |old: &str, new: &str| json!({"path": "greet.sh", "old": old, "new": new});
    let apply = |log: &mut CallLog, args: &Value| -> Repeat {
        let seen = log.check("edit_file", args);
        if seen == Repeat::Fresh {
            log.record("edit_file", args, &ok("replaced 1 occurrence(s)"), true);
        }
        seen
    };
    assert_eq!(apply(&mut log, &edit("$name", "$1")), Repeat::Fresh);
    assert_eq!(apply(&mut log, &edit("$1", "$2")), Repeat::Fresh);
    assert_eq!(apply(&mut log, &edit("$2", "$1")), Repeat::Fresh);
    // $1 -> $2 again: the file goes back to what the second edit made.
    match apply(&mut log, &edit("$1", "$2")) {
        Repeat::Refused { result, times } => {
            assert!(!result.ok);
            assert!(
                result.output.contains("going back and forth"),
                "{}",
                result.output
            );
            assert_eq!(times, 2);
        }
        fresh => panic!("{fresh:?}"),
    }
    // Made once more, it counts toward the wrap-up like any repeat.
    match apply(&mut log, &edit("$1", "$2")) {
        Repeat::Refused { times, .. } => assert_eq!(times, REPEATS_BEFORE_WRAP_UP),
        fresh => panic!("{fresh:?}"),
    }
    // A command, or a file change that failed, is not a change to go back to.
    let run = json!({"command": "sh greet.sh"});
    log.check("run_command", &run);
    log.record("run_command", &run, &ok("exit code 0\nHello, !"), false);
    let missing = edit("nothing", "x");
    log.check("edit_file", &missing);
    log.record("edit_file", &missing, &failed("`old` not found"), false);
    log.record("write_file", &json!({"path": "b"}), &ok("wrote b"), true);
    assert_eq!(log.check("run_command", &run), Repeat::Fresh);
    assert_eq!(log.check("edit_file", &missing), Repeat::Fresh);
}

#[test]
fn evidence_of_what_a_command_prints_is_refused_when_the_round_never_ran_it() {
    let mut log = CallLog::default();
    let read = json!({"path": "greet.sh"});
    log.check("read_file", &read);
    log.record("read_file", &read, &ok("echo \"Hello, $1\""), false);
    // The 1.5B's evidence, having only read the file.
    let item = "read_file greet.sh: fixed to print 'Hello, Ann!' when 'sh greet.sh Ann' is called, and 'Hello, world!' when no argument is given.";
    let why = log.contradiction(&complete(&[item])).unwrap();
    assert!(
        why.contains("says what `sh greet.sh Ann` prints, but this round never ran it"),
        "{why}"
    );
    // Once it ran (here chained with the no-argument case), the claim is read as before.
    let run = json!({"command": "sh greet.sh Ann; sh greet.sh"});
    log.check("run_command", &run);
    log.record(
        "run_command",
        &run,
        &ok("exit code 0\nHello, Ann!\nHello, world!"),
        false,
    );
    assert_eq!(log.contradiction(&complete(&[item])), None);
    // Quoting a file, a function call or a command without saying it prints claims nothing.
    for item in [
        "read_file greet.sh: it now uses \"$1\"",
        "the function 'slugify(\"A B\")' returns 'a-b'",
        "'sh greet.sh Ann' is the way to call it",
    ] {
        let mut log = CallLog::default();
        log.check("read_file", &read);
        log.record("read_file", &read, &ok("x"), false);
        assert_eq!(log.contradiction(&complete(&[item])), None, "{item}");
    }
}

#[test]
fn a_blocker_after_a_run_that_found_no_test_or_a_refusing_check_is_questioned_once() {
    let blocked = Report {
        status: ReportStatus::Blocked,
        summary: "the file has the correct content".into(),
        evidence: vec![],
        next_steps: vec![],
        blocker: "the file has the correct content".into(),
    };
    // The 1.5B wrote slugify back without its docstring; doctest then found nothing.
    let mut log = CallLog::default();
    let run = json!({"command": "python3 -m doctest -v textutil.py"});
    log.check("run_command", &run);
    log.record(
        "run_command",
        &run,
        &ok("exit code 0\n2 items had no tests:\n0 tests in 2 items.\n0 passed and 0 failed.\nTest passed."),
        false,
    );
    let why = log.question_block(&blocked).unwrap();
    assert!(why.contains("ran no test"), "{why}");
    assert!(why.contains("missing or were removed"), "{why}");
    // Once a round: the same claim made again stands.
    assert_eq!(log.question_block(&blocked), None);
    // The check refusing a claim counts too, though the last command passed.
    let mut log = CallLog::default();
    let run = json!({"command": "cat stats.py"});
    log.check("run_command", &run);
    log.record(
        "run_command",
        &run,
        &ok("exit code 0\ndef median(values):"),
        false,
    );
    assert_eq!(log.question_block(&blocked), None);
    let mut log = CallLog::default();
    log.check_refused("python3 -m unittest", "failed");
    let why = log.question_block(&blocked).unwrap();
    assert!(
        why.contains("`python3 -m unittest` does not pass (failed)"),
        "{why}"
    );
}

#[test]
fn a_report_that_a_file_prints_what_no_run_of_it_printed_is_refused() {
    let mut log = CallLog::default();
    let run = json!({"command": "sh greet.sh Ann"});
    log.check("run_command", &run);
    log.record("run_command", &run, &ok("exit code 0\nHello, Ann"), false);
    // The 1.5B's report: its claim is in the summary, the evidence unverifiable.
    let mut report = complete(&["read_file greet.sh: Hello, Ann."]);
    report.summary = "Fixed greet.sh to print 'Hello, Ann!' when called with 'Ann'.".into();
    let why = log.contradiction(&report).unwrap();
    assert!(
        why.contains("says greet.sh prints \"Hello, Ann!\", but no run of it"),
        "{why}"
    );
    assert!(
        why.contains("`sh greet.sh Ann` printed:\nHello, Ann"),
        "{why}"
    );
    // What a run of it did print stands, whichever run printed it.
    let bare = json!({"command": "sh greet.sh"});
    log.check("run_command", &bare);
    log.record(
        "run_command",
        &bare,
        &ok("exit code 0\nHello, world!"),
        false,
    );
    report.summary = "greet.sh prints 'Hello, Ann' and 'Hello, world!'".into();
    assert_eq!(log.contradiction(&report), None);
    // A file the round never ran is run first (seed 2 at f46daa9: greet.sh edited, then
    // claimed, never run: a false completion).
    report.summary = "Fixed stats.py to print 'Hello, Ann!'".into();
    assert_eq!(
        log.contradiction(&report).as_deref(),
        Some("the report says stats.py prints \"Hello, Ann!\", but this round never ran stats.py: run it and cite what it prints, or report status \"continue\"")
    );
    // A number, or no output verb: nothing to read against.
    for summary in [
        "median now returns 2.5 for 'greet.sh'",
        "greet.sh uses 'Hello, Ann!'",
    ] {
        report.summary = summary.into();
        assert_eq!(log.contradiction(&report), None, "{summary}");
    }
}

#[test]
fn a_blocker_after_a_refuted_claim_is_questioned_once() {
    // The 1.5B's round: its claim refused (greet.sh printed `Hello, Ann`), then "blocked".
    let mut log = CallLog::default();
    let run = json!({"command": "sh greet.sh"});
    log.check("run_command", &run);
    log.record("run_command", &run, &ok("exit code 0\nHello,"), false);
    let blocked = Report {
        status: ReportStatus::Blocked,
        summary: "the output changed".into(),
        evidence: vec![],
        next_steps: vec![],
        blocker: "a change in the environment".into(),
    };
    assert_eq!(log.question_block(&blocked), None);
    let mut log = CallLog::default();
    log.check("run_command", &run);
    log.record("run_command", &run, &ok("exit code 0\nHello,"), false);
    log.claim_refuted("the report says greet.sh prints \"Hello, Ann!\"");
    let why = log.question_block(&blocked).unwrap();
    assert!(why.contains("own record refuted"), "{why}");
    assert_eq!(log.question_block(&blocked), None);
}

#[test]
fn a_blocker_filed_after_a_refused_claim_goes_on_as_continue_with_the_refusal_next() {
    // 04-shell-greet, seed 3: blocked (questioned), complete (refused: the run printed
    // `Hello, Ann`), then the refusal itself filed as the blocker.
    let blocked = Report {
        status: ReportStatus::Blocked,
        summary: "greet.sh prints the greeting".into(),
        evidence: vec!["read_file greet.sh: Hello, Ann!".into()],
        next_steps: vec![],
        blocker: "The report says greet.sh prints 'Hello, Ann!', but no run of it in this round printed that.".into(),
    };
    let mut log = CallLog::default();
    assert_eq!(log.overruled_block(&blocked), None, "nothing was refused");
    let reason = "the report says greet.sh prints \"Hello, Ann!\", but no run of it in this round printed that; `sh greet.sh Ann` printed:\nHello, Ann\nCite what it printed, or fix the cause and run it again";
    log.claim_refuted(reason);
    let goes_on = log.overruled_block(&blocked).unwrap();
    assert_eq!(goes_on.status, ReportStatus::Continue);
    assert_eq!(goes_on.blocker, "");
    assert_eq!(goes_on.summary, blocked.summary);
    assert_eq!(goes_on.evidence, blocked.evidence);
    let step = &goes_on.next_steps[0];
    assert!(
        step.starts_with("a claim was refused: the report says greet.sh prints")
            && step.contains("printed: Hello, Ann")
            && step.chars().count() <= crate::protocol::report::REPORT_ITEM_MAX,
        "{step}"
    );
    crate::protocol::report::check_rules(&goes_on).unwrap();
    // Only a block: a continue or complete report is left as it is.
    let mut other = goes_on.clone();
    assert_eq!(log.overruled_block(&other), None);
    other.status = ReportStatus::Complete;
    assert_eq!(log.overruled_block(&other), None);

    // The check's refusal: its command is the next step.
    let mut log = CallLog::default();
    log.check_refused("python3 -m unittest", "failed");
    let goes_on = log.overruled_block(&blocked).unwrap();
    assert_eq!(
        goes_on.next_steps,
        ["make the repository's check `python3 -m unittest` pass (it did not: failed)"]
    );
}

#[test]
fn a_blocker_filed_after_a_change_that_was_never_run_is_questioned_once() {
    let mut blocked = complete(&[]);
    blocked.status = ReportStatus::Blocked;
    blocked.blocker = "The file already has the correct content.".into();
    let write = json!({"path": "greet.sh", "content": "echo \"Hello, $1\"\n"});
    let mut log = CallLog::default();
    log.check("write_file", &write);
    log.record("write_file", &write, &ok("replaced 'greet.sh'"), true);
    let why = log.question_block(&blocked).unwrap();
    assert!(
        why.contains("changed greet.sh and ran no command since"),
        "{why}"
    );
    assert_eq!(log.question_block(&blocked), None, "said again, it stands");

    // A command after the change leaves only what that command says.
    let mut log = CallLog::default();
    log.record("write_file", &write, &ok("replaced 'greet.sh'"), true);
    let run = json!({"command": "sh greet.sh Ann"});
    log.check("run_command", &run);
    log.record("run_command", &run, &ok("exit code 0\nHello, Ann!"), false);
    assert_eq!(log.question_block(&blocked), None);

    // A failed write changed nothing: nothing was left unrun.
    let mut log = CallLog::default();
    log.record(
        "write_file",
        &write,
        &failed("not written: outside the workspace"),
        false,
    );
    assert_eq!(log.question_block(&blocked), None);
}

#[test]
fn a_blocker_filed_while_the_check_fails_after_the_last_change_is_questioned() {
    let mut blocked = complete(&[]);
    blocked.status = ReportStatus::Blocked;
    blocked.blocker = "The file already has the correct content.".into();
    let write = json!({"path": "test_stats.py", "content": "import unittest\n"});
    let mut log = CallLog::default();
    log.record("write_file", &write, &ok("replaced 'test_stats.py'"), true);
    log.change_checked("python3 -m unittest", &check_run(CheckVerdict::Failed));
    let why = log.question_block(&blocked).unwrap();
    assert!(
        why.contains("`python3 -m unittest` does not pass after this round's last change (failed)"),
        "{why}"
    );
    // A later change the check passes clears it (what is left is the unrun change).
    let mut log = CallLog::default();
    log.record("write_file", &write, &ok("replaced 'test_stats.py'"), true);
    log.change_checked("python3 -m unittest", &check_run(CheckVerdict::Failed));
    let run = json!({"command": "python3 -m unittest"});
    log.record(
        "run_command",
        &run,
        &ok("exit code 0\nRan 3 tests\nOK"),
        false,
    );
    log.record("write_file", &write, &ok("replaced 'test_stats.py'"), true);
    log.change_checked("python3 -m unittest", &check_run(CheckVerdict::Passed));
    let why = log.question_block(&blocked).unwrap();
    assert!(why.contains("ran no command since"), "{why}");
}

#[test]
fn a_blocker_filed_again_while_the_rounds_own_change_fails_the_check_goes_on() {
    // 06-py-median, seed 1: the body written onto the `def` line, the check failing after
    // it, and the indentation error it made filed as the blocker twice.
    let mut blocked = complete(&[]);
    blocked.status = ReportStatus::Blocked;
    blocked.blocker = "test_stats cannot be imported: an indentation error in stats.py.".into();
    let edit = json!({"path": "stats.py", "old": "def median(values):", "new": "def median(values):    return 0"});
    let mut log = CallLog::default();
    log.record(
        "edit_file",
        &edit,
        &ok("replaced 1 occurrence(s) in 'stats.py'"),
        true,
    );
    log.change_checked("python3 -m unittest", &check_run(CheckVerdict::Failed));
    // The first block is questioned, not overruled: the worker may still fix it this round.
    assert_eq!(log.overruled_block(&blocked), None);
    assert!(log.question_block(&blocked).is_some());
    let goes_on = log.overruled_block(&blocked).unwrap();
    assert_eq!(goes_on.status, ReportStatus::Continue);
    assert_eq!(
        goes_on.next_steps,
        ["make the repository's check `python3 -m unittest` pass: it did not after the last round's change (failed); the observation shows its output"]
    );
    crate::protocol::report::check_rules(&goes_on).unwrap();
    // A later change the check passes leaves a block filed after it alone.
    log.change_checked("python3 -m unittest", &check_run(CheckVerdict::Passed));
    assert_eq!(log.overruled_block(&blocked), None);
}

/// A run of the check `python3 -m unittest` that ended with `verdict`.
fn check_run(verdict: CheckVerdict) -> CheckRun {
    CheckRun {
        command: "python3 -m unittest".into(),
        exit_code: Some(i32::from(verdict != CheckVerdict::Passed)),
        verdict,
        note: String::new(),
        wall_ms: 100,
        output: String::new(),
    }
}

/// Records `name` with `arguments` as a call answered "already in place".
fn found_in_place(log: &mut CallLog, name: &str, arguments: &Value) {
    let in_place = format!("{ALREADY_IN_PLACE}the file already reads so");
    log.check(name, arguments);
    log.record(name, arguments, &failed(&in_place), false);
}

#[test]
fn a_prose_file_found_already_as_asked_needs_no_run_before_a_claim() {
    // Seed 2, 02: the guide's typo fixed in round 2, the fix asked again in round 3.
    let mut log = CallLog::default();
    let edit = json!({"path": "docs/guide.md", "old": "to recieve mail", "new": "to receive mail"});
    found_in_place(&mut log, "edit_file", &edit);
    let report = complete(&["read_file docs/guide.md: receive is spelled right"]);
    assert_eq!(log.contradiction(&report), None);
    // An `old` given as its own `new` shows nothing made (seed 3, 02 at 68cd11f: the typo
    // copied into `new`, then claimed fixed).
    let copied =
        json!({"path": "docs/guide.md", "old": "to recieve mail", "new": "to recieve mail"});
    found_in_place(&mut log, "edit_file", &copied);
    let why = log.contradiction(&report).unwrap();
    assert!(
        why.contains("last edit of docs/guide.md changed nothing"),
        "{why}"
    );
    // Nor does a write of the file as it is.
    found_in_place(&mut log, "edit_file", &edit);
    assert_eq!(log.contradiction(&report), None);
    let rewrite = json!({"path": "docs/guide.md", "content": "to recieve mail\n"});
    found_in_place(&mut log, "write_file", &rewrite);
    assert!(log.contradiction(&report).is_some());
    // A script found so still needs its run.
    let script = json!({"path": "greet.sh", "old": "Hello, $1!", "new": "Hello, $1!"});
    found_in_place(&mut log, "edit_file", &script);
    let why = log.contradiction(&report).unwrap();
    assert!(
        why.contains("last edit of greet.sh changed nothing"),
        "{why}"
    );
}

#[test]
fn a_prose_rename_left_half_made_refuses_the_claim_until_the_rest_is_made() {
    // Seed 1, 02 at fb9124e: one `recieve` of the guide's four fixed, the guide claimed fixed.
    let mut log = CallLog::default();
    let report = complete(&["read_file docs/guide.md"]);
    let edit = json!({"path": "docs/guide.md", "old": "to recieve mail", "new": "to receive mail"});
    log.check("edit_file", &edit);
    let said = format!(
        "replaced 1 occurrence(s) in 'docs/guide.md'. The word `recieve` {WORD_LEFT} 'docs/guide.md' at lines 9, 14; to change it everywhere in a file, give that file's path with `old` = `recieve` and `new` = `receive` alone"
    );
    log.record("edit_file", &edit, &ok(&said), true);
    let why = log.contradiction(&report).unwrap();
    assert_eq!(
        why,
        format!("the round's last change of docs/guide.md left part of it undone: The word `recieve` {WORD_LEFT} 'docs/guide.md' at lines 9, 14. Make that change too, or report status \"continue\"")
    );
    // The rest made: the claim stands.
    let rest = json!({"path": "docs/guide.md", "old": "recieve", "new": "receive"});
    log.check("edit_file", &rest);
    log.record(
        "edit_file",
        &rest,
        &ok("replaced the word `recieve` with `receive` at all 2 places it stands in 'docs/guide.md' (lines 9, 14)"),
        true,
    );
    assert_eq!(log.contradiction(&report), None);
    // In source code the check, not the word, says whether the work is done.
    let code = json!({"path": "shop/orders.py", "old": "get_usr(1)", "new": "get_user(1)"});
    log.check("edit_file", &code);
    log.record(
        "edit_file",
        &code,
        &ok(&format!("replaced 1 occurrence(s) in 'shop/orders.py'. The word `get_usr` {WORD_LEFT} 'shop/orders.py' at line 3")),
        true,
    );
    let run = json!({"command": "python3 -m unittest"});
    log.check("run_command", &run);
    log.record(
        "run_command",
        &run,
        &ok("exit code 0\nRan 2 tests\n\nOK"),
        false,
    );
    assert_eq!(
        log.contradiction(&complete(&["run_command python3 -m unittest: OK"])),
        None
    );
}

#[test]
fn an_edit_that_finds_the_file_already_as_asked_is_no_failed_change() {
    let mut log = CallLog::default();
    let write = json!({"path": "greet.sh", "content": "echo \"Hello, $1!\"\n"});
    log.check("write_file", &write);
    log.record("write_file", &write, &ok("replaced 'greet.sh'"), true);
    let run = json!({"command": "sh greet.sh Ann"});
    log.check("run_command", &run);
    log.record("run_command", &run, &ok("exit code 0\nHello, Ann!"), false);
    let same = json!({"path": "greet.sh", "old": "Hello, $1!", "new": "Hello, $1!"});
    let in_place = format!("{ALREADY_IN_PLACE}'greet.sh' already has this text (line 1)");
    log.check("edit_file", &same);
    log.record("edit_file", &same, &failed(&in_place), false);
    let report = complete(&["sh greet.sh Ann printed Hello, Ann!"]);
    // Not a failed change; but a claim needs something shown after it.
    let why = log.contradiction(&report).unwrap();
    assert!(
        why.contains("last edit of greet.sh changed nothing"),
        "{why}"
    );
    assert!(!why.contains("failed"), "{why}");
    let again = json!({"command": "sh greet.sh Ann; sh greet.sh"});
    log.check("run_command", &again);
    log.record(
        "run_command",
        &again,
        &ok("exit code 0\nHello, Ann!\nHello, world!"),
        false,
    );
    assert_eq!(log.contradiction(&report), None);
    // A path that looks like the marker is still a failed change.
    let spoof = json!({"path": "already in place: x", "old": "a", "new": "b"});
    log.record(
        "edit_file",
        &spoof,
        &failed("'already in place: x' not found"),
        false,
    );
    assert!(log
        .contradiction(&report)
        .unwrap()
        .contains("last change to a file failed"));
}
