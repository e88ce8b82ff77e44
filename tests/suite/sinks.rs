//! Strings from the worker and the repository never reach a terminal raw: every C0 and C1
//! control, escape sequences (title, clipboard, clear screen) and bidirectional overrides put
//! into a file name, a report, a command's output and a round's failure come out of the TUI's
//! screens, headless stderr, `ralph-tui show` and `ralph-tui runs` as U+FFFD. The JSON Lines
//! (headless stdout and the logs) keep them as `\uXXXX` escapes: the same text to a JSON
//! reader, nothing raw for a terminal they are piped to, and no U+2028 or U+2029 for a reader
//! that splits lines there.

use std::process::Command;

use ralph_tui::protocol::event::{Event, RoundOutcome, RunStatus};
use ralph_tui::protocol::report::{Report, ReportStatus};
use ralph_tui::screens::state::DiffSource;
use ralph_tui::screens::{Msg, Theme};
use ralph_tui::terminal::clean::CleanBackend;
use ralph_tui::workspace::DiffModel;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::Terminal;
use serde_json::json;

use super::common::*;
use super::ui::fixtures::{changed, finish_round, new_state, send, start_round};

/// Every C0 control but NUL, DEL, every C1 control, then escape sequences that set the
/// title, write the clipboard and clear the screen, the bidi overrides and isolates, and the
/// Unicode line separators; letters around it so it survives trimming.
fn hostile() -> String {
    let mut text = String::from("a");
    text.extend((1u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32));
    text.push_str("\u{1b}]0;PWNED-TITLE\u{7}\u{1b}]52;c;aHVudGVyMg==\u{7}\u{1b}[2J\u{9b}31m");
    text.push_str(
        "\u{202a}\u{202b}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{061c}",
    );
    text.push_str("\u{2028}\u{2029}z");
    text
}

/// The same without the characters a file name or a patch line cannot hold (NUL is already
/// out; `/` is not a control) and without newlines.
fn hostile_name() -> String {
    format!("evil{}.txt", hostile().replace(['\n', '\r'], ""))
}

/// Panics on the first character a terminal would act on (newlines and tabs allowed).
fn assert_clean(text: &str, what: &str) {
    for c in text.chars() {
        let bad = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}');
        assert!(!bad, "{what}: raw {c:?} in {text:?}");
    }
}

fn assert_buffer_clean(buf: &Buffer, what: &str) {
    for cell in buf.content() {
        assert_clean(cell.symbol(), what);
    }
}

/// A headless run whose worker writes the hostile file, prints the hostile text from a
/// command, files it in a report, and whose second round fails with it: stderr carries the
/// failure's reason, sanitized; `show` and `runs` print nothing raw either.
#[test]
fn hostile_text_reaches_no_stream_raw() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let h = hostile();
    let printed = "printf 'out\\033]0;PWNED\\007\\033]52;c;aGk=\\007\\233\\342\\200\\256end\\n'";
    let script = script(
        home.path(),
        vec![
            turns(&[
                call(
                    "write_file",
                    json!({"path": hostile_name(), "content": format!("{h}\n")}),
                ),
                call("run_command", json!({"command": printed})),
                report("continue", &h, &[&h], &[&h], ""),
            ]),
            json!({"fail": format!("simulated failure {h}")}),
        ],
    );
    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, home.path());
    let out = cmd
        .args(["--headless", "-n", "2", "--sandbox", "off", "-C"])
        .arg(repo.path())
        .arg("--backend")
        .arg(format!("script:{}", script.display()))
        .arg("hostile strings")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 5, "{stderr}");
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{9b}'),
        "{stderr:?}"
    );
    assert_clean(&stderr, "headless stderr");
    // The failed run's line says why it failed.
    assert!(stderr.contains("simulated failure a"), "{stderr}");
    let events = events(&out.stdout);
    let result = of_type(&events, "tool_result");
    assert!(
        result
            .iter()
            .any(|r| r["output"].as_str().unwrap().contains("\u{1b}]52")),
        "the command's raw output is kept in the log: {result:?}"
    );

    // Every terminal control the JSON Lines would carry raw (DEL, C1, bidi, U+2028 and
    // U+2029) is escaped in every JSON Lines file: a terminal they are piped to acts on
    // nothing, and readers that split on Unicode line breaks still see one event a line.
    let run_dir = std::path::PathBuf::from(
        of_type(&events, "run_started")[0]["run_dir"]
            .as_str()
            .unwrap(),
    );
    let logs = [
        out.stdout.clone(),
        std::fs::read(run_dir.join("events.jsonl")).unwrap(),
        std::fs::read(run_dir.join("rounds/01/transcript.jsonl")).unwrap(),
    ];
    for log in &logs {
        let text = String::from_utf8_lossy(log);
        assert!(text.contains("\\u2028"), "the separator is kept, escaped");
        assert!(!text.contains(['\u{2028}', '\u{2029}']), "{text}");
        assert_clean(&text, "JSON Lines");
        assert!(
            text.contains("\\u009b") && text.contains("\\u202e"),
            "{text}"
        );
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }

    for args in [&["show", "last"][..], &["runs"][..]] {
        let mut cmd = Command::new(BIN);
        isolate(&mut cmd, home.path());
        let shown = cmd.args(args).output().unwrap();
        assert_eq!(code(&shown), 0, "{args:?}: {shown:?}");
        let stdout = String::from_utf8_lossy(&shown.stdout);
        assert_clean(&stdout, &format!("{args:?}"));
        assert_clean(&String::from_utf8_lossy(&shown.stderr), "stderr");
        if args[0] == "show" {
            assert!(stdout.contains("evil"), "the file is listed: {stdout}");
            assert!(stdout.contains('\u{fffd}'), "{stdout}");
        }
    }
}

