//! The openai backend through a real llama.cpp `llama-server` against the in-process llama
//! backend, side by side in one run, on the default model with the same threads and prompts.
//!
//! `cargo bench --bench server [-- --model PATH --threads N]` (what `make bench` runs, after
//! `scripts/build-llama-server.sh`; `RALPH_LLAMA_SERVER` names another binary) prints:
//! round start latency (the round's request → first token) for round 1 and rounds 2..5 on the
//! demo objective's real round prompts, each way: in-process with the fixed-prefix cache, and
//! through a freshly started server whose own prompt cache meets round 1 cold and reuses the
//! common prefix after; generation tokens per second each way, turns alternating, and the
//! median of their ratios; and the cancel latency through the server (cancel → `generate`
//! returns) with the time until `/slots` shows the server stopped. Figures only: nothing is
//! asserted.
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark aborts on setup errors"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ralph_tui::config::Dirs;
use ralph_tui::engine::prompt::RoundPrompt;
use ralph_tui::llm::llama::LlamaBackend;
use ralph_tui::llm::openai::wire::Sampling;
use ralph_tui::llm::openai::{OpenAiBackend, OpenAiConfig};
use ralph_tui::llm::settings::InferenceSettings;
use ralph_tui::llm::{Backend, Request};
use ralph_tui::protocol::message::{Message, Role};
use ralph_tui::tools::Registry;
use tokio_util::sync::CancellationToken;

#[path = "../tests/suite/llama_server_process.rs"]
mod llama_server_process;
use llama_server_process::{server_binary, Server};

const ROUNDS: u32 = 5;
const CTX: u32 = 4096;
const GEN_TOKENS: u32 = 128;

fn connect(server: &Server, max_tokens: u32) -> OpenAiBackend {
    OpenAiBackend::connect(OpenAiConfig {
        url: server.url.clone(),
        model: None,
        api_key_env: "RALPH_BENCH_NO_KEY".into(),
        request_timeout: Duration::from_secs(60),
        ctx_fallback: Some(CTX),
        chat_format: None,
        sampling: Sampling {
            max_tokens,
            temperature: 0.0,
            top_p: 1.0,
            seed: 1,
        },
    })
    .unwrap()
}

