//! Tests: the llama backend on the real default model (CPU, seeded, small sizes).
//!
//! These load SmolLM2-135M (`make model` fetches it; `RALPH_TEST_MODEL` points elsewhere) and
//! fail with a message saying so when it is missing. They take the machine's cores, so they
//! run one at a time under a shared lock.
#![cfg(feature = "llama")]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ralph_tui::config::Dirs;
use ralph_tui::engine::report;
use ralph_tui::llm::llama::{sha256_hex, LlamaBackend, LlamaChild, Vocab};
use ralph_tui::llm::settings::InferenceSettings;
use ralph_tui::llm::{Child, Request, StopReason};
use ralph_tui::protocol::message::{Message, Role};
use ralph_tui::protocol::tool::ToolSpec;
use ralph_tui::tools::report_spec;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::common::{code, events, headless, of_type, TempRepo, BIN};

/// One real-model test at a time, across test processes too: each one uses every core.
pub(super) struct Exclusive {
    _thread: MutexGuard<'static, ()>,
    _process: nix::fcntl::Flock<std::fs::File>,
}

pub(super) fn exclusive() -> Exclusive {
    static LOCK: Mutex<()> = Mutex::new(());
    let thread = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let path = std::env::temp_dir().join("ralph-tui-real-model-tests.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap();
    let process = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .unwrap();
    Exclusive {
        _thread: thread,
        _process: process,
    }
}

/// The test suite's model (SmolLM2-135M, not the default model), or the test fails saying
/// how to get it.
pub(super) fn model_path() -> PathBuf {
    model_file(
        "RALPH_TEST_MODEL",
        |dirs| dirs.test_model(),
        "the test model",
    )
}

/// The model file `env` names, else `default`'s; a test fails saying how to get it when it
/// is not there.
fn model_file(env: &str, default: fn(&Dirs) -> PathBuf, what: &str) -> PathBuf {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| default(&Dirs::discover().unwrap()));
    assert!(
        path.is_file(),
        "the real-model tests need {what} at {}: run `make model` (make test fetches it first), or set {env} to a GGUF file",
        path.display()
    );
    path
}

fn cores() -> i32 {
    std::thread::available_parallelism()
        .map(|n| i32::try_from(n.get()).unwrap_or(2))
        .unwrap_or(2)
}

fn settings(seed: u32) -> InferenceSettings {
    InferenceSettings {
        // Room for a few turns of the report prompt (621 tokens) beside the report reserve
        // and turn margin, which every ordinary turn leaves free.
        ctx_size: 3072,
        threads: cores(),
        gpu_layers: Some(0),
        batch_size: 64,
        max_tokens: 320,
        temperature: 0.7,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.05,
        repeat_penalty: 1.1,
        seed,
    }
}

fn greedy() -> InferenceSettings {
    InferenceSettings {
        temperature: 0.0,
        max_tokens: 40,
        ..settings(1)
    }
}

fn load(settings: &InferenceSettings) -> LlamaBackend {
    LlamaBackend::load(&model_path(), settings, None).unwrap()
}

/// A round prompt that asks for nothing but the report.
fn report_messages(backend: &LlamaBackend, tools: &[ToolSpec]) -> Vec<Message> {
    let system = format!(
        "You are one round of a Ralph loop working on a git repository.\n\n{}",
        backend.format().tool_instructions(tools)
    );
    let user = "Objective (fixed for the whole run):\nAdd a greeting to README.md.\n\nThis is round 1 of 8. You listed the files and read README.md; it has one line, '# demo'. The greeting is not there yet.\n\nEnd the round now: call ralph_report with status continue, a one-sentence summary and one next step.";
    vec![
        Message::new(Role::System, system),
        Message::new(Role::User, user),
    ]
}

fn quiet(_: &str) {}

#[test]
fn a_round_files_a_schema_valid_report_for_five_seeds() {
    let _lock = exclusive();
    let tools = vec![report_spec()];
    let started = Instant::now();
    for seed in [1u32, 7, 42, 1234, 9001] {
        let backend = load(&settings(seed));
        let mut child = backend.child(1).unwrap();
        let mut messages = report_messages(&backend, &tools);
        let cancel = CancellationToken::new();
        let mut accepted = None;
        let mut transcript = Vec::new();
        for _turn in 0..3 {
            let request = Request {
                messages: &messages,
                tools: &tools,
                report_only: false,
                max_tokens: None,
            };
            let generation = child.generate(request, &mut quiet, &cancel).unwrap();
            show_turn(seed, &child, &generation.text);
            transcript.push(generation.text.clone());
            let parsed = backend.format().parse(&generation.text);
            let report = parsed.calls.iter().find_map(|call| match call {
                ralph_tui::chat::ParsedCall::Call { name, arguments } if name == "ralph_report" => {
                    Some(arguments.clone())
                }
                _ => None,
            });
            if let Some(arguments) = report {
                accepted = Some(report::validate(&arguments).unwrap_or_else(|e| {
                    panic!("seed {seed}: the captured report is invalid ({e}): {arguments}")
                }));
                break;
            }
            messages.push(Message::new(Role::Assistant, generation.text));
            messages.push(Message::new(
                Role::User,
                ralph_tui::engine::prompt::NO_CALL_REMINDER,
            ));
        }
        assert!(
            accepted.is_some(),
            "seed {seed}: no report within 3 turns: {transcript:#?}"
        );
    }
    report_time("five constrained reports", started);
}

