//! Speed and memory figures of the llama backend, measured side by side in one run.
//!
//! `cargo bench --bench llama [-- --model PATH --threads N --rounds N]` (what
//! `scripts/bench-llama.sh` runs) prints:
//! model load time; fresh-context creation per round against a naive variant that reloads
//! the model every round; prompt tokens per second (whole batches, the abort callback armed)
//! with the worst cancel latency during a prompt beside it; generation tokens per second;
//! round start latency (round begins → first generated token) for round 1 and rounds 2..N
//! with and without the fixed-prefix cache, next to the prefix's share of the prompt; the
//! demo's round start with the observation and the check against the plain prompt; round 1
//! with the fixed prefix evaluated (cold) against restored from the disk cache; resident
//! memory after round 1 and after the last round. Figures only: nothing is asserted.
//!
//! `--baseline PATH` names llama.cpp's llama-bench (`scripts/bench-llama.sh --path` builds it
//! from the llama.cpp ralph-tui links). The prompt and generation figures then alternate with
//! llama-bench runs of the same size, model and threads, one after each of ours, and print the
//! median of the pairs' ratios: a small machine's speed drifts by tens of percent within
//! minutes, so figures measured minutes apart do not make a ratio. `--pairs N` (6 by default)
//! sets how many; `--speed-only` measures these two figures and nothing else, and
//! `--observed-only` the demo's round start with and without the observation alone.
//! `--busy` adds the busy-machine pair (`--busy-only`: it alone): generation idle against
//! beside a busy process, with the cores as threads and with one fewer.
//!
//! `--draft-model PATH` adds speculative decoding measured on llama.cpp directly, the
//! `--model` as its target (`speculative`): greedy generation speed with and without the
//! draft, the acceptance rate and whether the outputs are identical, for drafts of 2, 4 and 6
//! tokens (`--draft-lengths K,..`; `--reps N` alternating runs each; `--speculative-only`
//! skips the rest). The backend has no draft model: on this 2-core machine a 0.5B draft for
//! the 1.5B target made generation slower (0.6× when the machine was quiet: a draft token
//! costs 0.6–0.9 of a target token, and verifying k + 1 tokens in one batch costs 2.5–6 target
//! tokens, so nothing is left to win), and drafted greedy output parted from
//! plain where the target's top two logits nearly tie (batched and single-token decoding
//! round them differently).
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark aborts on setup errors"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ralph_tui::config::Dirs;
use ralph_tui::engine::prompt::RoundPrompt;
use ralph_tui::llm::llama::{LlamaBackend, TurnStats};
use ralph_tui::llm::settings::InferenceSettings;
use ralph_tui::llm::{Child, Request};
use ralph_tui::protocol::message::{Message, Role};
use ralph_tui::tools::Registry;
use tokio_util::sync::CancellationToken;

#[path = "llama/speculative.rs"]
mod speculative;

struct Args {
    model: PathBuf,
    threads: i32,
    rounds: u32,
    prompt_tokens: usize,
    gen_tokens: u32,
    batch: u32,
    /// `--draft-model`: measure speculative decoding with this draft (the `--model` target).
    draft: Option<PathBuf>,
    /// `--speculative-only`: skip every other figure.
    speculative_only: bool,
    /// `--speed-only`: the prompt and generation figures alone.
    speed_only: bool,
    /// `--observed-only`: the demo's round start with and without the observation alone.
    observed_only: bool,
    /// `--busy`: also the busy-machine pair (generation idle against beside a busy process,
    /// for each thread count); `--busy-only`: that pair alone.
    busy: bool,
    busy_only: bool,
    /// Alternating plain / drafted runs per draft length.
    reps: usize,
    /// Prompt and generation runs, each paired with a llama-bench run (`--pairs N`).
    pairs: usize,
    /// Draft lengths measured (`--draft-lengths 2,4,6`).
    draft_lengths: Vec<usize>,
    /// `--baseline PATH`: llama.cpp's llama-bench, run between this bench's own repetitions.
    baseline: Option<PathBuf>,
}

