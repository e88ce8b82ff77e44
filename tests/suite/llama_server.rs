//! Tests: the openai backend against a real llama.cpp `llama-server` on the default model.
//!
//! `scripts/build-llama-server.sh` builds the server once under `target/` (`make test` runs it
//! first; `RALPH_LLAMA_SERVER` points elsewhere). Each test starts its own server on a free
//! 127.0.0.1 port with `--jinja`, and they run one at a time under the real-model lock.
#![cfg(feature = "llama")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ralph_tui::engine::report;
use ralph_tui::llm::openai::wire::Sampling;
use ralph_tui::llm::openai::{OpenAiBackend, OpenAiConfig};
use ralph_tui::llm::{Backend, Request, StopReason};
use ralph_tui::protocol::message::{Message, Role};
use ralph_tui::protocol::tool::REPORT_TOOL;
use ralph_tui::tools::report_spec;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::common::{code, events, headless, last, of_type, TempRepo};
use super::llama::{exclusive, model_path};
use super::llama_server_process::Server;

const THREADS: usize = 2;

/// The chat template of Qwen2.5 (ChatML, like SmolLM2's, but it shows tools and reads
/// `<tool_call>` back), from the same llama.cpp tree the server was built from: how a person
/// serves a model whose own template knows no tools.
fn tool_template() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "target/llama-server/src/vendor/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja",
    );
    assert!(
        path.is_file(),
        "the llama-server tests need {}: run scripts/build-llama-server.sh (make test runs it)",
        path.display()
    );
    path
}

fn post(url: &str, body: &Value) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let text = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    })
}

fn start_server() -> Server {
    Server::start(&model_path(), THREADS, None)
}

/// A server on the default model, with `template` in place of the model's own.
fn start_server_with(template: &Path) -> Server {
    Server::start(&model_path(), THREADS, Some(template))
}

fn config(server: &Server, max_tokens: u32) -> OpenAiConfig {
    OpenAiConfig {
        url: server.url.clone(),
        model: None,
        api_key_env: "RALPH_TEST_UNSET_KEY".into(),
        request_timeout: Duration::from_secs(60),
        ctx_fallback: Some(1024),
        chat_format: None,
        sampling: Sampling {
            max_tokens,
            temperature: 0.0,
            top_p: 1.0,
            seed: 1,
        },
    }
}

fn story() -> Vec<Message> {
    vec![
        Message::new(Role::System, "You are a helpful assistant."),
        Message::new(
            Role::User,
            "Write a long story about a lighthouse keeper and the sea, with many details.",
        ),
    ]
}