/// Whether the grammar `gbnf` takes every token of `text` (tokenized without special tokens).
fn grammar_takes(backend: &LlamaBackend, gbnf: &str, text: &str) -> bool {
    let mut sampler =
        llama_cpp_2::sampling::LlamaSampler::grammar(backend.model(), gbnf, "root").unwrap();
    let tokens = Vocab::of(backend.model()).tokenize(text.as_bytes(), false, false);
    tokens
        .iter()
        .all(|&token| sampler.try_accept(token).is_ok())
}

#[test]
fn the_wrap_up_grammar_admits_only_the_report_call() {
    let _lock = exclusive();
    let backend = load(&greedy());
    assert!(
        ["generic", "hermes"].contains(&backend.format().name()),
        "this test writes <tool_call> calls; the default model's format is {}",
        backend.format().name()
    );
    let tools = ralph_tui::tools::Registry::standard().specs();
    let gbnf = backend.wrap_up_grammar(&tools).unwrap();
    let report = r#"<tool_call>{"name": "ralph_report", "arguments": {"status": "continue", "summary": "Read the files.", "evidence": [], "next_steps": ["Write the greeting."], "blocker": ""}}</tool_call>"#;
    assert!(grammar_takes(&backend, &gbnf, report), "{gbnf}");
    let others = [
        r#"<tool_call>{"name": "list_dir", "arguments": {"path": "."}}</tool_call>"#,
        r#"<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": "b"}}</tool_call>"#,
        "I will look at the files first.",
        r#"<tool_call>{"name": "ralph_report", "arguments": {"status": "continue", "summary": " untrimmed", "evidence": [], "next_steps": [], "blocker": ""}}</tool_call>"#,
    ];
    for text in others {
        assert!(!grammar_takes(&backend, &gbnf, text), "admitted: {text}");
    }
}

#[test]
fn a_round_out_of_turns_and_context_files_a_schema_valid_report_for_five_seeds() {
    let _lock = exclusive();
    let model = model_path();
    let started = Instant::now();
    let seeds = Mutex::new(vec![1u32, 7, 42, 1234, 9001]);
    // One llama.cpp thread per run (a run's spinning workers stall when anything else shares
    // the cores), and as many runs at once as there are cores.
    let runs = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let wrap_ups: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..runs)
            .map(|_| {
                scope.spawn(|| {
                    let mut wrapped = 0;
                    loop {
                        // Taken on its own line: a guard in a `while let` lives through the
                        // body, and the runs would take turns.
                        let next = seeds.lock().unwrap().pop();
                        let Some(seed) = next else { break };
                        wrapped += usize::from(out_of_turns_or_context(&model, seed));
                    }
                    wrapped
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    // One turn each: a seed that does not report in its first turn is wrapped up.
    assert!(
        wrap_ups > 0,
        "no run was wrapped up: the wrap-up path went untested"
    );
    report_time(
        &format!("five rounds out of turns or context ({wrap_ups} wrapped up)"),
        started,
    );
}

/// One headless round of `seed` that must run out of turns or context and still file a
/// schema-valid report; returns whether it was wrapped up.
fn out_of_turns_or_context(model: &Path, seed: u32) -> bool {
    let started = Instant::now();
    let repo = TempRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    let run_dir = scratch.path().join("run");
    let out = run_model(
        &repo,
        &run_dir,
        model,
        &format!("-n 1 --max-turns 1 --max-tokens 256 --ctx-size 2560 --seed {seed} --threads 1"),
        "Add a greeting line to README.md.",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let evs = events(&out.stdout);
    assert!(
        [0, 3, 4].contains(&code(&out)),
        "seed {seed}: exit {}: {stderr}",
        code(&out)
    );
    let accepted = of_type(&evs, "report_accepted");
    assert_eq!(accepted.len(), 1, "seed {seed}: {stderr}");
    report::validate(&accepted[0]["report"])
        .unwrap_or_else(|e| panic!("seed {seed}: the report is invalid ({e})"));
    let finished = of_type(&evs, "round_finished");
    assert_eq!(finished[0]["outcome"], "reported", "seed {seed}");
    let wrap = of_type(&evs, "wrap_up").into_iter().next();
    if let Some(wrap) = &wrap {
        assert!(["turns", "context"].contains(&wrap["reason"].as_str().unwrap()));
    }
    report_time(&format!("seed {seed}"), started);
    wrap.is_some()
}

/// One headless run of `model` on the CPU in `repo`, logged under `run_dir`: `flags` are the
/// run's options, separated by spaces.
fn run_model(
    repo: &TempRepo,
    run_dir: &Path,
    model: &Path,
    flags: &str,
    objective: &str,
) -> std::process::Output {
    let flags: Vec<&str> = flags.split_whitespace().collect();
    headless(repo.path(), run_dir, &flags)
        .args(["--gpu-layers", "0", "--model"])
        .arg(model)
        .arg(objective)
        .output()
        .unwrap()
}

#[allow(
    clippy::print_stderr,
    reason = "measured figures are shown, not asserted"
)]
fn show_turn(seed: u32, child: &LlamaChild<'_>, text: &str) {
    let s = child.last_stats();
    eprintln!(
        "seed {seed}: prompt {} tokens ({} reused) in {} ms; {} tokens in {} ms ({} resampled): {text:?}",
        s.prompt_tokens,
        s.reused_tokens,
        s.prompt_time.as_millis(),
        s.generated_tokens,
        s.generation_time.as_millis(),
        s.resampled
    );
}

#[allow(
    clippy::print_stderr,
    reason = "measured figures are shown, not asserted"
)]
fn report_time(what: &str, started: Instant) {
    eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
}