fn settings(threads: usize, max_tokens: u32) -> InferenceSettings {
    InferenceSettings {
        ctx_size: CTX,
        threads: i32::try_from(threads).unwrap_or(2),
        gpu_layers: None,
        batch_size: 512,
        max_tokens,
        temperature: 0.0,
        top_k: 40,
        top_p: 1.0,
        min_p: 0.0,
        repeat_penalty: 1.0,
        seed: 1,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The demo objective's round prompts for rounds 1..=ROUNDS, with the tools spelled out in
/// the model's own format (SmolLM2's template shows none, so the server gets the same text).
fn round_prompts(backend: &LlamaBackend) -> Vec<Vec<Message>> {
    let objective =
        "Implement slugify in slug.py so that python3 -m unittest passes. Keep the tests unchanged.";
    let specs = Registry::standard().specs();
    let instructions = backend.format().tool_instructions(&specs);
    (1..=ROUNDS)
        .map(|round| {
            RoundPrompt {
                objective,
                round,
                max_rounds: 8,
                previous: None,
                agents: None,
                tool_instructions: &instructions,
                observation: None,
                notes: &[],
            }
            .messages()
        })
        .collect()
}

/// Round start (child made, prefix prepared, request sent → first token) and the generation
/// rate after the first token, for one turn.
fn turn(backend: &mut dyn Backend, round: u32, messages: &[Message]) -> (f64, f64) {
    let request = Request::new(messages, &[]);
    let begun = Instant::now();
    let mut child = backend.new_child(round).unwrap();
    child.prepare(request).unwrap();
    let mut first = None;
    let generation = child
        .generate(
            request,
            &mut |_| {
                first.get_or_insert_with(Instant::now);
            },
            &CancellationToken::new(),
        )
        .unwrap();
    let first = first.unwrap_or_else(Instant::now);
    let rate = f64::from(generation.generated_tokens.saturating_sub(1))
        / first.elapsed().as_secs_f64().max(f64::MIN_POSITIVE);
    (ms(first.saturating_duration_since(begun)), rate)
}

fn round_starts(backend: &mut dyn Backend, prompts: &[Vec<Message>]) -> (f64, f64) {
    let starts: Vec<f64> = (1..)
        .zip(prompts)
        .map(|(round, messages)| turn(backend, round, messages).0)
        .collect();
    (starts[0], median(starts[1..].to_vec()))
}

fn story() -> Vec<Message> {
    vec![
        Message::new(Role::System, "You are a storyteller."),
        Message::new(
            Role::User,
            "Tell a very long story about a lighthouse keeper and the sea.",
        ),
    ]
}

/// Cancel after `after` pieces, several times: (cancel → `generate` returns, cancel →
/// `/slots` idle) in ms, each.
fn cancels(backend: &mut OpenAiBackend, server: &Server) -> Vec<(f64, f64)> {
    let messages = story();
    let mut out = Vec::new();
    for (round, after) in (1..).zip([5u32, 20, 40, 60, 80, 100, 5, 20, 40, 60]) {
        let cancel = CancellationToken::new();
        let mut pieces = 0;
        let mut cancelled_at = None;
        let mut child = backend.new_child(round).unwrap();
        child
            .generate(
                Request::new(&messages, &[]),
                &mut |_| {
                    pieces += 1;
                    if pieces == after {
                        cancel.cancel();
                        cancelled_at = Some(Instant::now());
                    }
                },
                &cancel,
            )
            .unwrap();
        let Some(at) = cancelled_at else { continue };
        let returned = ms(at.elapsed());
        let deadline = Instant::now() + Duration::from_secs(5);
        while server.busy() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        out.push((returned, ms(at.elapsed())));
    }
    out
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("server bench: figures are measured by `cargo bench --bench server`");
        return;
    }
    let mut model = std::env::var_os("RALPH_TEST_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Dirs::discover()
                .expect("no home directory: set RALPH_TEST_MODEL")
                .test_model()
        });
    let mut threads = 2usize;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--model" => model = PathBuf::from(it.next().expect("--model PATH")),
            "--threads" => threads = it.next().and_then(|n| n.parse().ok()).expect("--threads N"),
            _ => {}
        }
    }
    if !server_binary().is_file() {
        println!(
            "server bench: no llama-server at {} (scripts/build-llama-server.sh builds it)",
            server_binary().display()
        );
        return;
    }
    println!(
        "ralph-tui server bench: {} ({threads} threads both ways)",
        model.display()
    );

    let mut local = LlamaBackend::load(&model, &settings(threads, 1), None).unwrap();
    let prompts = round_prompts(&local);
    let (local_first, local_later) = round_starts(&mut local, &prompts);
    drop(local);
    let server = Server::start(&model, threads, None);
    let mut remote = connect(&server, 1);
    let (remote_first, remote_later) = round_starts(&mut remote, &prompts);
    println!(
        "round start, round 1 (cold):       in-process {local_first:8.1} ms, llama-server {remote_first:8.1} ms"
    );
    println!(
        "round start, rounds 2..{ROUNDS} (median): in-process {local_later:8.1} ms (prefix cache), llama-server {remote_later:8.1} ms (its prompt cache)"
    );

    // Generation alternates the two ways turn by turn, so that both see the same state of the
    // machine; the idle one waits without computing.
    let story = story();
    let mut remote = connect(&server, GEN_TOKENS);
    let mut local = LlamaBackend::load(&model, &settings(threads, GEN_TOKENS), None)
        .unwrap()
        .with_prefix_cache(false);
    let (mut local_rates, mut remote_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=3 {
        let remote_rate = turn(&mut remote, round, &story).1;
        let local_rate = turn(&mut local, round, &story).1;
        ratios.push(remote_rate / local_rate.max(f64::MIN_POSITIVE));
        local_rates.push(local_rate);
        remote_rates.push(remote_rate);
    }
    drop(local);
    let mut cancel_figures = cancels(&mut remote, &server);
    drop(remote);
    drop(server);
    println!(
        "generation ({GEN_TOKENS} tokens, alternating): in-process {:8.1} tok/s, llama-server {:8.1} tok/s (ratio server/in-process {:.2}, median of 3 pairs)",
        median(local_rates),
        median(remote_rates),
        median(ratios)
    );
    cancel_figures.sort_by(|a, b| a.0.total_cmp(&b.0));
    let returned: Vec<f64> = cancel_figures.iter().map(|c| c.0).collect();
    let idle: Vec<f64> = cancel_figures.iter().map(|c| c.1).collect();
    println!(
        "cancel through llama-server (x{}): returns p50 {:.2} ms, max {:.2} ms; server idle (/slots) p50 {:.1} ms, max {:.1} ms",
        returned.len(),
        median(returned.clone()),
        returned.iter().copied().fold(0.0, f64::max),
        median(idle.clone()),
        idle.iter().copied().fold(0.0, f64::max)
    );
}
