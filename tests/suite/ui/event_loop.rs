//! The real event loop on a `TestBackend`, fed by the real engine with the script backend:
//! a key pressed during a token flood is handled, the flood is drawn in a few frames rather
//! than one per token, and quitting from the review returns the run's exit code.

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ralph_tui::error::ExitCode;
use ralph_tui::screens::state::Overlay;
use ralph_tui::screens::{Phase, State, Theme};
use ralph_tui::terminal::{event_loop, setup_of};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use crate::suite::common::{complete_report, script, script_settings, turns, TempRepo};

fn key(c: char) -> std::io::Result<TermEvent> {
    Ok(TermEvent::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

#[derive(Default)]
struct Seen {
    frames: u64,
    tokens: u64,
    asked_help: bool,
    help_shown_while_running: bool,
    quit_sent: bool,
}

#[test]
fn a_token_flood_is_coalesced_keys_still_work_and_quit_returns_the_status() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let turn = format!("{}{}", "tok ".repeat(40_000), complete_report("flooded"));
    let pieces = ralph_tui::llm::script::pieces(&turn).len() as u64;
    let script = script(tmp.path(), vec![turns(&[turn])]);
    let settings = script_settings(repo.path(), tmp.path(), &script, &[], "flood the screen");
    let prepared = ralph_tui::app::prepare(&settings).unwrap();
    let state = State::new(
        setup_of(&prepared),
        settings.objective.clone(),
        Theme::default(),
    );
    let (keys, input) = futures::channel::mpsc::unbounded();
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
    let mut seen = Seen::default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ended = runtime.block_on(event_loop::drive(
        &mut terminal,
        input,
        state,
        prepared,
        &mut |state: &State| {
            seen.frames += 1;
            seen.tokens = state.meters.tokens_total;
            let help = matches!(state.overlay(), Some(Overlay::Help { .. }));
            if state.phase == Phase::Running && state.meters.tokens_total > 0 && !seen.asked_help {
                seen.asked_help = true;
                keys.unbounded_send(key('?')).unwrap();
            }
            if help && state.phase == Phase::Running {
                seen.help_shown_while_running = true;
            }
            if state.phase == Phase::Finished && !seen.quit_sent {
                seen.quit_sent = true;
                // The help view stays open over the review: the first q closes it.
                keys.unbounded_send(key('q')).unwrap();
                keys.unbounded_send(key('q')).unwrap();
            }
        },
    ));
    assert_eq!(ended.code, ExitCode::Complete, "{:?}", ended.message);
    assert!(ended
        .message
        .unwrap_or_default()
        .contains("complete after 1 round"));
    assert_eq!(seen.tokens, pieces, "every token reached the state");
    assert!(
        seen.help_shown_while_running,
        "a key pressed during the flood was handled before it ended"
    );
    assert!(
        seen.frames * 20 < seen.tokens,
        "{} frames for {} tokens: redraws are not coalesced",
        seen.frames,
        seen.tokens
    );
}

#[test]
fn when_the_terminal_input_ends_the_run_is_cancelled_and_the_loop_ends() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let turn = format!(
        "{}{}",
        "slow ".repeat(2_000),
        complete_report("never reached")
    );
    let script = crate::suite::common::script_with_delay(tmp.path(), vec![turns(&[turn])], 5);
    let settings = script_settings(repo.path(), tmp.path(), &script, &[], "flood the screen");
    let prepared = ralph_tui::app::prepare(&settings).unwrap();
    let state = State::new(
        setup_of(&prepared),
        settings.objective.clone(),
        Theme::default(),
    );
    let (keys, input) = futures::channel::mpsc::unbounded::<std::io::Result<TermEvent>>();
    let mut keys = Some(keys);
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ended = runtime.block_on(event_loop::drive(
        &mut terminal,
        input,
        state,
        prepared,
        &mut |state: &State| {
            if state.meters.tokens_total > 0 {
                // The terminal goes away mid-stream.
                keys.take();
            }
        },
    ));
    assert_eq!(ended.code, ExitCode::Cancelled, "{:?}", ended.message);
    let events = std::fs::read_to_string(tmp.path().join("run/events.jsonl")).unwrap();
    assert!(events
        .lines()
        .last()
        .unwrap()
        .contains("\"status\":\"cancelled\""));
}