#[allow(
    clippy::print_stderr,
    reason = "measured figures are shown, not asserted"
)]
fn report_latency(what: &str, latency: Duration) {
    eprintln!("{what}: returned {} ms after cancel", latency.as_millis());
}

/// Greedy output of one fresh child for the report prompt.
fn greedy_round(backend: &LlamaBackend, round: u32) -> (String, u32, u32) {
    let tools = vec![report_spec()];
    let messages = report_messages(backend, &tools);
    let mut child = backend.child(round).unwrap();
    let before = child.kv_tokens();
    let request = Request {
        messages: &messages,
        tools: &tools,
        report_only: false,
        max_tokens: None,
    };
    let g = child
        .generate(request, &mut quiet, &CancellationToken::new())
        .unwrap();
    (g.text, before, child.kv_tokens())
}

#[test]
fn fresh_contexts_are_empty_and_greedy_rounds_repeat_exactly() {
    let _lock = exclusive();
    let backend = load(&greedy());
    let (first, empty1, used1) = greedy_round(&backend, 1);
    let (second, empty2, used2) = greedy_round(&backend, 2);
    assert_eq!(empty1, 0, "round 1's KV cache was not empty");
    assert_eq!(empty2, 0, "round 2's KV cache was not empty");
    assert!(used1 > 0 && used1 == used2, "{used1} vs {used2}");
    assert!(!first.is_empty());
    assert_eq!(first, second, "greedy output differs between fresh rounds");
}

#[test]
fn a_later_turn_reuses_the_rounds_own_prefix_only() {
    let _lock = exclusive();
    let backend = load(&greedy());
    let tools = vec![report_spec()];
    let mut messages = report_messages(&backend, &tools);
    let mut child = backend.child(1).unwrap();
    let cancel = CancellationToken::new();
    let g = child
        .generate(
            Request {
                messages: &messages,
                tools: &tools,
                report_only: false,
                max_tokens: None,
            },
            &mut quiet,
            &cancel,
        )
        .unwrap();
    let first = child.last_stats();
    assert_eq!(first.reused_tokens, 0);
    messages.push(Message::new(Role::Assistant, g.text));
    messages.push(Message::new(Role::User, "Go on."));
    child
        .generate(
            Request {
                messages: &messages,
                tools: &tools,
                report_only: false,
                max_tokens: None,
            },
            &mut quiet,
            &cancel,
        )
        .unwrap();
    let second = child.last_stats();
    assert!(
        second.reused_tokens >= first.prompt_tokens - 1,
        "turn 2 reused {} tokens of turn 1's {}",
        second.reused_tokens,
        first.prompt_tokens
    );
    drop(child);
    let fresh = backend.child(2).unwrap();
    assert_eq!(fresh.kv_tokens(), 0);
}

#[test]
fn the_rendered_prompt_is_exactly_what_was_tokenized() {
    let _lock = exclusive();
    let backend = load(&greedy());
    let tools = vec![report_spec()];
    let messages = report_messages(&backend, &tools);
    let request = Request {
        messages: &messages,
        tools: &tools,
        report_only: false,
        max_tokens: None,
    };
    let rendered = backend.render_prompt(request).unwrap();
    let mut child: LlamaChild<'_> = backend.child(1).unwrap();
    let counted = child.count_prompt_tokens(request).unwrap();
    child
        .generate(request, &mut quiet, &CancellationToken::new())
        .unwrap();
    assert_eq!(child.last_prompt(), rendered);
    assert_eq!(
        child.last_prompt_tokens(),
        backend.tokenize(&rendered).as_slice()
    );
    assert_eq!(counted as usize, child.last_prompt_tokens().len());
    // The model's own template, with our system prompt (not SmolLM's default one).
    assert!(rendered.starts_with("<|im_start|>system\nYou are one round of a Ralph loop"));
    assert!(rendered.contains(&messages[1].content));
    assert!(rendered.ends_with("<|im_start|>assistant\n"));
    assert!(!rendered.contains("SmolLM"));
    let text = Vocab::of(backend.model()).detokenize(child.last_prompt_tokens(), false, true);
    assert_eq!(String::from_utf8_lossy(&text), rendered);
}

/// Any prompt bytes tokenize, a NUL among them (a command's output can hold one), and the
/// tokens read back byte for byte, whole or piece by piece as generation streams them.
#[test]
fn any_prompt_bytes_tokenize_and_read_back_exactly() {
    let _lock = exclusive();
    let backend = load(&greedy());
    let vocab = Vocab::of(backend.model());
    let text = "out: a\0b\0\n<|im_start|>user\nnaïve ✓ 世界\n";
    let tokens = vocab.tokenize(text.as_bytes(), false, true);
    assert!(tokens.len() > 10, "{tokens:?}");
    assert_eq!(vocab.detokenize(&tokens, false, true), text.as_bytes());
    let mut pieces = Vec::new();
    for &token in &tokens {
        vocab.token_to_piece_into(token, &mut pieces, true);
    }
    assert_eq!(pieces, text.as_bytes());
    // A special token's text is that one token only when special tokens are parsed.
    let special = vocab.tokenize(b"<|im_start|>", false, true);
    assert_eq!(special.len(), 1);
    assert!(vocab.tokenize(b"<|im_start|>", false, false).len() > 1);
    assert_eq!(vocab.token_to_piece(special[0], true), b"<|im_start|>");
    assert!(vocab.token_to_piece(special[0], false).is_empty());
    // The backend's own tokenize adds nothing SmolLM2 does not ask for.
    assert_eq!(backend.tokenize(text), tokens);
    assert!(!vocab.should_add_bos());
    assert!(vocab.is_eog(vocab.eos()));
}