/// The TUI: the run screen and the review of a run whose tool calls, output, report, warning,
/// changed files, diff and failure all carry the hostile text. Through the backend the TUI
/// draws with, no cell holds a raw control; the review's file list and warnings are clean
/// even before it.
#[test]
fn hostile_text_reaches_no_screen_raw() {
    let h = hostile();
    let name = hostile_name();
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    send(
        &mut state,
        Event::Token {
            round: 1,
            text: h.clone(),
        },
    );
    send(
        &mut state,
        Event::ToolCall {
            round: 1,
            name: "write_file".into(),
            arguments: json!({"path": name, "content": h}),
        },
    );
    send(
        &mut state,
        Event::ToolResult {
            round: 1,
            name: "run_command".into(),
            ok: true,
            output: h.clone(),
        },
    );
    send(&mut state, Event::Warning { message: h.clone() });
    let hostile_report = Report {
        status: ReportStatus::Continue,
        summary: h.clone(),
        evidence: vec![h.clone()],
        next_steps: vec![h.clone()],
        blocker: String::new(),
    };
    send(
        &mut state,
        Event::ReportAccepted {
            round: 1,
            report: hostile_report.clone(),
        },
    );
    finish_round(
        &mut state,
        1,
        RoundOutcome::Reported,
        vec![changed(&name, "added", 1, 0)],
    );
    let mut screens = vec![draw_clean(&mut state)];
    send(
        &mut state,
        Event::RunFinished {
            status: RunStatus::RoundFailed,
            rounds_started: 1,
            report: None,
            last_valid_report: Some(hostile_report),
            error: Some(h.clone()),
            worker_reported: true,
            verification: None,
        },
    );
    let patch_text = format!(
        "diff --git a/{name} b/{name}\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+{}\n",
        h.replace('\n', "")
    );
    state.update(Msg::DiffLoaded(
        DiffSource::Review,
        Ok(DiffModel::from_patch(&patch_text).unwrap()),
    ));
    screens.push(draw_clean(&mut state));
    for (i, (cleaned, raw)) in screens.iter().enumerate() {
        assert_buffer_clean(cleaned, &format!("screen {i} as drawn"));
        let text: String = raw.content().iter().map(|c| c.symbol()).collect();
        assert!(text.contains("evil"), "screen {i} names the file");
    }
    // The review's own widgets already sanitize its file list and warnings.
    let raw = &screens[1].1;
    for y in 0..raw.area.height {
        let row: String = (0..raw.area.width).map(|x| raw[(x, y)].symbol()).collect();
        if row.contains("evil") || row.contains("! a") {
            assert_clean(&row, "review row");
        }
    }
}

/// Draws `state` at 120×40 through the TUI's cleaning backend: what reached the terminal,
/// and the screen as the widgets drew it.
fn draw_clean(state: &mut ralph_tui::screens::State) -> (Buffer, Buffer) {
    let (width, height) = (120, 40);
    let mut terminal = Terminal::new(CleanBackend::new(TestBackend::new(width, height))).unwrap();
    state.sync(Rect::new(0, 0, width, height));
    let frame = terminal
        .draw(|frame| frame.render_widget(&*state, frame.area()))
        .unwrap();
    let drawn = frame.buffer.clone();
    (terminal.backend().inner().buffer().clone(), drawn)
}
