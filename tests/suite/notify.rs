//! Notifications through the real event loop: a run whose round fails, watched from an
//! unfocused terminal, writes a bell and a desktop notification for the failed round and for
//! the run's end; the same run in a focused terminal writes nothing.

use std::io::Write;
use std::sync::{Arc, Mutex};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ralph_tui::config::NotifyMode;
use ralph_tui::screens::{State, Theme};
use ralph_tui::terminal::notify::{Notifier, Osc};
use ralph_tui::terminal::{event_loop, setup_of};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::common::{continue_report, script, script_settings, turns, TempRepo};

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bytes the notifier wrote during a run whose second round fails, with the terminal
/// reporting `focus` first.
fn notified(focus: TermEvent) -> String {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let script = script(
        tmp.path(),
        vec![
            turns(&[continue_report("first")]),
            serde_json::json!({"fail": "simulated child failure"}),
        ],
    );
    let settings = script_settings(
        repo.path(),
        tmp.path(),
        &script,
        &["-n", "2"],
        "fail the second round",
    );
    assert_eq!(settings.options.notify, NotifyMode::Auto);
    let prepared = ralph_tui::app::prepare(&settings).unwrap();
    let state = State::new(
        setup_of(&prepared),
        settings.objective.clone(),
        Theme::plain(),
    );
    let (keys, input) = futures::channel::mpsc::unbounded();
    keys.unbounded_send(Ok(focus)).unwrap();
    let out = Shared::default();
    let mut notifier = Notifier::new(settings.options.notify, Osc::Nine, Box::new(out.clone()));
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut quit_sent = false;
    let ended = runtime.block_on(event_loop::drive_notifying(
        &mut terminal,
        input,
        state,
        prepared,
        &mut |state| {
            if state.review.shown.is_some() && !quit_sent {
                quit_sent = true;
                let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
                keys.unbounded_send(Ok(TermEvent::Key(q))).unwrap();
            }
        },
        &mut notifier,
    ));
    assert_eq!(ended.code, ralph_tui::error::ExitCode::RoundFailed);
    let bytes = out.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn an_unfocused_terminal_is_notified_of_a_failed_round_and_the_end() {
    insta::assert_snapshot!(
        format!("{:?}", notified(TermEvent::FocusLost)),
        @r#""\u{7}\u{1b}]9;ralph-tui: round 2 failed: child failed: simulated child failure\u{7}\u{7}\u{1b}]9;ralph-tui: run round-failed: a round ended without a valid report, the run stopped\u{7}""#
    );
}

#[test]
fn a_focused_terminal_is_left_alone() {
    assert_eq!(notified(TermEvent::FocusGained), "");
}