/// The tokens the sampler bans (a logit bias of minus infinity, first in the chain) are the
/// chat's structure and nothing else. (SmolLM2 does not write `<|im_start|>` even when asked
/// to, so what the ban changes cannot be seen in its output: the 1.5B's report that filled
/// with it is in the notes.)
#[test]
fn the_banned_structure_tokens_are_a_roles_start_not_a_turns_end() {
    let _lock = exclusive();
    let backend = load(&greedy());
    let vocab = Vocab::of(backend.model());
    let im_start = vocab.tokenize(b"<|im_start|>", false, true);
    let im_end = vocab.tokenize(b"<|im_end|>", false, true);
    // A role's start is structure; the turn's end is how a turn ends, and stays.
    assert_eq!(backend.structure(), &im_start[..]);
    assert!(vocab.is_eog(im_end[0]) && vocab.is_control(im_end[0]));
    assert!(!vocab.is_control(vocab.tokenize(b"hello", false, true)[0]));
}

/// Runs `generate` while another thread cancels once `arm` fires; returns the stop reason,
/// the generated tokens and how long after the cancel `generate` returned.
fn cancel_when(
    child: &mut LlamaChild<'_>,
    messages: &[Message],
    arm: impl FnOnce(mpsc::Receiver<()>) + Send + 'static,
) -> (StopReason, u32, Duration) {
    let cancel = CancellationToken::new();
    let cancelled_at = Arc::new(Mutex::new(None::<Instant>));
    let (tx, rx) = mpsc::channel::<()>();
    let canceller = {
        let cancel = cancel.clone();
        let cancelled_at = cancelled_at.clone();
        std::thread::spawn(move || {
            arm(rx);
            *cancelled_at.lock().unwrap() = Some(Instant::now());
            cancel.cancel();
        })
    };
    let mut on_text = move |_: &str| {
        let _ = tx.send(());
    };
    let g = child
        .generate(
            Request {
                messages,
                tools: &[],
                report_only: false,
                max_tokens: None,
            },
            &mut on_text,
            &cancel,
        )
        .unwrap();
    let returned = Instant::now();
    drop(on_text);
    canceller.join().unwrap();
    let at = cancelled_at
        .lock()
        .unwrap()
        .expect("the cancel never fired");
    (
        g.stop,
        g.generated_tokens,
        returned.saturating_duration_since(at),
    )
}

#[test]
fn cancel_stops_generation_between_tokens() {
    let _lock = exclusive();
    let backend = load(&InferenceSettings {
        max_tokens: 2000,
        ..settings(3)
    });
    let messages = vec![
        Message::new(Role::System, "You are a storyteller."),
        Message::new(
            Role::User,
            "Tell a very long story about a lighthouse keeper.",
        ),
    ];
    let mut child = backend.child(1).unwrap();
    let (stop, generated, latency) = cancel_when(&mut child, &messages, |rx| {
        let _ = rx.recv();
    });
    assert_eq!(stop, StopReason::Cancelled);
    assert!((1..100).contains(&generated), "{generated} tokens");
    report_latency("cancel mid-generation", latency);
}

#[test]
fn cancel_stops_prompt_evaluation_between_batches() {
    let _lock = exclusive();
    // Small batches, so some are done by the earliest cancel (a cancel also aborts the batch
    // in progress: see the abort tests below).
    let backend = load(&InferenceSettings {
        batch_size: 16,
        ..settings(3)
    })
    .with_prefix_cache(false);
    let long = "The lighthouse keeper counted the waves every night. ".repeat(120);
    let messages = vec![
        Message::new(Role::System, "You are a storyteller."),
        Message::new(Role::User, long),
    ];
    let mut worst = Duration::ZERO;
    // A cancel also aborts the batch in progress, so where it lands depends on this machine's
    // speed right now: a cancel that came before the first batch finished or after the prompt
    // did is taken again later or earlier (at most 8 times); the one that lands mid-prompt is
    // checked. Each attempt is a fresh child.
    let mut delay = Duration::from_millis(150);
    let mut round = 0;
    for attempt in 0..5 {
        let mut landed = None;
        for _try in 0..8 {
            round += 1;
            let mut child = backend.child(round).unwrap();
            let total = child
                .count_prompt_tokens(Request {
                    messages: &messages,
                    tools: &[],
                    report_only: false,
                    max_tokens: None,
                })
                .unwrap();
            let wait = delay;
            let (stop, generated, latency) = cancel_when(&mut child, &messages, move |_| {
                std::thread::sleep(wait);
            });
            assert_eq!(stop, StopReason::Cancelled);
            let evaluated = child.kv_tokens();
            if generated > 0 || evaluated >= total {
                delay /= 2;
                continue;
            }
            if evaluated == 0 {
                delay *= 2;
                continue;
            }
            landed = Some((generated, evaluated, total, latency));
            break;
        }
        let (generated, evaluated, total, latency) =
            landed.unwrap_or_else(|| panic!("attempt {attempt}: no cancel landed mid-prompt"));
        assert_eq!(generated, 0);
        assert!(
            evaluated > 0 && evaluated < total,
            "cancelled after {evaluated} of {total} prompt tokens"
        );
        worst = worst.max(latency);
        delay += delay / 4;
    }
    report_latency("cancel mid-prompt (worst of 5)", worst);
}