/// One headless round through `server`: its events and run dir. Without the observation:
/// these rounds are about how calls travel, and with the repository in view the 135M model
/// reports at once instead of calling the tool the objective names.
fn headless_round(server: &Server, objective: &str) -> (Vec<Value>, tempfile::TempDir) {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let backend = format!("openai:{}", server.url);
    let out = headless(
        repo.path(),
        &run_dir,
        &[
            "--backend",
            &backend,
            "-n",
            "1",
            "--max-turns",
            "4",
            "--max-tokens",
            "120",
            "--temperature",
            "0",
            "--observe",
            "off",
            objective,
        ],
    )
    .output()
    .unwrap();
    let events = events(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!([0, 3, 4, 5].contains(&code(&out)), "{stderr}");
    let started = of_type(&events, "run_started");
    assert!(started[0]["device"].as_str().unwrap().contains("127.0.0.1"));
    assert!(started[0]["model"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(of_type(&events, "token").len() > 5, "tokens were streamed");
    let finished = of_type(&events, "round_finished");
    assert!(finished[0]["generated_tokens"].as_u64().unwrap() > 0);
    assert!(last(&events)["type"] == "run_finished");
    (events, tmp)
}

/// The tools the worker called, each with whether the engine ran it: every call has its
/// result (a report's is its acceptance or rejection).
fn calls_and_results(events: &[Value]) -> Vec<(String, bool)> {
    let calls = of_type(events, "tool_call");
    let results = of_type(events, "tool_result");
    assert_eq!(calls.len(), results.len(), "every call has its result");
    calls
        .iter()
        .zip(&results)
        .map(|(call, result)| {
            assert_eq!(call["name"], result["name"]);
            (
                call["name"].as_str().unwrap().to_string(),
                result["ok"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A headless round through `server` that must call a workspace tool; its `prompt.json`.
fn round_with_a_workspace_call(server: &Server, objective: &str, label: &str) -> Value {
    let (events, tmp) = headless_round(server, objective);
    let calls = calls_and_results(&events);
    eprintln!("calls through llama-server ({label}): {calls:?}");
    assert!(
        calls.iter().any(|(name, _)| name != "ralph_report"),
        "{label}: the worker called a workspace tool"
    );
    serde_json::from_slice(&std::fs::read(tmp.path().join("run/rounds/01/prompt.json")).unwrap())
        .unwrap()
}

const LIST_FIRST: &str = "First call the list_dir tool with path \".\" to list the files.";

#[test]
fn a_headless_round_calls_tools_through_llama_server_on_the_models_own_template() {
    let _lock = exclusive();
    // SmolLM2's template knows no tools: /props says so, the prompt spells them out in the
    // template's own format (generic), and every turn is call-only, as in-process.
    let server = start_server();
    let prompt = round_with_a_workspace_call(&server, LIST_FIRST, "own template");
    assert_eq!(prompt["chat_format"], "generic");
    let system = prompt["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Read a text file"),
        "the tools in full: {system}"
    );
}

#[test]
fn a_headless_round_calls_tools_through_a_template_that_shows_them() {
    let _lock = exclusive();
    // With a template that shows tools, they travel only in the native `tools` field and the
    // prompt names them. (The 135M model never opens a call on its own, through any
    // template: its calls come from the call-only turns, as the model's own template's do.)
    let server = start_server_with(&tool_template());
    let prompt = round_with_a_workspace_call(
        &server,
        "Run the command ls with the run_command tool.",
        "tool template",
    );
    assert_eq!(prompt["chat_format"], "hermes");
    let system = prompt["messages"][0]["content"].as_str().unwrap();
    assert!(
        !system.contains("Read a text file"),
        "named, not spelled out: {system}"
    );
}

#[test]
fn a_report_only_turn_gives_a_report_the_engine_accepts() {
    let _lock = exclusive();
    let server = start_server();
    let mut backend = OpenAiBackend::connect(config(&server, 300)).unwrap();
    assert_eq!(backend.info().ctx_size, 4096, "from /props");
    let format = backend.info().chat_format;
    let tools = vec![report_spec()];
    let messages = vec![
        Message::new(Role::System, "You are one round of a Ralph loop. Answer with the round's report as JSON."),
        Message::new(Role::User, "You listed the files and read README.md; it has one line, '# demo'. The greeting is not there yet. Report: status continue, a one-sentence summary, evidence [\"read README.md\"], one next step, empty blocker."),
    ];
    let mut child = backend.new_child(1).unwrap();
    let generation = child
        .generate(
            Request {
                messages: &messages,
                tools: &tools,
                report_only: true,
                max_tokens: None,
            },
            &mut |_| {},
            &CancellationToken::new(),
        )
        .unwrap();
    let parsed = ralph_tui::chat::by_name(&format)
        .unwrap()
        .parse(&generation.text);
    let arguments = parsed
        .calls
        .iter()
        .find_map(|c| match c {
            ralph_tui::chat::ParsedCall::Call { name, arguments } if name == REPORT_TOOL => {
                Some(arguments.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no report in {:?}", generation.text));
    // The server sampled inside the report's schema: every field there, with its type.
    for (field, is_list) in [
        ("status", false),
        ("summary", false),
        ("evidence", true),
        ("next_steps", true),
        ("blocker", false),
    ] {
        let ok = if is_list {
            arguments[field].is_array()
        } else {
            arguments[field].is_string()
        };
        assert!(ok, "{field} in {arguments}");
    }
    // The server sampled inside the report's rules as well (one schema branch per status),
    // so the engine's validation, which decides, accepts it.
    let verdict = report::validate(&arguments);
    eprintln!("report through llama-server: {arguments} -> {verdict:?}");
    assert!(verdict.is_ok(), "{arguments}: {verdict:?}");
}

#[test]
fn cancel_mid_generation_ends_within_a_second_and_the_server_stops() {
    let _lock = exclusive();
    let server = start_server();
    let mut backend = OpenAiBackend::connect(config(&server, 2000)).unwrap();
    let messages = story();
    let cancel = CancellationToken::new();
    let mut pieces = 0;
    let mut cancelled_at = None;
    let mut child = backend.new_child(1).unwrap();
    let generation = child
        .generate(
            Request {
                messages: &messages,
                tools: &[],
                report_only: false,
                max_tokens: None,
            },
            &mut |_| {
                pieces += 1;
                if pieces == 20 {
                    cancel.cancel();
                    cancelled_at = Some(Instant::now());
                }
            },
            &cancel,
        )
        .unwrap();
    let latency = cancelled_at.unwrap().elapsed();
    assert_eq!(generation.stop, StopReason::Cancelled);
    eprintln!("cancel latency through llama-server: {latency:?}");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    // The server notices the closed stream and frees its slot.
    let deadline = Instant::now() + Duration::from_secs(3);
    while server.busy() {
        assert!(
            Instant::now() < deadline,
            "the server was still generating 3 s after the cancel"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "slot idle {:?} after the cancel",
        cancelled_at.unwrap().elapsed()
    );
}

#[test]
fn usage_matches_the_servers_own_count() {
    let _lock = exclusive();
    let server = start_server();
    let mut backend = OpenAiBackend::connect(config(&server, 48)).unwrap();
    let messages = story();
    let model = backend.info().model;
    let mut pieces = 0u32;
    let mut child = backend.new_child(1).unwrap();
    let generation = child
        .generate(
            Request {
                messages: &messages,
                tools: &[],
                report_only: false,
                max_tokens: None,
            },
            &mut |_| pieces += 1,
            &CancellationToken::new(),
        )
        .unwrap();
    // The same request, not streamed: the server's own usage.
    let body = json!({
        "model": model, "messages": [
            {"role": "system", "content": messages[0].content},
            {"role": "user", "content": messages[1].content}],
        "max_tokens": 48, "temperature": 0.0, "top_p": 1.0, "seed": 1,
    });
    let answer = post(&format!("{}/chat/completions", server.url), &body);
    assert_eq!(
        u64::from(generation.prompt_tokens),
        answer["usage"]["prompt_tokens"].as_u64().unwrap()
    );
    assert_eq!(
        u64::from(generation.generated_tokens),
        answer["usage"]["completion_tokens"].as_u64().unwrap()
    );
    assert_eq!(generation.generated_tokens, 48);
    assert_eq!(generation.stop, StopReason::MaxTokens);
    assert!(
        pieces.abs_diff(generation.generated_tokens) <= 1,
        "{pieces} pieces"
    );
}
