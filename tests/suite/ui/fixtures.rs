//! Fixtures for the UI tests: a setup, states built by feeding real messages, rendering to
//! text with the filters that keep snapshots stable across machines and runs.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyModifiers};
use ralph_tui::protocol::event::{ChangedFile, Event, RoundOutcome, RunStatus, Verification};
use ralph_tui::protocol::report::{Report, ReportStatus};
use ralph_tui::screens::keys::key;
use ralph_tui::screens::state::{DiffSource, Effect};
use ralph_tui::screens::{Msg, Setup, State, Theme};
use ralph_tui::workspace::DiffModel;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::Terminal;

pub const OBJECTIVE: &str =
    "Implement slugify in slug.py so that python3 -m unittest passes. Keep the tests unchanged.";

pub fn setup() -> Setup {
    Setup {
        repo: "demo-repo".into(),
        workspace: "~/src/demo-repo".into(),
        model: "SmolLM2-135M-Instruct.Q4_1.gguf".into(),
        device: String::new(),
        max_rounds: 8,
        sandbox: "workspace-write".into(),
        approval: "auto".into(),
        verify: Some("python3 -m unittest".into()),
        run_dir: "~/.local/share/ralph-tui/runs/20260101-090000-1a2b".into(),
        ctx_size: 4096,
        worktree: None,
        round_timeout: None,
    }
}

pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        for x in 0..area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Replaces what differs between machines and runs: run ids, hashes, temp paths.
pub fn filtered(text: &str) -> String {
    let rules = [
        (r"\d{8}-\d{6}-[0-9a-f]{4}", "[RUN-ID]"),
        (r"\b[0-9a-f]{10,40}\b", "[HASH]"),
        (r"/tmp/[^\s│]+", "[TMP]"),
    ];
    let mut text = text.to_string();
    for (pattern, with) in rules {
        text = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&text, with)
            .into_owned();
    }
    text
}

pub fn draw(state: &mut State, width: u16, height: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    state.sync(Rect::new(0, 0, width, height));
    terminal
        .draw(|frame| frame.render_widget(&*state, frame.area()))
        .unwrap();
    terminal.backend().buffer().clone()
}

pub fn screen(state: &mut State, width: u16, height: u16) -> String {
    filtered(&buffer_text(&draw(state, width, height)))
}

pub fn send(state: &mut State, event: Event) -> Vec<Effect> {
    state.update(Msg::Engine(event))
}

pub fn press(state: &mut State, code: KeyCode) -> Vec<Effect> {
    state.update(key(code, KeyModifiers::NONE))
}

