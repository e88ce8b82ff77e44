//! TUI benchmark, figures only (nothing asserted).
//!
//! The real event loop (`terminal::event_loop::drive`) on a 120×40 `TestBackend`, fed by the real
//! engine with the script backend streaming as fast as it can:
//!
//! 1. 1,000,000 tokens over ten rounds: resident memory before the run (idle) and at the
//!    review (the run's whole state still held), and the peak, from `/proc/self/status`.
//! 2. 1,000,000 tokens in one round while a key (`?`, which toggles the help view) is injected
//!    every 20 ms: key-to-frame latency (from sending the key to the first drawn frame whose
//!    state shows it) as p50/p99/max, and frames per second (capped at ~60 by the scheduler).
//!
//! Run with `cargo bench --bench tui`.
#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::error::Error;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ralph_tui::cli::Cli;
use ralph_tui::config::{Dirs, Settings};
use ralph_tui::screens::state::Overlay;
use ralph_tui::screens::{Phase, State, Theme};
use ralph_tui::terminal::{event_loop, setup_of};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const KEY_EVERY: Duration = Duration::from_millis(20);

fn git_repo(dir: &Path) -> Result<()> {
    let repo = git2::Repository::init(dir)?;
    std::fs::write(dir.join("README.md"), "# bench\n")?;
    let mut index = repo.index()?;
    index.add_path(Path::new("README.md"))?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = git2::Signature::now("Bench", "bench@example.com")?;
    repo.commit(Some("HEAD"), &sig, &sig, "initial", &tree, &[])?;
    Ok(())
}

fn report_call(status: &str) -> String {
    let (next, evidence) = if status == "complete" {
        (json!([]), json!(["streamed every token"]))
    } else {
        (json!(["keep streaming"]), json!([]))
    };
    let args = json!({"status": status, "summary": "streamed", "evidence": evidence,
                      "next_steps": next, "blocker": ""});
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": "ralph_report", "arguments": args})
    )
}

/// A script of `rounds` rounds of `tokens` pieces each, no delay; the last round completes.
fn write_script(path: &Path, rounds: usize, tokens: usize) -> Result<()> {
    let body: String = (0..tokens)
        .map(|i| if i % 16 == 15 { "tok\n" } else { "tok " })
        .collect();
    let rounds: Vec<_> = (0..rounds)
        .map(|i| {
            let status = if i + 1 == rounds {
                "complete"
            } else {
                "continue"
            };
            json!({"turns": [format!("{body}{}", report_call(status))]})
        })
        .collect();
    std::fs::write(
        path,
        serde_json::to_vec(&json!({"token_delay_ms": 0, "rounds": rounds}))?,
    )?;
    Ok(())
}

fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

#[derive(Default)]
struct Probe {
    /// The key in flight: when it was sent and whether help should then be open.
    pending: Option<(Instant, bool)>,
    help_expected: bool,
    latencies: Vec<Duration>,
    first_frame: Option<Instant>,
    last_running_frame: Option<Instant>,
    running_frames: u64,
    tokens: u64,
    finished: bool,
    stream_bytes: usize,
    /// Resident memory at the first frame of the review (the run's state still held).
    rss_finished_kib: u64,
}