fn args() -> Args {
    let mut out = Args {
        model: std::env::var_os("RALPH_TEST_MODEL")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Dirs::discover()
                    .expect("no home directory: set RALPH_TEST_MODEL")
                    .test_model()
            }),
        threads: std::thread::available_parallelism()
            .map(|n| i32::try_from(n.get()).unwrap_or(2))
            .unwrap_or(2),
        rounds: 64,
        prompt_tokens: 512,
        gen_tokens: 128,
        batch: 512,
        draft: None,
        speculative_only: false,
        speed_only: false,
        observed_only: false,
        busy: false,
        busy_only: false,
        reps: 3,
        pairs: 6,
        draft_lengths: vec![2, 4, 6],
        baseline: None,
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
            "--draft-model" => out.draft = Some(PathBuf::from(value())),
            "--speculative-only" => out.speculative_only = true,
            "--speed-only" => out.speed_only = true,
            "--observed-only" => out.observed_only = true,
            "--busy" => out.busy = true,
            "--busy-only" => out.busy_only = true,
            "--baseline" => out.baseline = Some(PathBuf::from(value())),
            "--reps" => out.reps = value().parse().expect("--reps N"),
            "--pairs" => out.pairs = value().parse().expect("--pairs N"),
            "--draft-lengths" => {
                out.draft_lengths = value()
                    .split(',')
                    .map(|k| k.parse().expect("--draft-lengths K,K,..."))
                    .collect();
            }
            // `cargo bench` passes `--bench`; anything else unknown is ignored the same way.
            _ => {}
        }
    }
    out
}