pub fn ctrl(state: &mut State, c: char) -> Vec<Effect> {
    state.update(key(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub fn report(status: ReportStatus, summary: &str) -> Report {
    let (evidence, next_steps, blocker) = match status {
        ReportStatus::Continue => (
            vec!["read slug.py and test_slug.py".to_string()],
            vec!["implement slugify".to_string(), "run the tests".to_string()],
            String::new(),
        ),
        ReportStatus::Complete => (
            vec![
                "python3 -m unittest: Ran 2 tests, OK".to_string(),
                "slugify lowercases, drops punctuation and joins words with hyphens".to_string(),
            ],
            vec![],
            String::new(),
        ),
        ReportStatus::Blocked => (
            vec!["python3 is not installed in the sandbox".to_string()],
            vec![],
            "the tests cannot run: python3 is missing".to_string(),
        ),
    };
    Report {
        status,
        summary: summary.to_string(),
        evidence,
        next_steps,
        blocker,
    }
}

pub fn new_state(theme: Theme) -> State {
    let mut state = State::new(setup(), Some(OBJECTIVE.to_string()), theme);
    state.update(Msg::Tick(Duration::ZERO));
    send(
        &mut state,
        Event::RunStarted {
            run_id: "20260101-090000-1a2b".into(),
            objective: OBJECTIVE.into(),
            max_rounds: 8,
            workspace: "~/src/demo-repo".into(),
            backend: "llama".into(),
            model: Some("SmolLM2-135M-Instruct.Q4_1.gguf".into()),
            device: "CPU".into(),
            sandbox: "workspace-write".into(),
            run_dir: "~/.local/share/ralph-tui/runs/20260101-090000-1a2b".into(),
        },
    );
    state
}

pub fn changed(path: &str, status: &str, ins: usize, del: usize) -> ChangedFile {
    ChangedFile {
        path: path.into(),
        status: serde_json::from_value(serde_json::Value::from(status)).unwrap(),
        insertions: ins,
        deletions: del,
        binary: false,
        outside_run: false,
    }
}

pub fn finish_round(state: &mut State, round: u32, outcome: RoundOutcome, files: Vec<ChangedFile>) {
    let (ins, del) = files
        .iter()
        .fold((0, 0), |(i, d), f| (i + f.insertions, d + f.deletions));
    let n = files.len();
    if !files.is_empty() {
        send(state, Event::WorkspaceChanged { round, files });
    }
    send(
        state,
        Event::RoundFinished {
            round,
            outcome,
            prompt_tokens: 900,
            generated_tokens: 120,
            wall_ms: 4200,
            files_changed: n,
            insertions: ins,
            deletions: del,
            error: None,
            changes_unknown: false,
        },
    );
}

pub fn start_round(state: &mut State, round: u32) {
    send(
        state,
        Event::RoundStarted {
            round,
            max_rounds: 8,
            prompt_sha256: "ab".repeat(32),
            prompt_tokens: 900,
            prefix_tokens_reused: 0,
        },
    );
}

pub fn tokens(state: &mut State, round: u32, text: &str) {
    for piece in text.split_inclusive(' ') {
        send(
            state,
            Event::Token {
                round,
                text: piece.to_string(),
            },
        );
    }
}

/// A run in round 3 of 8: two finished rounds, a rejected report, a live change.
pub fn mid_run(theme: Theme) -> State {
    let mut state = new_state(theme);
    start_round(&mut state, 1);
    tokens(&mut state, 1, "I will look at the files first.\n");
    send(
        &mut state,
        Event::ToolCall {
            round: 1,
            name: "list_dir".into(),
            arguments: serde_json::json!({"path": "."}),
        },
    );
    send(
        &mut state,
        Event::ToolResult {
            round: 1,
            name: "list_dir".into(),
            ok: true,
            output: "AGENTS.md\nslug.py\ntest_slug.py".into(),
        },
    );
    send(
        &mut state,
        Event::ReportAccepted {
            round: 1,
            report: report(ReportStatus::Continue, "Read the stub and its two tests."),
        },
    );
    finish_round(&mut state, 1, RoundOutcome::Reported, vec![]);
    start_round(&mut state, 2);
    send(
        &mut state,
        Event::ReportRejected {
            round: 2,
            reason: "complete needs at least one piece of evidence".into(),
        },
    );
    send(
        &mut state,
        Event::ReportAccepted {
            round: 2,
            report: report(
                ReportStatus::Continue,
                "Wrote slugify; the tests still fail on punctuation.",
            ),
        },
    );
    finish_round(
        &mut state,
        2,
        RoundOutcome::Reported,
        vec![changed("slug.py", "modified", 6, 1)],
    );
    start_round(&mut state, 3);
    tokens(
        &mut state,
        3,
        "The punctuation test fails because commas are kept. I will strip every character that is not a letter, digit or space before joining.\n",
    );
    send(
        &mut state,
        Event::ToolCall {
            round: 3,
            name: "run_command".into(),
            arguments: serde_json::json!({"command": "python3 -m unittest"}),
        },
    );
    send(
        &mut state,
        Event::ToolResult {
            round: 3,
            name: "run_command".into(),
            ok: false,
            output: "F.\nFAIL: test_punctuation_is_dropped\nAssertionError: 'ralph,-again!' != 'ralph-again'\nRan 2 tests\nFAILED (failures=1)".into(),
        },
    );
    tokens(&mut state, 3, "Editing slug.py now so that");
    send(
        &mut state,
        Event::WorkspaceChanged {
            round: 3,
            files: vec![changed("slug.py", "modified", 3, 2)],
        },
    );
    state.update(Msg::Tick(Duration::from_secs(752)));
    for _ in 0..41 {
        send(
            &mut state,
            Event::Token {
                round: 3,
                text: String::new(),
            },
        );
    }
    state.update(Msg::Tick(Duration::from_secs(754)));
    state
}

/// A round's patch in git's format; its hunk counts must be true, as libgit2 reads it.
pub const PATCH: &str = "diff --git a/slug.py b/slug.py
index 1111111..2222222 100644
--- a/slug.py
+++ b/slug.py
@@ -1,5 +1,7 @@
 \"\"\"Turn titles into URL slugs.\"\"\"
+import re
 
 
 def slugify(text):
-    raise NotImplementedError
+    text = re.sub(r\"[^a-z0-9 ]\", \"\", text.lower())
+    return \"-\".join(text.split())
diff --git a/NOTES.md b/NOTES.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/NOTES.md
@@ -0,0 +1,2 @@
+# Notes
+slugify keeps letters, digits and spaces.
";

pub fn finished(status: RunStatus, verification: Option<Verification>) -> State {
    let mut state = mid_run(Theme::default());
    let (report, last_valid, error) = match status {
        RunStatus::Complete => {
            let r = report(
                ReportStatus::Complete,
                "slugify is implemented and both tests pass.",
            );
            (Some(r.clone()), Some(r), None)
        }
        RunStatus::Blocked => {
            let r = report(ReportStatus::Blocked, "Cannot run the tests.");
            (Some(r.clone()), Some(r), None)
        }
        RunStatus::BudgetLimited => {
            let r = report(ReportStatus::Continue, "Punctuation handling is half done.");
            (Some(r.clone()), Some(r), None)
        }
        RunStatus::Stalled => {
            let r = report(ReportStatus::Continue, "Punctuation handling is half done.");
            let why = "rounds 1–3 changed no file and their reports gave the same next steps (\"Handle punctuation.\"): 3 rounds in a row with no progress (--stall-rounds)";
            (Some(r.clone()), Some(r), Some(why.to_string()))
        }
        RunStatus::Cancelled => (
            None,
            Some(report(
                ReportStatus::Continue,
                "Wrote slugify; the tests still fail on punctuation.",
            )),
            None,
        ),
        RunStatus::RoundFailed => (
            None,
            Some(report(
                ReportStatus::Continue,
                "Wrote slugify; the tests still fail on punctuation.",
            )),
            Some(
                "round 3: the child ended without a valid report (the script has no turn 2)"
                    .to_string(),
            ),
        ),
    };
    if let Some(r) = &report {
        send(
            &mut state,
            Event::ReportAccepted {
                round: 3,
                report: r.clone(),
            },
        );
    }
    finish_round(
        &mut state,
        3,
        RoundOutcome::Reported,
        vec![changed("slug.py", "modified", 3, 2)],
    );
    state.update(Msg::Tick(Duration::from_secs(3725)));
    let effects = send(
        &mut state,
        Event::RunFinished {
            status,
            rounds_started: 3,
            report,
            last_valid_report: last_valid,
            error,
            worker_reported: true,
            verification,
        },
    );
    assert_eq!(effects, vec![Effect::LoadDiff(DiffSource::Review)]);
    state.update(Msg::DiffLoaded(
        DiffSource::Review,
        Ok(DiffModel::from_patch(PATCH).unwrap()),
    ));
    state
}

pub fn verification(passed: bool) -> Verification {
    Verification {
        command: "python3 -m unittest".into(),
        exit_code: Some(if passed { 0 } else { 1 }),
        passed,
        output_tail: if passed {
            "..\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nOK".into()
        } else {
            "F.\nFAIL: test_punctuation_is_dropped\nRan 2 tests in 0.001s\n\nFAILED (failures=1)"
                .into()
        },
    }
}

/// The stream pane's rows (between the objective and the status line, left of the side panes).
pub fn stream_rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .skip(6)
        .take_while(|l| !l.starts_with('┗'))
        .map(|l| l.chars().take(46).collect())
        .collect()
}