#[test]
fn a_corrupt_or_truncated_gguf_is_a_usage_error() {
    let _lock = exclusive();
    let repo = TempRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    let corrupt = scratch.path().join("corrupt.gguf");
    let mut bytes = b"GGUF".to_vec();
    bytes.extend((0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    std::fs::write(&corrupt, &bytes).unwrap();
    let truncated = scratch.path().join("truncated.gguf");
    let real = std::fs::read(model_path()).unwrap();
    std::fs::write(&truncated, &real[..real.len() / 3]).unwrap();
    for (i, file) in [corrupt, truncated].iter().enumerate() {
        let run_dir = scratch.path().join(format!("run{i}"));
        let out = headless(repo.path(), &run_dir, &["--model"])
            .arg(file)
            .arg("do something")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{}: {stderr}", file.display());
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one clear line, got: {stderr}");
        assert!(
            lines[0].starts_with("ralph-tui: model ")
                && lines[0].contains(&file.display().to_string()),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_headless_run_streams_real_tokens_and_logs_its_prompts() {
    let _lock = exclusive();
    let model = model_path();
    let repo = TempRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    let run_dir = scratch.path().join("run");
    let started = Instant::now();
    let out = run_model(
        &repo,
        &run_dir,
        &model,
        &format!(
            "-n 2 --max-turns 2 --max-tokens 200 --ctx-size 3072 --seed 11 --threads {}",
            cores()
        ),
        "Add a greeting line to README.md.",
    );
    report_time("headless run, real model", started);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        [0, 3, 4, 5].contains(&code(&out)),
        "exit {}: {stderr}",
        code(&out)
    );
    let evs = events(&out.stdout);
    assert_eq!(evs[0]["type"], "run_started");
    assert_eq!(evs[0]["backend"], "llama");
    assert_eq!(evs[0]["device"], "CPU");
    let finished = evs.last().unwrap();
    assert_eq!(finished["type"], "run_finished", "{stderr}");
    assert_eq!(of_type(&evs, "run_finished").len(), 1);
    let starts = of_type(&evs, "round_started");
    let ends = of_type(&evs, "round_finished");
    assert!(!starts.is_empty());
    assert_eq!(starts.len(), ends.len());
    for (s, e) in starts.iter().zip(&ends) {
        assert_eq!(s["round"], e["round"]);
        assert!(s["prompt_tokens"].as_u64().unwrap() > 100);
        assert!(e["generated_tokens"].as_u64().unwrap() > 0);
    }
    let streamed: String = of_type(&evs, "token")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(streamed.trim().len() > 10, "no real tokens: {streamed:?}");

    // What the engine recorded as round 1's prompt is what the backend tokenized: render
    // prompt.json's messages with the model's template and find that hash in the log.
    let prompt: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("rounds/01/prompt.json")).unwrap())
            .unwrap();
    let messages: Vec<Message> = serde_json::from_value(prompt["messages"].clone()).unwrap();
    let tools: Vec<ToolSpec> = serde_json::from_value(prompt["tools"].clone()).unwrap();
    let backend = LlamaBackend::load(&model, &settings(11), None).unwrap();
    let rendered = backend
        .render_prompt(Request {
            messages: &messages,
            tools: &tools,
            report_only: false,
            max_tokens: None,
        })
        .unwrap();
    let log = std::fs::read_to_string(run_dir.join("ralph-tui.log")).unwrap();
    assert!(
        log.contains(&format!(
            "prompt_sha256={}",
            sha256_hex(rendered.as_bytes())
        )),
        "round 1's rendered prompt is not in the log"
    );
    assert!(!log.is_empty() && !stderr.contains("llama_model_loader"));
    let _ = BIN;
}

/// llama.cpp's log lines, captured while `f` runs on this thread.
#[cfg(feature = "vulkan")]
fn with_llama_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone)]
    struct Capture(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Capture {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let capture = Capture(Arc::new(Mutex::new(Vec::new())));
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let value = tracing::subscriber::with_default(subscriber, f);
    let bytes = capture.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    (value, String::from_utf8_lossy(&bytes).into_owned())
}

/// The GPU path on whatever Vulkan device there is (`make test-gpu` runs it on Mesa's
/// software device, lavapipe): layers really offloaded (model weights in a Vulkan buffer, not
/// only asked for), and two fresh GPU contexts give identical greedy output.
#[cfg(feature = "vulkan")]
#[test]
fn gpu_offload_is_real_and_fresh_gpu_contexts_repeat_exactly() {
    use ralph_tui::llm::Backend;
    let _lock = exclusive();
    // llama.cpp skips CPU-type Vulkan devices (lavapipe) unless this names them; it is read
    // when llama.cpp starts, so it is set before the first load in this process.
    if std::env::var_os("GGML_VK_VISIBLE_DEVICES").is_none() {
        std::env::set_var("GGML_VK_VISIBLE_DEVICES", "0");
    }
    // One CPU thread: with 2 layers on lavapipe and the rest on 2 CPU threads, about one fresh
    // context in eight gave a different greedy answer (the CPU alone, and this split with one
    // thread, repeated exactly every time), a race between the two backends that this test
    // would otherwise report at random.
    let settings = InferenceSettings {
        gpu_layers: Some(2),
        threads: 1,
        max_tokens: 8,
        ..greedy()
    };
    let (backend, log) = with_llama_logs(|| load(&settings));
    let device = backend.info().device;
    eprintln!("gpu device: {device}");
    // llama.cpp says how many layers it offloaded and which buffers hold the weights; a
    // silent fall-back to the CPU leaves no Vulkan weights buffer.
    let offload: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("offloaded ") || l.contains("model buffer size"))
        .collect();
    for line in &offload {
        eprintln!("gpu log: {}", line.trim());
    }
    assert!(
        device.starts_with("GPU (") && device.contains(" 2/"),
        "the layers were not offloaded: {device}"
    );
    let vulkan_weights = offload.iter().any(|l| {
        // The device's own buffer (`Vulkan0`), not pinned host memory (`Vulkan_Host`).
        l.split_once("Vulkan")
            .filter(|(_, rest)| rest.starts_with(|c: char| c.is_ascii_digit()))
            .and_then(|(_, rest)| rest.split_once("model buffer size ="))
            .and_then(|(_, size)| size.split_whitespace().next()?.parse::<f64>().ok())
            .is_some_and(|mib| mib > 0.0)
    });
    assert!(
        vulkan_weights,
        "no model weights in a Vulkan buffer ({device}); llama.cpp said:\n{}",
        offload.join("\n")
    );
    let (first, empty1, _) = greedy_round(&backend, 1);
    let (second, empty2, _) = greedy_round(&backend, 2);
    eprintln!("gpu greedy output: {first:?}");
    assert_eq!((empty1, empty2), (0, 0));
    assert!(!first.is_empty());
    assert_eq!(
        first, second,
        "greedy output differs between fresh GPU contexts"
    );
}