fn settings(a: &Args, max_tokens: u32) -> InferenceSettings {
    InferenceSettings {
        // Room for the demo's round prompt beside the report reserve and turn margin, which
        // every ordinary turn leaves free (a smaller context would cap its first token away).
        ctx_size: 4096,
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

/// Generates `request`'s turn on `child`: when its first text came (its end, if none came).
fn first_text_at(child: &mut impl Child, request: Request<'_>) -> Instant {
    let mut first = None;
    child
        .generate(
            request,
            &mut |_| {
                first.get_or_insert_with(Instant::now);
            },
            &CancellationToken::new(),
        )
        .unwrap();
    first.unwrap_or_else(Instant::now)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// One llama-bench measurement on the same model, threads and batch: tokens per second of a
/// `prompt`-token prompt (with `gen` 0) or of `gen` generated tokens (with `prompt` 0).
fn llama_bench(a: &Args, bin: &Path, prompt: usize, gen: u32) -> f64 {
    let out = Command::new(bin)
        .arg("-m")
        .arg(&a.model)
        .args(["-t", &a.threads.to_string(), "-b", &a.batch.to_string()])
        .args(["-p", &prompt.to_string(), "-n", &gen.to_string()])
        .args(["-r", "1", "-o", "jsonl"])
        .stderr(Stdio::null())
        .output()
        .expect("llama-bench runs");
    assert!(out.status.success(), "llama-bench failed: {}", out.status);
    let line: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("llama-bench prints one JSON line");
    line["avg_ts"].as_f64().expect("llama-bench reports avg_ts")
}

/// A figure measured several times, each time followed by the same figure from llama-bench
/// when there is a baseline, so that both see the same state of the machine.
#[derive(Default)]
struct Paired {
    ours: Vec<f64>,
    theirs: Vec<f64>,
}

impl Paired {
    fn line(self, what: &str, baseline: &str) -> String {
        let ours = median(self.ours.clone());
        if self.theirs.is_empty() {
            return format!("{what} {ours:8.1} tok/s (compare llama-bench {baseline})");
        }
        let ratios: Vec<f64> = self
            .ours
            .iter()
            .zip(&self.theirs)
            .map(|(o, t)| o / t)
            .collect();
        let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        format!(
            "{what} {ours:8.1} tok/s, llama-bench {baseline} {:.1} tok/s alternating: {:.2} (median of {} pairs: {})",
            median(self.theirs),
            median(ratios),
            each.len(),
            each.join(" ")
        )
    }
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
            max_tokens: None,
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

/// Worst time from a cancel to `generate` returning, cancelling a prompt at several points.
fn cancel_latency(backend: &LlamaBackend, prompt: &[Message]) -> f64 {
    let mut worst = 0.0f64;
    for (round, delay_ms) in (1..).zip([20u64, 60, 120, 250, 400, 700]) {
        let mut child = backend.child(round).unwrap();
        let cancel = CancellationToken::new();
        let cancelled_at = Arc::new(Mutex::new(None::<Instant>));
        let canceller = {
            let cancel = cancel.clone();
            let cancelled_at = cancelled_at.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(delay_ms));
                *cancelled_at.lock().unwrap() = Some(Instant::now());
                cancel.cancel();
            })
        };
        let mut first_token = None;
        child
            .generate(
                Request {
                    messages: prompt,
                    tools: &[],
                    report_only: false,
                    max_tokens: None,
                },
                &mut |_| {
                    first_token.get_or_insert_with(Instant::now);
                },
                &cancel,
            )
            .unwrap();
        let returned = Instant::now();
        canceller.join().unwrap();
        let at = cancelled_at.lock().unwrap().unwrap();
        // Only cancels that landed during the prompt count.
        if first_token.is_none_or(|t| t > at) {
            worst = worst.max(ms(returned.saturating_duration_since(at)));
        }
    }
    worst
}

/// Round start latency (the round's child created → first generated token) on the demo
/// objective's real round prompt, rounds 1..=5, with and without the fixed-prefix cache.
fn round_starts(a: &Args) {
    const ROUNDS: u32 = 5;
    let objective =
        "Implement slugify in slug.py so that python3 -m unittest passes. Keep the tests unchanged.";
    for cached in [true, false] {
        let backend = LlamaBackend::load(&a.model, &settings(a, 1), None)
            .unwrap()
            .with_prefix_cache(cached);
        let specs = Registry::standard().specs();
        let instructions = backend.format().tool_instructions(&specs);
        let mut starts = Vec::new();
        let mut shown = (0usize, 0usize);
        for round in 1..=ROUNDS {
            let messages = RoundPrompt {
                objective,
                round,
                max_rounds: 8,
                previous: None,
                agents: None,
                tool_instructions: &instructions,
                observation: None,
                notes: &[],
            }
            .messages();
            let request = Request {
                messages: &messages,
                tools: &specs,
                report_only: false,
                max_tokens: None,
            };
            let begun = Instant::now();
            let mut child = backend.child(round).unwrap();
            child.prepare(request).unwrap();
            let first = first_text_at(&mut child, request);
            starts.push(ms(first.saturating_duration_since(begun)));
            shown = (
                child.prefix().map_or(0, |p| p.len()),
                child.last_prompt_tokens().len(),
            );
        }
        let later = median(starts[1..].to_vec());
        println!(
            "round start, prefix cache {:3}:    round 1 {:8.1} ms, rounds 2..{ROUNDS} {:8.1} ms (median); prefix {} of {} prompt tokens ({:.0}%)",
            if cached { "on" } else { "off" },
            starts[0],
            later,
            shown.0,
            shown.1,
            100.0 * shown.0 as f64 / shown.1.max(1) as f64
        );
    }
}

/// The demo's round start with the observation and the check against without, in
/// alternating pairs on one backend whose fixed prefix is cached (rounds 2..): plain is the
/// child created → first token on the fixed prompt; observed adds the check's run in the
/// sandbox (`python3 -m unittest`), the look at the demo repository and the observation's
/// tokens. The goal: observed ≤ 1.5 × plain.
fn observed_round_starts(a: &Args) {
    use ralph_tui::engine::{check, observe};
    use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
    use ralph_tui::tools::ToolPolicy;
    const PAIRS: u32 = 4;
    let objective =
        "Implement slugify in slug.py so that python3 -m unittest passes. Keep the tests unchanged.";
    let repo = tempfile::tempdir().unwrap();
    for (name, text) in DEMO_FILES {
        std::fs::write(repo.path().join(name), text).unwrap();
    }
    let policy = ToolPolicy::new(SandboxMode::WorkspaceWrite, ApprovalPolicy::Auto, false);
    let backend = LlamaBackend::load(&a.model, &settings(a, 1), None)
        .unwrap()
        .with_prefix_cache(true);
    let specs = Registry::standard().specs();
    let instructions = backend.format().tool_instructions(&specs);
    let changed = std::collections::BTreeSet::new();
    let cancel = CancellationToken::new();
    let start = |round: u32, observed: bool| -> (f64, usize) {
        let begun = Instant::now();
        let seen = observed.then(|| {
            let (run, check_ran) = check::run_observed(
                "python3 -m unittest",
                repo.path(),
                &policy,
                "bench",
                round,
                (&cancel, true),
            );
            observe::observe(&observe::Inputs {
                root: repo.path(),
                objective,
                previous: None,
                check: Some(&run),
                check_ran: &check_ran,
                ran: &[],
                changed: &changed,
                run_patch: None,
                text_budget: observe::text_budget(16384, 1024),
            })
        });
        let messages = RoundPrompt {
            objective,
            round,
            max_rounds: 8,
            previous: None,
            agents: None,
            tool_instructions: &instructions,
            observation: seen.as_ref().map(|o| o.text.as_str()),
            notes: &[],
        }
        .messages();
        let request = Request::new(&messages, &specs);
        let mut child = backend.child(round).unwrap();
        child.prepare(request).unwrap();
        let first = first_text_at(&mut child, request);
        (
            ms(first.saturating_duration_since(begun)),
            child.last_prompt_tokens().len(),
        )
    };
    // Round 1 stores the prefix; every measured round restores it.
    start(1, false);
    let mut ratios = Vec::new();
    let (mut plain, mut observed) = (Vec::new(), Vec::new());
    let mut tokens = (0, 0);
    for pair in 0..PAIRS {
        let round = 2 + 2 * pair;
        let (p, pt) = start(round, false);
        let (o, ot) = start(round + 1, true);
        tokens = (pt, ot);
        ratios.push(o / p);
        plain.push(p);
        observed.push(o);
    }
    println!(
        "round start, demo, observed/plain: {:.2}× (median of {PAIRS} pairs; {:.1} against {:.1} ms; prompt {} against {} tokens); pairs {}",
        median(ratios.clone()),
        median(observed),
        median(plain),
        tokens.1,
        tokens.0,
        ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(" ")
    );
}

/// The demo repository's files (`scripts/demo.sh` writes the same ones).
const DEMO_FILES: [(&str, &str); 3] = [
    (
        "slug.py",
        "\"\"\"Turn titles into URL slugs.\"\"\"\n\n\ndef slugify(text):\n    raise NotImplementedError\n",
    ),
    (
        "test_slug.py",
        "import unittest\n\nfrom slug import slugify\n\n\nclass SlugifyTest(unittest.TestCase):\n    def test_words_are_joined_with_hyphens(self):\n        self.assertEqual(slugify(\"Hello World\"), \"hello-world\")\n\n    def test_punctuation_is_dropped(self):\n        self.assertEqual(slugify(\"Ralph, again!\"), \"ralph-again\")\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
    ),
    (
        "AGENTS.md",
        "Run the tests with `python3 -m unittest` from the repository root.\n",
    ),
];

/// Round 1's start (the round's child created → first generated token) on the demo round
/// prompt in pairs of runs sharing a disk prefix cache: the first evaluates the fixed prefix
/// and stores it (cold), the second restores it from disk. The goal: restored ≤ 0.1 × cold.
fn round_one_from_disk(a: &Args) {
    use ralph_tui::llm::prefix_store::{PrefixStore, DEFAULT_LIMIT_BYTES};
    let objective =
        "Implement slugify in slug.py so that python3 -m unittest passes. Keep the tests unchanged.";
    let round_one = |cache: &Path| {
        let backend = LlamaBackend::load(&a.model, &settings(a, 1), None)
            .unwrap()
            .with_disk_prefix_cache(PrefixStore::new(cache.join("prefix"), DEFAULT_LIMIT_BYTES));
        let specs = Registry::standard().specs();
        let instructions = backend.format().tool_instructions(&specs);
        let messages = RoundPrompt {
            objective,
            round: 1,
            max_rounds: 8,
            previous: None,
            agents: None,
            tool_instructions: &instructions,
            observation: None,
            notes: &[],
        }
        .messages();
        let request = Request::new(&messages, &specs);
        let begun = Instant::now();
        let mut child = backend.child(1).unwrap();
        let reused = child.prepare(request).unwrap();
        let first = first_text_at(&mut child, request);
        (ms(first.saturating_duration_since(begun)), reused)
    };
    // Each pair starts from an empty cache: the cold run stores the prefix, the next run of
    // the same model and prompt restores it.
    let (mut cold, mut restored, mut ratios, mut reused) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..3 {
        let cache = tempfile::tempdir().unwrap();
        let (c, _) = round_one(cache.path());
        let (r, n) = round_one(cache.path());
        cold.push(c);
        restored.push(r);
        ratios.push(r / c.max(f64::MIN_POSITIVE));
        reused = n;
    }
    println!(
        "round 1 start, disk prefix cache:  cold {:8.1} ms, restored {:8.1} ms ({:.3}× cold, median of 3 pairs; goal ≤ 0.10; {reused} prefix tokens restored)",
        median(cold),
        median(restored),
        median(ratios)
    );
}

/// Prompt throughput on fresh contexts (whole batches, the abort callback armed) and the
/// worst cancel latency during a prompt. A prompt's typical time in ms.
fn prompt_speed(a: &Args, backend: &LlamaBackend) -> f64 {
    let cancel = CancellationToken::new();
    let prompt = long_prompt(backend, a.prompt_tokens);
    let mut pp = Paired::default();
    let mut round_prompt_ms = Vec::new();
    for round in (1u32..).take(a.pairs.max(1)) {
        let mut child = backend.child(round).unwrap();
        child
            .generate(
                Request {
                    messages: &prompt,
                    tools: &[],
                    report_only: false,
                    max_tokens: None,
                },
                &mut |_| {},
                &cancel,
            )
            .unwrap();
        let s = child.last_stats();
        drop(child);
        pp.ours
            .push(f64::from(s.evaluated_tokens) / s.prompt_time.as_secs_f64());
        round_prompt_ms.push(ms(s.prompt_time));
        if let Some(bin) = &a.baseline {
            pp.theirs.push(llama_bench(a, bin, a.prompt_tokens, 0));
        }
    }
    println!(
        "{}",
        pp.line(
            &format!(
                "prompt eval ({} tokens, batch {}):",
                a.prompt_tokens, a.batch
            ),
            &format!("pp{}", a.prompt_tokens)
        )
    );
    let worst = cancel_latency(backend, &long_prompt(backend, 3 * a.prompt_tokens));
    println!(
        "cancel during the prompt (batch {}): {:8.1} ms worst of 6 (abort callback)",
        a.batch, worst
    );
    median(round_prompt_ms)
}

/// One generation by a fresh child of `backend` (round `round`) on `messages`: its figures.
fn generate_once(
    backend: &LlamaBackend,
    messages: &[Message],
    round: u32,
    cancel: &CancellationToken,
) -> TurnStats {
    let mut child = backend.child(round).unwrap();
    let request = Request {
        messages,
        tools: &[],
        report_only: false,
        max_tokens: None,
    };
    child.generate(request, &mut |_| {}, cancel).unwrap();
    child.last_stats()
}

/// Generation throughput with the abort callback (as runs have it), alternating with the
/// same generation without it and with llama-bench's.
fn generation_speed(a: &Args) {
    let cancel = CancellationToken::new();
    let story = vec![
        Message::new(Role::System, "You are a storyteller."),
        Message::new(
            Role::User,
            "Tell a very long story about a lighthouse keeper.",
        ),
    ];
    let [armed, unarmed] = [true, false].map(|abortable| {
        LlamaBackend::load(&a.model, &settings(a, a.gen_tokens), None)
            .unwrap()
            .with_abort_callback(abortable)
    });
    let rate = |backend: &LlamaBackend, round: u32| {
        let s = generate_once(backend, &story, round, &cancel);
        f64::from(s.generated_tokens) / s.generation_time.as_secs_f64()
    };
    let mut tg = Paired::default();
    let mut callback = Vec::new();
    for round in (1u32..).take(a.pairs.max(1)) {
        let with = rate(&armed, round);
        let without = rate(&unarmed, round);
        tg.ours.push(with);
        callback.push(100.0 * (with - without) / without.max(f64::MIN_POSITIVE));
        if let Some(bin) = &a.baseline {
            tg.theirs.push(llama_bench(a, bin, 0, a.gen_tokens));
        }
    }
    println!(
        "{}",
        tg.line(
            &format!("generation (up to {} tokens):     ", a.gen_tokens),
            &format!("tg{}", a.gen_tokens)
        )
    );
    println!(
        "abort callback's cost in generation: {:+.1}% (median of {} alternating pairs)",
        median(callback),
        a.pairs.max(1)
    );
}

/// Tokens each run of the busy-machine pair reads and generates: beside a busy process a
/// token can take seconds, so the runs are short.
const BUSY_PROMPT_TOKENS: usize = 192;
const BUSY_GEN_TOKENS: u32 = 24;

/// The busy-machine pair: prompt and generation speed idle against beside a busy process (a
/// shell spinning on one core, as a build's compiler would), for the machine's cores as
/// threads (ralph-tui's default) and for one fewer. llama.cpp's threads meet at a barrier
/// after every operation, so one thread that the busy process descheduled holds up the
/// others. Runs alternate idle and busy; medians of `--reps` pairs.
fn busy_machine(a: &Args) {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let cores = i32::try_from(cores).unwrap_or(2);
    let counts: Vec<i32> = if cores > 1 {
        vec![cores, cores - 1]
    } else {
        vec![1]
    };
    let cancel = CancellationToken::new();
    println!(
        "busy machine: a {BUSY_PROMPT_TOKENS}-token prompt and {BUSY_GEN_TOKENS} generated tokens, idle against beside one busy process ({cores} cores; median of {} alternating pairs)",
        a.reps.max(1)
    );
    for threads in counts {
        let s = InferenceSettings {
            threads,
            ..settings(a, BUSY_GEN_TOKENS)
        };
        let backend = LlamaBackend::load(&a.model, &s, None)
            .unwrap()
            .with_prefix_cache(false);
        let prompt = long_prompt(&backend, BUSY_PROMPT_TOKENS);
        let rates = |round: u32| {
            let s = generate_once(&backend, &prompt, round, &cancel);
            (
                f64::from(s.evaluated_tokens) / s.prompt_time.as_secs_f64(),
                f64::from(s.generated_tokens) / s.generation_time.as_secs_f64(),
            )
        };
        let (mut idle, mut busy) = (Vec::new(), Vec::new());
        for round in (1u32..).take(a.reps.max(1)) {
            idle.push(rates(round));
            let mut spinner = Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            busy.push(rates(round));
            let _ = spinner.kill();
            let _ = spinner.wait();
        }
        let prompt_of = |v: &[(f64, f64)]| median(v.iter().map(|r| r.0).collect());
        let gen_of = |v: &[(f64, f64)]| median(v.iter().map(|r| r.1).collect());
        let (pi, pb, gi, gb) = (
            prompt_of(&idle),
            prompt_of(&busy),
            gen_of(&idle),
            gen_of(&busy),
        );
        println!(
            "  threads {threads}: prompt idle {pi:7.1} · busy {pb:7.1} tok/s ({:.2}x) | generation idle {gi:7.1} · busy {gb:7.1} tok/s ({:.2}x)",
            pb / pi.max(f64::MIN_POSITIVE),
            gb / gi.max(f64::MIN_POSITIVE)
        );
    }
}

/// A fresh context per round against reloading the model per round, beside a typical
/// prompt's time.
fn fresh_against_reload(a: &Args, backend: &LlamaBackend, typical_prompt_ms: f64) {
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
        let b = LlamaBackend::load(&a.model, &settings(a, 1), None).unwrap();
        let child = b.child(round).unwrap();
        reload.push(ms(started.elapsed()));
        drop(child);
    }
    let fresh_ms = median(fresh);
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
}

