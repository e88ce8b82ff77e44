//! Speed and memory figures of the llama backend, measured side by side in one run.
//!
//! `cargo bench --bench llama [-- --model PATH --threads N --rounds N]` (what
//! `scripts/bench-llama.sh` runs) prints:
//! model load time; fresh-context creation per round against a naive variant that reloads
//! the model every round; prompt and generation tokens per second; resident memory after
//! round 1 and after the last round. Figures only: nothing is asserted.
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark aborts on setup errors"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ralph_tui::config::{Dirs, InferenceSettings};
use ralph_tui::llm::llama::{LlamaBackend, DEFAULT_CHUNK_TARGET};
use ralph_tui::llm::{Child, Request};
use ralph_tui::protocol::message::{Message, Role};
use tokio_util::sync::CancellationToken;

struct Args {
    model: PathBuf,
    threads: i32,
    rounds: u32,
    prompt_tokens: usize,
    gen_tokens: u32,
    batch: u32,
}

fn args() -> Args {
    let mut out = Args {
        model: std::env::var_os("RALPH_TEST_MODEL")
            .map(PathBuf::from)
            .unwrap_or_else(|| Dirs::discover().default_model()),
        threads: std::thread::available_parallelism()
            .map(|n| i32::try_from(n.get()).unwrap_or(2))
            .unwrap_or(2),
        rounds: 64,
        prompt_tokens: 512,
        gen_tokens: 128,
        batch: 512,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().expect("a flag needs a value");
        match flag.as_str() {
            "--model" => out.model = PathBuf::from(value()),
            "--threads" => out.threads = value().parse().expect("--threads N"),
            "--rounds" => out.rounds = value().parse().expect("--rounds N"),
            "--prompt-tokens" => out.prompt_tokens = value().parse().expect("--prompt-tokens N"),
            "--gen-tokens" => out.gen_tokens = value().parse().expect("--gen-tokens N"),
            "--batch-size" => out.batch = value().parse().expect("--batch-size N"),
            // `cargo bench` passes `--bench`; anything else unknown is ignored the same way.
            _ => {}
        }
    }
    out
}