// ---------------------------------------------------------------------------------------------
// The run's fixed prefix restored into fresh contexts, and the abort callback.
// ---------------------------------------------------------------------------------------------

/// Round `round`'s prompt: the fixed system message and a user message naming the round (and,
/// when given, carrying `marker`), as the engine writes them.
fn round_messages(
    backend: &LlamaBackend,
    tools: &[ToolSpec],
    round: u32,
    marker: &str,
) -> Vec<Message> {
    let mut messages = report_messages(backend, tools);
    messages[1].content = format!(
        "{}\n\nThis is round {round} of 3. {marker}",
        messages[1].content
    );
    messages
}

/// Runs rounds 1..=3 on `backend`: each round's prefix tokens reused and its generation.
fn three_rounds(backend: &LlamaBackend) -> Vec<(u32, String, u32)> {
    let tools = vec![report_spec()];
    (1..=3)
        .map(|round| {
            let messages = round_messages(backend, &tools, round, "");
            let request = Request {
                messages: &messages,
                tools: &tools,
                report_only: false,
                max_tokens: None,
            };
            let mut child = backend.child(round).unwrap();
            let reused = child.prepare(request).unwrap();
            let g = child
                .generate(request, &mut quiet, &CancellationToken::new())
                .unwrap();
            (reused, g.text, g.generated_tokens)
        })
        .collect()
}

#[test]
fn restored_prefix_rounds_generate_exactly_what_recomputed_rounds_do() {
    let _lock = exclusive();
    for seed in [1u32, 42, 9001] {
        let settings = InferenceSettings {
            max_tokens: 24,
            ..settings(seed)
        };
        let cached = load(&settings);
        let plain = load(&settings).with_prefix_cache(false);
        let with = three_rounds(&cached);
        let without = three_rounds(&plain);
        assert_eq!(with[0].0, 0, "round 1 has nothing to restore");
        for round in 1..3 {
            assert!(
                with[round].0 > 100,
                "seed {seed} round {}: only {} prefix tokens restored",
                round + 1,
                with[round].0
            );
            assert_eq!(without[round].0, 0, "--no-prefix-cache restored a prefix");
            assert!(with[round].2 > 0);
            assert_eq!(
                (&with[round].1, with[round].2),
                (&without[round].1, without[round].2),
                "seed {seed} round {}: output with the restored prefix differs",
                round + 1
            );
        }
    }
}

#[test]
fn a_restored_prefix_holds_nothing_of_an_earlier_rounds_conversation() {
    let _lock = exclusive();
    let backend = load(&InferenceSettings {
        max_tokens: 16,
        ..greedy()
    });
    let tools = vec![report_spec()];
    let marker = "MARKER-31f9c0: the secret word is heliotrope.";
    let cancel = CancellationToken::new();

    // Round 1 writes the marker into its conversation (prompt and generated text).
    let first = round_messages(&backend, &tools, 1, marker);
    let mut child = backend.child(1).unwrap();
    child
        .generate(
            Request {
                messages: &first,
                tools: &tools,
                report_only: false,
                max_tokens: None,
            },
            &mut quiet,
            &cancel,
        )
        .unwrap();
    assert!(child.last_prompt().contains(marker));
    drop(child);

    // Round 2 restores the prefix into its fresh context.
    let second = round_messages(&backend, &tools, 2, "");
    let request = Request {
        messages: &second,
        tools: &tools,
        report_only: false,
        max_tokens: None,
    };
    let mut restored = backend.child(2).unwrap();
    let reused = restored.prepare(request).unwrap();
    let prefix = restored.prefix().unwrap().clone();
    assert_eq!(reused as usize, prefix.len());
    assert_eq!(restored.kv_tokens() as usize, prefix.len());
    let text = Vocab::of(backend.model()).detokenize(&prefix.tokens, false, true);
    let text = String::from_utf8_lossy(&text);
    assert!(!text.contains("MARKER") && text.ends_with(&second[0].content));

    // The restored bytes equal a fresh evaluation of the prefix alone.
    let dir = tempfile::tempdir().unwrap();
    let restored_file = dir.path().join("restored.state");
    let fresh_file = dir.path().join("fresh.state");
    restored.save_state(&restored_file, &prefix.tokens).unwrap();
    drop(restored);
    let mut fresh = backend.child(3).unwrap();
    fresh.prefill(&prefix.tokens).unwrap();
    fresh.save_state(&fresh_file, &prefix.tokens).unwrap();
    let restored_bytes = std::fs::read(&restored_file).unwrap();
    let fresh_bytes = std::fs::read(&fresh_file).unwrap();
    assert!(restored_bytes.len() > 1000);
    assert!(
        restored_bytes == fresh_bytes,
        "the restored state differs from a fresh evaluation of the prefix"
    );
    assert!(!restored_bytes
        .windows(b"MARKER".len())
        .any(|w| w == b"MARKER"));
}