/// Memory across rounds: each round a fresh context, a short prompt, a few tokens.
fn memory_across_rounds(a: &Args) {
    let cancel = CancellationToken::new();
    let short = vec![
        Message::new(Role::System, "You are brief."),
        Message::new(Role::User, "Say hello."),
    ];
    let small = LlamaBackend::load(&a.model, &settings(a, 8), None).unwrap();
    let mut after_first = 0;
    for round in 1..=a.rounds {
        let mut child = small.child(round).unwrap();
        child
            .generate(
                Request {
                    messages: &short,
                    tools: &[],
                    report_only: false,
                    max_tokens: None,
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
    if let Some(draft) = &a.draft {
        let runs = speculative::Runs {
            gen: a.gen_tokens as usize,
            reps: a.reps,
            lengths: &a.draft_lengths,
        };
        speculative::measure(&a.model, draft, &settings(&a, 1), &runs);
    }
    if a.speculative_only {
        return;
    }
    if a.observed_only {
        observed_round_starts(&a);
        return;
    }
    if a.busy_only {
        busy_machine(&a);
        return;
    }
    let started = Instant::now();
    let backend = LlamaBackend::load(&a.model, &settings(&a, 1), None).unwrap();
    let load = started.elapsed();
    println!("model load (mmap):                 {:8.1} ms", ms(load));
    let backend = backend.with_prefix_cache(false);
    let typical_prompt_ms = prompt_speed(&a, &backend);
    if a.speed_only {
        generation_speed(&a);
        return;
    }
    round_starts(&a);
    observed_round_starts(&a);
    round_one_from_disk(&a);
    generation_speed(&a);
    fresh_against_reload(&a, &backend, typical_prompt_ms);
    drop(backend);
    memory_across_rounds(&a);
    if a.busy {
        busy_machine(&a);
    }
}