fn key(code: KeyCode) -> std::io::Result<TermEvent> {
    Ok(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

struct Figures {
    latencies: Vec<Duration>,
    fps: f64,
    tokens: u64,
    flood: Duration,
    stream_bytes: usize,
    rss_idle_kib: u64,
    rss_finished_kib: u64,
}

fn on_frame(probe: &Mutex<Probe>, state: &State) {
    let now = Instant::now();
    let Ok(mut p) = probe.lock() else {
        return;
    };
    p.first_frame.get_or_insert(now);
    p.tokens = state.meters.tokens_total;
    p.stream_bytes = state.transcript.bytes();
    if state.phase == Phase::Running {
        p.running_frames += 1;
        p.last_running_frame = Some(now);
    }
    let open = matches!(state.overlay(), Some(Overlay::Help { .. }));
    if let Some((sent, want)) = p.pending {
        if open == want && state.phase == Phase::Running {
            p.latencies.push(now - sent);
            p.pending = None;
        }
    }
    if state.phase == Phase::Finished {
        if !p.finished {
            p.rss_finished_kib = rss_kib("VmRSS:");
        }
        p.finished = true;
        p.pending = None;
    }
}

/// The next key to send, if any: `?` while streaming (when keys are wanted), `q` at the end.
fn next_key(probe: &Mutex<Probe>, inject: bool) -> Option<KeyCode> {
    let mut p = probe.lock().ok()?;
    if p.finished {
        Some(KeyCode::Char('q'))
    } else if inject && p.pending.is_none() && p.tokens > 0 {
        p.help_expected = !p.help_expected;
        p.pending = Some((Instant::now(), p.help_expected));
        Some(KeyCode::Char('?'))
    } else {
        None
    }
}

/// Runs one whole run through the real loop, injecting keys while it streams.
fn run(rounds: usize, tokens: usize, inject: bool) -> Result<Figures> {
    let tmp = tempfile::tempdir()?;
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo)?;
    git_repo(&repo)?;
    let script = tmp.path().join("script.json");
    write_script(&script, rounds, tokens)?;
    let cli = Cli::try_parse_from([
        "ralph-tui".to_string(),
        "-C".into(),
        repo.display().to_string(),
        "--backend".into(),
        format!("script:{}", script.display()),
        "--run-dir".into(),
        tmp.path().join("run").display().to_string(),
        "-n".into(),
        rounds.to_string(),
        "stream as fast as you can".into(),
    ])?;
    let dirs = Dirs {
        config: tmp.path().join("config"),
        data: tmp.path().join("data"),
        cache: tmp.path().join("cache"),
    };
    let settings = Settings::resolve(cli, dirs)?;
    let prepared = ralph_tui::app::prepare(&settings)?;
    let state = State::new(
        setup_of(&prepared),
        settings.objective.clone(),
        Theme::default(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let probe = Arc::new(Mutex::new(Probe::default()));
    let (keys, input) = futures::channel::mpsc::unbounded();
    let mut terminal = Terminal::new(TestBackend::new(120, 40))?;
    let rss_idle_kib = rss_kib("VmRSS:");
    let started = Instant::now();
    runtime.block_on(async {
        let injector = Arc::clone(&probe);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(KEY_EVERY).await;
                if let Some(code) = next_key(&injector, inject) {
                    if keys.unbounded_send(key(code)).is_err() {
                        break;
                    }
                }
            }
        });
        let frames = Arc::clone(&probe);
        let mut observe = move |state: &State| on_frame(&frames, state);
        event_loop::drive(&mut terminal, input, state, prepared, &mut observe).await
    });
    let p = probe.lock().map_err(|_| "the probe's lock is poisoned")?;
    let flood = match (p.first_frame, p.last_running_frame) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => started.elapsed(),
    };
    Ok(Figures {
        latencies: p.latencies.clone(),
        fps: p.running_frames as f64 / flood.as_secs_f64().max(1e-9),
        tokens: p.tokens,
        flood,
        stream_bytes: p.stream_bytes,
        rss_idle_kib,
        rss_finished_kib: p.rss_finished_kib,
    })
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn main() -> Result<()> {
    // The engine runs commands through a sandbox helper, which may be this executable: answer
    // as the ralph-tui binary does, or a probe would start another benchmark.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(ralph_tui::tools::sandbox::EXEC_ARG) {
        ralph_tui::tools::sandbox::exec_main(&args[2..]);
    }
    println!("tui: the real event loop on a 120x40 TestBackend, script backend, no token delay");

    // Memory first, while the process is fresh, so "idle" is not inflated by an earlier run.
    let memory = run(10, 100_000, false)?;
    let peak = rss_kib("VmHWM:");
    println!(
        "  memory: idle {:.1} MiB; at the review after {} streamed tokens {:.1} MiB (+{:.1} MiB, goal < 50 above idle); peak {:.1} MiB; stream buffer {:.2} MiB",
        mib(memory.rss_idle_kib),
        memory.tokens,
        mib(memory.rss_finished_kib),
        mib(memory.rss_finished_kib.saturating_sub(memory.rss_idle_kib)),
        mib(peak),
        memory.stream_bytes as f64 / (1024.0 * 1024.0)
    );

    let figures = run(1, 1_000_000, true)?;
    let mut lat = figures.latencies.clone();
    lat.sort();
    println!(
        "  flood: {} tokens in {:.2} s ({:.0} tokens/s through update and render)",
        figures.tokens,
        figures.flood.as_secs_f64(),
        figures.tokens as f64 / figures.flood.as_secs_f64().max(1e-9)
    );
    println!(
        "  key-to-frame latency while flooding ({} keys): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (goal p99 < 50 ms)",
        lat.len(),
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.99)),
        ms(lat.last().copied().unwrap_or_default())
    );
    println!(
        "  frames while flooding: {:.1} per second (cap ~{:.0})",
        figures.fps,
        1.0 / ralph_tui::terminal::frames::MIN_FRAME.as_secs_f64()
    );
    Ok(())
}