/// One round `round` on `backend`: the prefix tokens it restored, its text and token count.
fn one_round(backend: &LlamaBackend, round: u32) -> (u32, String, u32) {
    let tools = vec![report_spec()];
    let messages = round_messages(backend, &tools, round, "");
    let request = Request::new(&messages, &tools);
    let mut child = backend.child(round).unwrap();
    let reused = child.prepare(request).unwrap();
    let g = child
        .generate(request, &mut quiet, &CancellationToken::new())
        .unwrap();
    (reused, g.text, g.generated_tokens)
}

/// The state files of the prefix store in `dir`.
fn state_files(dir: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|read| {
            read.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "state"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_round_1_restored_from_disk_generates_exactly_what_a_recomputed_one_does() {
    use ralph_tui::llm::prefix_store::{PrefixStore, DEFAULT_LIMIT_BYTES};
    let _lock = exclusive();
    let settings = InferenceSettings {
        max_tokens: 12,
        ..greedy()
    };
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("prefix");
    let run = || {
        let backend =
            load(&settings).with_disk_prefix_cache(PrefixStore::new(&dir, DEFAULT_LIMIT_BYTES));
        assert!(backend.prefix_cache_on_disk());
        backend
    };

    // The first run evaluates the prefix and leaves its state on disk.
    let cold = one_round(&run(), 1);
    assert_eq!(cold.0, 0, "nothing was on disk to restore");
    assert!(cold.2 > 0);
    let states = state_files(&dir);
    assert_eq!(states.len(), 1, "one state stored");

    // The next run's round 1 restores it, and generates exactly the same; its round 2
    // restores the same state from memory.
    let next = run();
    let warm = one_round(&next, 1);
    assert!(warm.0 > 100, "only {} prefix tokens restored", warm.0);
    assert_eq!(
        (&warm.1, warm.2),
        (&cold.1, cold.2),
        "round 1 restored from disk generates something else"
    );
    assert_eq!(
        one_round(&next, 2).0,
        warm.0,
        "round 2 restores from memory"
    );
    drop(next);

    // A corrupt state file (one byte flipped, same size) is never loaded: the prefix is
    // evaluated again, the output is the same, and a good state replaces the bad one.
    let mut bytes = std::fs::read(&states[0]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&states[0], &bytes).unwrap();
    let recomputed = one_round(&run(), 1);
    assert_eq!(recomputed.0, 0, "a corrupt state was trusted");
    assert_eq!((&recomputed.1, recomputed.2), (&cold.1, cold.2));
    assert_ne!(
        std::fs::read(&states[0]).unwrap(),
        bytes,
        "the bad state stays"
    );
    assert!(
        one_round(&run(), 1).0 > 100,
        "the rewritten state is not restored"
    );

    // Another context shape is another key: nothing restored from the stored state.
    let other = load(&InferenceSettings {
        batch_size: 32,
        ..settings.clone()
    })
    .with_disk_prefix_cache(PrefixStore::new(&dir, DEFAULT_LIMIT_BYTES));
    assert_eq!(
        one_round(&other, 1).0,
        0,
        "a state for another batch size was used"
    );
    assert_eq!(state_files(&dir).len(), 2);
}

#[test]
fn a_slow_prompt_says_its_progress_through_the_llama_child() {
    use ralph_tui::llm::Output;
    let _lock = exclusive();
    // Small batches make the report prompt (about 620 tokens) many decodes.
    let backend = load(&InferenceSettings {
        batch_size: 8,
        max_tokens: 1,
        ..greedy()
    })
    .with_prefix_cache(false);
    let tools = vec![report_spec()];
    let messages = report_messages(&backend, &tools);
    let mut child = backend.child(1).unwrap();
    let mut said = Vec::new();
    let mut text_before_progress_ended = false;
    let started = Instant::now();
    child
        .generate_streaming(
            Request::new(&messages, &tools),
            &mut |out| match out {
                Output::PromptProgress(p) => said.push((p.done, p.total)),
                Output::Text(_) => {
                    text_before_progress_ended |= said.last().is_some_and(|(d, t)| d < t)
                }
            },
            &CancellationToken::new(),
        )
        .unwrap();
    let took = started.elapsed();
    let total = child.last_prompt_tokens().len() as u32;
    // No rate known yet and many batches: said before the first one, and at the end.
    assert_eq!(said.first(), Some(&(0, total)), "{said:?}");
    assert_eq!(said.last(), Some(&(total, total)), "{said:?}");
    assert!(said.windows(2).all(|w| w[0].0 < w[1].0), "{said:?}");
    let most = 2 + took.as_millis() / 250;
    assert!(
        said.len() as u128 <= most,
        "{} reports in {took:?}",
        said.len()
    );
    assert!(!text_before_progress_ended);
}

#[test]
fn the_abort_callback_stops_a_batch_inside_the_decode() {
    let _lock = exclusive();
    let backend = load(&InferenceSettings {
        batch_size: 256,
        ..greedy()
    });
    let tokens = backend.tokenize(&"The keeper lit the lamp. ".repeat(60));
    let batch = &tokens[..200];

    // Already cancelled: the decode starts and the callback stops it at the first check.
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let mut child = backend.child(1).unwrap();
    assert!(child.decode_once(batch, &cancelled).unwrap(), "not aborted");
    assert_eq!(child.kv_tokens(), 0, "an aborted batch left tokens behind");

    // Not cancelled: the same batch decodes whole, in the same context.
    assert!(!child.decode_once(batch, &CancellationToken::new()).unwrap());
    assert_eq!(child.kv_tokens(), 200);
}

#[test]
fn cancel_during_one_big_prompt_batch_returns_without_finishing_it() {
    let _lock = exclusive();
    let backend = load(&InferenceSettings {
        batch_size: 2048,
        ..settings(3)
    });
    let long = "The lighthouse keeper counted the waves every night. ".repeat(120);
    let messages = vec![
        Message::new(Role::System, "You are a storyteller."),
        Message::new(Role::User, long),
    ];
    let mut child = backend.child(1).unwrap();
    let (stop, generated, latency) = cancel_when(&mut child, &messages, |_| {
        std::thread::sleep(Duration::from_millis(200));
    });
    assert_eq!(stop, StopReason::Cancelled);
    assert_eq!(generated, 0);
    // The fixed prefix (the system message) is evaluated as batches of its own; the rest of
    // the prompt is one batch. A cancel at any moment leaves the cache empty or holding the
    // prefix alone: an unaborted decode of the big batch would have put all of it in.
    let prefix = child.prefix().map_or(0, |p| p.tokens.len() as u32);
    assert!(
        [0, prefix].contains(&child.kv_tokens()),
        "{} tokens in the cache; the prefix is {prefix}",
        child.kv_tokens()
    );
    report_latency("cancel inside one prompt batch", latency);
}

/// The default model, Qwen2.5-Coder-1.5B (`make model` fetches it; `RALPH_CODER_MODEL` points
/// elsewhere), or the test fails saying how to get it.
fn coder_model_path() -> PathBuf {
    model_file(
        "RALPH_CODER_MODEL",
        |dirs| dirs.default_model(),
        "the default model (Qwen2.5-Coder-1.5B)",
    )
}

/// A format check on the default model, not a task check: Qwen2.5-Coder writes its calls as
/// ```json fences (or bare objects) whatever its template teaches, and the harness detects
/// the `qwen-coder` format, so every call it writes is executed, none lost as prose.
#[test]
fn the_default_coder_models_fenced_calls_are_executed() {
    let _lock = exclusive();
    let model = coder_model_path();
    let repo = TempRepo::new();
    repo.write("notes.txt", "The launch code is 4242.\n");
    repo.commit_all("notes");
    let scratch = tempfile::tempdir().unwrap();
    let run_dir = scratch.path().join("run");
    let out = run_model(
        &repo,
        &run_dir,
        &model,
        // Without the observation: with notes.txt in view the model answers from it with no
        // call, and this is about the calls it writes.
        &format!(
            "-n 1 --max-turns 3 --max-tokens 96 --ctx-size 2048 --temperature 0 --seed 1 --observe off --threads {}",
            cores()
        ),
        "Read notes.txt and report the launch code it holds.",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let evs = events(&out.stdout);
    let prompt: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("rounds/01/prompt.json")).unwrap())
            .unwrap();
    assert_eq!(prompt["chat_format"], "qwen-coder", "{stderr}");
    // What the model wrote: its own call shape, a fence or a bare object, not tags.
    let text: String = of_type(&evs, "token")
        .iter()
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(
        text.contains("```json") || text.contains("{\"name\""),
        "no call written: {text}"
    );
    // Every call it wrote was a call the engine ran (no malformed, no lost call), and each
    // has its result.
    let calls = of_type(&evs, "tool_call");
    let results = of_type(&evs, "tool_result");
    assert!(
        calls.iter().any(|c| c["name"] != "ralph_report"),
        "no workspace tool was called: {text}"
    );
    assert!(
        calls.iter().all(|c| c["name"] != "(malformed)"),
        "{calls:?}"
    );
    assert_eq!(calls.len(), results.len(), "{calls:?} {results:?}");
    // Turn by turn: a turn that wrote a call opening is followed by a call the engine ran.
    let mut turn_text = String::new();
    let mut turns: Vec<(String, usize)> = Vec::new();
    for e in &evs {
        match e["type"].as_str() {
            Some("token") => turn_text.push_str(e["text"].as_str().unwrap_or("")),
            Some("turn_finished") => turns.push((std::mem::take(&mut turn_text), 0)),
            Some("tool_call") => {
                if let Some(last) = turns.last_mut() {
                    last.1 += 1;
                }
            }
            _ => {}
        }
    }
    for (text, calls) in &turns {
        if text.contains("```json") || text.contains("{\"name\"") {
            assert!(*calls > 0, "a call was written and lost: {text}");
        }
        // qwen-coder takes one call a turn: generation stops at the first complete call.
        assert!(*calls <= 1, "{calls} calls in one turn: {text}");
    }
    assert!(
        [0, 3, 4, 5].contains(&code(&out)),
        "exit {}: {stderr}",
        code(&out)
    );
}