fn settings(a: &Args, max_tokens: u32) -> InferenceSettings {
    InferenceSettings {
        ctx_size: 2048,
        threads: a.threads,
        gpu_layers: None,
        batch_size: a.batch,
        max_tokens,
        temperature: 0.0,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.05,
        repeat_penalty: 1.0,
        seed: 1,
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// A user message of about `tokens` tokens.
fn long_prompt(backend: &LlamaBackend, tokens: usize) -> Vec<Message> {
    let mut text = String::new();
    let sentence = "The keeper climbed the stairs and lit the lamp before the storm. ";
    loop {
        let messages = vec![
            Message::new(Role::System, "You are a storyteller."),
            Message::new(Role::User, format!("{text}Continue the story.")),
        ];
        let request = Request {
            messages: &messages,
            tools: &[],
            report_only: false,
        };
        let n = backend
            .tokenize(&backend.render_prompt(request).unwrap())
            .len();
        if n >= tokens {
            return messages;
        }
        text.push_str(sentence);
    }
}

fn main() {
    // `cargo test --all-targets` runs bench binaries too, without `--bench`: the figures need
    // an idle machine and a minute, so they are only measured under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        println!("llama bench: figures are measured by `cargo bench --bench llama`");
        return;
    }
    let a = args();
    println!(
        "ralph-tui llama backend bench: {} ({} threads)",
        a.model.display(),
        a.threads
    );
    let cancel = CancellationToken::new();

    let started = Instant::now();
    let backend = LlamaBackend::load(&a.model, &settings(&a, 1), None).unwrap();
    let load = started.elapsed();
    println!("model load (mmap):                 {:8.1} ms", ms(load));

    // Prompt throughput on fresh contexts, for several chunk targets (cancel latency bound).
    let prompt = long_prompt(&backend, a.prompt_tokens);
    let mut round_prompt_ms = Vec::new();
    let mut backend = backend;
    for target_ms in [DEFAULT_CHUNK_TARGET.as_millis() as u64, 30, 120, 10_000] {
        backend = backend.with_chunk_target(Duration::from_millis(target_ms));
        let mut pp = Vec::new();
        let mut times = Vec::new();
        for round in 1..=3 {
            let mut child = backend.child(round).unwrap();
            child
                .generate(
                    Request {
                        messages: &prompt,
                        tools: &[],
                        report_only: false,
                    },
                    &mut |_| {},
                    &cancel,
                )
                .unwrap();
            let s = child.last_stats();
            pp.push(f64::from(s.evaluated_tokens) / s.prompt_time.as_secs_f64());
            times.push(ms(s.prompt_time));
        }
        if round_prompt_ms.is_empty() {
            round_prompt_ms = times;
        }
        println!(
            "prompt eval ({} tokens, chunks of ~{target_ms} ms, batch {}): {:8.1} tok/s",
            a.prompt_tokens,
            a.batch,
            median(pp)
        );
    }
    let backend = backend.with_chunk_target(DEFAULT_CHUNK_TARGET);

    // Generation throughput.
    let gen_backend = LlamaBackend::load(&a.model, &settings(&a, a.gen_tokens), None).unwrap();
    let story = vec![
        Message::new(Role::System, "You are a storyteller."),
        Message::new(
            Role::User,
            "Tell a very long story about a lighthouse keeper.",
        ),
    ];
    let mut tg = Vec::new();
    for round in 1..=3 {
        let mut child = gen_backend.child(round).unwrap();
        child
            .generate(
                Request {
                    messages: &story,
                    tools: &[],
                    report_only: false,
                },
                &mut |_| {},
                &cancel,
            )
            .unwrap();
        let s = child.last_stats();
        tg.push(f64::from(s.generated_tokens) / s.generation_time.as_secs_f64());
    }
    println!(
        "generation (up to {} tokens):      {:8.1} tok/s",
        a.gen_tokens,
        median(tg)
    );

    // Fresh context per round vs reloading the model per round.
    let mut fresh = Vec::new();
    for round in 1..=10 {
        let started = Instant::now();
        let child = backend.child(round).unwrap();
        fresh.push(ms(started.elapsed()));
        drop(child);
    }
    let mut reload = Vec::new();
    for round in 1..=5 {
        let started = Instant::now();
        let b = LlamaBackend::load(&a.model, &settings(&a, 1), None).unwrap();
        let child = b.child(round).unwrap();
        reload.push(ms(started.elapsed()));
        drop(child);
    }
    let fresh_ms = median(fresh);
    let typical_prompt_ms = median(round_prompt_ms);
    println!(
        "fresh context per round:           {fresh_ms:8.1} ms ({:.1}% of a {}-token prompt's {:.0} ms)",
        100.0 * fresh_ms / typical_prompt_ms,
        a.prompt_tokens,
        typical_prompt_ms
    );
    println!(
        "naive reload per round:            {:8.1} ms ({:.1}x the fresh context)",
        median(reload.clone()),
        median(reload) / fresh_ms
    );

    // Memory across rounds: each round a fresh context, a short prompt, a few tokens.
    drop(backend);
    drop(gen_backend);
    let short = vec![
        Message::new(Role::System, "You are brief."),
        Message::new(Role::User, "Say hello."),
    ];
    let small = LlamaBackend::load(&a.model, &settings(&a, 8), None).unwrap();
    let mut after_first = 0;
    for round in 1..=a.rounds {
        let mut child = small.child(round).unwrap();
        child
            .generate(
                Request {
                    messages: &short,
                    tools: &[],
                    report_only: false,
                },
                &mut |_| {},
                &cancel,
            )
            .unwrap();
        drop(child);
        if round == 1 {
            after_first = rss_kib();
        }
    }
    let after_last = rss_kib();
    println!(
        "resident memory after round 1:     {:8.1} MiB",
        after_first as f64 / 1024.0
    );
    println!(
        "resident memory after round {:<3}:   {:8.1} MiB ({:+.1}%)",
        a.rounds,
        after_last as f64 / 1024.0,
        100.0 * (after_last as f64 - after_first as f64) / after_first.max(1) as f64
    );
}
