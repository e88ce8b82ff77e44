//! The openai backend against a local test server: each server's recorded stream, the
//! request it is sent, setup problems (exit 2 before the run), round failures (one line,
//! last valid report kept), retries, cancel and stall within 1 s, and headless runs.

use std::time::{Duration, Instant};

use ralph_tui::chat::{self, ParsedCall};
use ralph_tui::llm::openai::wire::Sampling;
use ralph_tui::llm::openai::{OpenAiBackend, OpenAiConfig};
use ralph_tui::llm::{Backend, Generation, Request, StopReason};
use ralph_tui::protocol::message::{Message, Role};
use ralph_tui::protocol::tool::ToolSpec;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::common::*;
use super::openai_server::{fixture, FakeServer, Reply, Seen};

fn config(server: &FakeServer) -> OpenAiConfig {
    OpenAiConfig {
        url: server.url.clone(),
        model: None,
        api_key_env: "RALPH_TEST_NO_SUCH_KEY_VAR".into(),
        request_timeout: Duration::from_secs(5),
        ctx_fallback: Some(4096),
        chat_format: None,
        sampling: Sampling {
            max_tokens: 64,
            temperature: 0.0,
            top_p: 1.0,
            seed: 1,
        },
    }
}

fn messages() -> Vec<Message> {
    vec![
        Message::new(Role::System, "You are a worker."),
        Message::new(Role::User, "Read the README."),
    ]
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
}

/// One turn through a fresh child; returns the generation (or the error line) and what the
/// person was shown.
fn turn(
    backend: &mut OpenAiBackend,
    cancel: &CancellationToken,
) -> (Result<Generation, String>, String) {
    let messages = messages();
    let tools = tools();
    let mut shown = String::new();
    let mut child = backend.new_child(1).unwrap();
    let result = child
        .generate(
            Request {
                messages: &messages,
                tools: &tools,
                report_only: false,
                max_tokens: None,
            },
            &mut |piece| shown.push_str(piece),
            cancel,
        )
        .map_err(|e| e.to_string());
    (result, shown)
}

fn connect(server: &FakeServer) -> OpenAiBackend {
    OpenAiBackend::connect(config(server)).unwrap()
}

/// A wrap-up turn (report only) of a fresh child, its text unheard.
fn wrap_up(backend: &mut OpenAiBackend, messages: &[Message], tools: &[ToolSpec]) -> Generation {
    let mut child = backend.new_child(1).unwrap();
    child
        .generate(
            Request {
                messages,
                tools,
                report_only: true,
                max_tokens: None,
            },
            &mut |_| {},
            &CancellationToken::new(),
        )
        .unwrap()
}

fn names(text: &str) -> Vec<(String, Value)> {
    chat::by_name("hermes")
        .unwrap()
        .parse(text)
        .calls
        .into_iter()
        .map(|c| match c {
            ParsedCall::Call { name, arguments } => (name, arguments),
            ParsedCall::Malformed { raw, reason } => panic!("malformed {raw}: {reason}"),
        })
        .collect()
}

#[test]
fn every_servers_recorded_stream_gives_the_same_call_text_and_usage() {
    for (flavour, thinks) in [
        ("llama-server", false),
        ("vllm", true),
        ("sglang", true),
        ("ollama", true),
        ("lmstudio", false),
    ] {
        let server = FakeServer::start(&["m"]);
        server.push(Reply::sse(&fixture(&format!("{flavour}.sse"))));
        let mut backend = connect(&server);
        let (result, shown) = turn(&mut backend, &CancellationToken::new());
        let generation = result.unwrap_or_else(|e| panic!("{flavour}: {e}"));
        assert_eq!(
            names(&generation.text),
            vec![("read_file".to_string(), json!({"path": "README.md"}))],
            "{flavour}: {}",
            generation.text
        );
        assert!(generation.text.starts_with("I will read"), "{flavour}");
        assert_eq!(
            (generation.prompt_tokens, generation.generated_tokens),
            (312, 21),
            "{flavour}: usage comes from the stream"
        );
        assert_eq!(generation.stop, StopReason::EndOfTurn, "{flavour}");
        // Reasoning is shown as thinking text and never becomes part of the parsed turn.
        assert_eq!(shown.starts_with("<think>"), thinks, "{flavour}: {shown}");
        assert!(!generation.text.contains("<think>"), "{flavour}");
        assert!(
            shown.contains("<tool_call>"),
            "{flavour}: the call is shown too"
        );
    }
}

#[test]
fn vllm_reasoning_that_mentions_a_call_is_never_parsed_as_one() {
    let server = FakeServer::start(&["Qwen/Qwen3-8B"]);
    server.push(Reply::sse(&fixture("vllm.sse")));
    let mut backend = connect(&server);
    let (result, shown) = turn(&mut backend, &CancellationToken::new());
    let generation = result.unwrap();
    assert!(shown.contains("I could <tool_call>"), "{shown}");
    assert_eq!(names(&generation.text).len(), 1);
}

#[test]
fn the_request_carries_the_rounds_messages_tools_usage_option_and_the_key() {
    std::env::set_var("RALPH_TEST_KEY_A", "sk-test-secret");
    let server = FakeServer::start(&["first", "second"]);
    server.push(Reply::sse(&fixture("llama-server.sse")));
    let mut cfg = config(&server);
    cfg.api_key_env = "RALPH_TEST_KEY_A".into();
    let mut backend = OpenAiBackend::connect(cfg).unwrap();
    let info = backend.info();
    assert_eq!(
        info.model.as_deref(),
        Some("first"),
        "default: the first listed"
    );
    assert!(info.device.contains("127.0.0.1:"), "{}", info.device);
    assert!(!format!("{backend:?}{info:?}").contains("sk-test-secret"));
    turn(&mut backend, &CancellationToken::new()).0.unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer sk-test-secret")
    );
    let body = &seen[0].body;
    assert_eq!(body["model"], "first");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a worker."},
            {"role": "user", "content": "Read the README."},
        ]),
        "exactly the round's messages"
    );
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert!(body.get("response_format").is_none());
    assert!(body.get("grammar").is_none());
}

#[test]
fn a_report_only_turn_sends_the_report_schema_and_no_tools() {
    let server = FakeServer::start(&["m"]);
    let report = json!({"status": "continue", "summary": "s", "evidence": [], "next_steps": ["n"], "blocker": ""});
    let body = sse_text(&report.to_string());
    server.push(Reply::sse(&body));
    let mut backend = connect(&server);
    let messages = messages();
    let tools = tools();
    let generation = wrap_up(&mut backend, &messages, &tools);
    assert_eq!(
        names(&generation.text),
        vec![("ralph_report".to_string(), report)]
    );
    let sent = &server.seen()[0].body;
    assert!(sent.get("tools").is_none());
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(
        sent["response_format"]["json_schema"]["name"],
        "ralph_report"
    );
    // Not cut at --max-tokens (64 here): the context left, up to what the widest report
    // takes, and the schema's bounds are the full ones.
    assert_eq!(sent["max_tokens"], 3072);
    let summary =
        &sent["response_format"]["json_schema"]["schema"]["anyOf"][0]["properties"]["summary"];
    assert_eq!(summary["maxLength"], 400);
}

/// Where the context is short, a wrap-up asks for what is left and no more, and the report
/// schema asks for a report that fits it (shorter strings, fewer items); an ordinary turn
/// stops where the report's reserve and the turn margin stay free.
#[test]
fn a_short_context_bounds_the_report_schema_and_caps_every_turn() {
    use ralph_tui::protocol::report::{REPORT_RESERVE_TOKENS, TURN_MARGIN_TOKENS};
    // Not llama-server (no /props): the context is --ctx-size's 4,096.
    let server = FakeServer::start(&["m"]);
    let report = json!({"status": "continue", "summary": "s", "evidence": [], "next_steps": ["n"], "blocker": ""});
    for _ in 0..2 {
        server.push(Reply::sse(&sse_text(&report.to_string())));
    }
    let mut backend = connect(&server);
    // About 3,400 tokens of prompt at four bytes a token: 696 left of 4,096.
    let mut messages = messages();
    messages.push(Message::tool("read_file", "x".repeat(4 * 3_380)));
    let tools = tools();
    let mut child = backend.new_child(1).unwrap();
    let prompt = child
        .count_prompt_tokens(Request::new(&messages, &tools))
        .unwrap();
    // A wrap-up's request carries no tools: its prompt is the smaller.
    let report_prompt = child
        .count_prompt_tokens(Request {
            messages: &messages,
            tools: &tools,
            report_only: true,
            max_tokens: None,
        })
        .unwrap();
    let room = 4096 - report_prompt;
    assert!(room > REPORT_RESERVE_TOKENS && room < 1_000, "{room}");
    for report_only in [true, false] {
        child
            .generate(
                Request {
                    messages: &messages,
                    tools: &tools,
                    report_only,
                    max_tokens: None,
                },
                &mut |_| {},
                &CancellationToken::new(),
            )
            .unwrap();
    }
    let seen = server.seen();
    let wrap_up = &seen[0].body;
    assert!(wrap_up["max_tokens"].as_u64().unwrap() <= u64::from(room));
    let branch = &wrap_up["response_format"]["json_schema"]["schema"]["anyOf"][0]["properties"];
    let summary = branch["summary"]["maxLength"].as_u64().unwrap();
    let items = branch["evidence"]["maxItems"].as_u64().unwrap();
    let item = branch["evidence"]["items"]["maxLength"].as_u64().unwrap();
    let blocker = branch["blocker"]["maxLength"].as_u64().unwrap();
    assert!(summary < 400 && items < 5, "{branch}");
    // Every string at its bound, both lists full, and the JSON around them: within the room.
    let widest = summary + 2 * items * (item + 3) + blocker + 110;
    assert!(widest <= u64::from(room), "{widest} > {room}");
    // The ordinary turn: --max-tokens (64) is more than is left beside the reserve.
    let ordinary = seen[1].body["max_tokens"].as_u64().unwrap();
    assert!(
        u64::from(prompt) + ordinary + u64::from(REPORT_RESERVE_TOKENS + TURN_MARGIN_TOKENS)
            <= 4096
            || ordinary == 1,
        "{ordinary}"
    );
    assert!(ordinary < 64, "{ordinary}");
}

/// Where llama-server counts a prompt itself, the backend asks it rather than estimating: a
/// conversation denser than four bytes a token (here two) is counted as the server counts
/// it, so a wrap-up asks for no more than is really left. A server without the endpoints is
/// estimated as before.
#[test]
fn the_servers_own_prompt_count_is_used_where_it_gives_one() {
    let report = json!({"status": "continue", "summary": "s", "evidence": [], "next_steps": ["n"], "blocker": ""});
    let reply = sse_text(&report.to_string());
    let mut messages = messages();
    messages.push(Message::tool("read_file", "{\"k\": [1, 2]} ".repeat(400)));
    let tools = tools();
    let wrap_up = Request {
        messages: &messages,
        tools: &tools,
        report_only: true,
        max_tokens: None,
    };
    let counting = FakeServer::start(&["m"])
        .with_props_ctx(8192)
        .with_tokenizer(2);
    counting.push(Reply::sse(&reply));
    let mut backend = connect(&counting);
    let mut child = backend.new_child(1).unwrap();
    let counted = child.count_prompt_tokens(wrap_up).unwrap();
    let bytes: usize = messages.iter().map(|m| m.content.len()).sum();
    assert!(
        counted as usize >= bytes / 2,
        "{counted} tokens for {bytes} bytes"
    );
    child
        .generate(wrap_up, &mut |_| {}, &CancellationToken::new())
        .unwrap();
    let asked = counting.seen()[0].body["max_tokens"].as_u64().unwrap();
    assert!(asked <= u64::from(8192 - counted), "{asked}");
    let estimating = FakeServer::start(&["m"]).with_props_ctx(8192);
    let mut backend = connect(&estimating);
    let mut child = backend.new_child(1).unwrap();
    let estimated = child.count_prompt_tokens(wrap_up).unwrap();
    assert_eq!(estimated as usize, bytes.div_ceil(4));
}

/// llama-server samples a wrap-up under the report grammar itself (`grammar`, no
/// `response_format`): the report object alone, bounded so that its longest text, whitespace
/// included, fits what the wrap-up may generate.
#[test]
fn llama_server_samples_a_wrap_up_under_the_bounded_report_grammar() {
    let server = FakeServer::start(&["m"]).with_props_ctx(4096);
    let report = json!({"status": "continue", "summary": "s", "evidence": [], "next_steps": ["n"], "blocker": ""});
    server.push(Reply::sse(&sse_text(&report.to_string())));
    let mut backend = connect(&server);
    let mut messages = messages();
    messages.push(Message::tool("read_file", "x".repeat(4 * 3_300)));
    let tools = vec![ralph_tui::tools::report_spec()];
    let generation = wrap_up(&mut backend, &messages, &tools);
    assert_eq!(names(&generation.text)[0].0, "ralph_report");
    let sent = &server.seen()[0].body;
    assert!(sent.get("response_format").is_none() && sent.get("tools").is_none());
    let max_tokens = usize::try_from(sent["max_tokens"].as_u64().unwrap()).unwrap();
    assert!(max_tokens < 1_000, "{max_tokens}");
    let (grammar, bounds, longest) = chat::report_json_grammar_within(max_tokens);
    assert_eq!(sent["grammar"].as_str(), Some(grammar.as_str()));
    assert!(longest.unwrap() <= max_tokens, "{longest:?} > {max_tokens}");
    assert!(bounds.summary < 400, "{bounds:?}");
}

/// A server that does not say its context size, with no --ctx-size given, is refused before
/// the run: the report's reserve cannot be kept in a context of unknown size.
#[test]
fn a_server_of_unknown_context_size_is_refused_without_ctx_size() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start(&["m"]);
    let backend = format!("openai:{}", server.url);
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &["--backend", &backend, "Go"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--ctx-size") && stderr.contains("context size"),
        "{stderr}"
    );
    assert!(server.seen().is_empty(), "no turn was sent");
    let server = FakeServer::start(&["m"]);
    server.push(Reply::sse(&sse_calls(&[(
        "ralph_report",
        report_args("continue", "on a given context"),
    )])));
    let backend = format!("openai:{}", server.url);
    let out = headless(
        repo.path(),
        &tmp.path().join("run2"),
        &["--backend", &backend, "--ctx-size", "8192", "-n", "1", "Go"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 4, "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_context_size_is_discovered_from_each_server_kind() {
    let server = FakeServer::start(&["m"]).with_props_ctx(8192);
    assert_eq!(
        connect(&server).info().ctx_size,
        8192,
        "llama-server /props"
    );
    let server =
        FakeServer::with_models(json!({"data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 32768}]}));
    assert_eq!(
        connect(&server).info().ctx_size,
        32768,
        "vLLM max_model_len"
    );
    let server = FakeServer::start(&["qwen3:8b"]).with_ollama_ps("qwen3:8b", 16384);
    assert_eq!(connect(&server).info().ctx_size, 16384, "Ollama /api/ps");
    let server = FakeServer::start(&["m"]);
    assert_eq!(connect(&server).info().ctx_size, 4096, "else --ctx-size");
}

#[test]
fn setup_problems_are_one_line_each() {
    // Connection refused: a port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = FakeServer::start(&["m"]);
    let mut cfg = config(&server);
    cfg.url = format!("http://127.0.0.1:{port}/v1");
    let err = OpenAiBackend::connect(cfg).unwrap_err().to_string();
    assert!(err.contains("connection refused"), "{err}");

    let mut cfg = config(&server);
    cfg.url = "http://no-such-host.invalid:8080/v1".into();
    let err = OpenAiBackend::connect(cfg).unwrap_err().to_string();
    assert!(
        err.contains("no-such-host.invalid") && err.contains("DNS"),
        "{err}"
    );

    let mut cfg = config(&server);
    cfg.model = Some("missing".into());
    let err = OpenAiBackend::connect(cfg).unwrap_err().to_string();
    assert_eq!(err, "the server has no model 'missing'; it has: m");
}

#[test]
fn unauthorized_names_the_variable_never_the_key() {
    let server = FakeServer::start(&["m"]);
    let cfg = config(&server);
    let mut backend = OpenAiBackend::connect(cfg).unwrap();
    server.push(Reply::status(
        401,
        r#"{"error":{"message":"Invalid API Key"}}"#,
    ));
    let err = turn(&mut backend, &CancellationToken::new()).0.unwrap_err();
    assert!(
        err.contains("RALPH_TEST_NO_SUCH_KEY_VAR") && err.contains("401"),
        "{err}"
    );

    std::env::set_var("RALPH_TEST_KEY_B", "sk-wrong-key");
    let mut cfg = config(&server);
    cfg.api_key_env = "RALPH_TEST_KEY_B".into();
    let mut backend = OpenAiBackend::connect(cfg).unwrap();
    server.push(Reply::status(403, r#"{"error":"forbidden"}"#));
    let err = turn(&mut backend, &CancellationToken::new()).0.unwrap_err();
    assert!(
        err.contains("RALPH_TEST_KEY_B") && !err.contains("sk-wrong-key"),
        "{err}"
    );
}

#[test]
fn each_round_fault_is_one_clear_line() {
    let data = |v: Value| format!("data: {v}\n\n");
    let content = data(json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}));
    let cases: Vec<(Reply, &str)> = vec![
        (
            Reply::status(400, r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#),
            "the server rejected the request (HTTP 400): the request exceeds the available context size",
        ),
        (
            Reply::Sse { body: content.clone(), delay: Duration::ZERO },
            "the server's stream ended mid-turn",
        ),
        (
            Reply::sse(&format!("{content}data: {{not json\n\n")),
            "the server sent a malformed event",
        ),
        (
            Reply::sse(&format!("{}data: [DONE]\n\n", data(json!({"id": "x", "choices": []})))),
            "the server's response had no choices",
        ),
        (
            Reply::sse(&data(json!({"error": {"message": "out of memory"}}))),
            "the server reported an error mid-stream: out of memory",
        ),
    ];
    for (reply, expected) in cases {
        let server = FakeServer::start(&["m"]);
        let mut backend = connect(&server);
        server.push(reply);
        let err = turn(&mut backend, &CancellationToken::new()).0.unwrap_err();
        assert!(
            err.starts_with(expected),
            "{err:?} should start with {expected:?}"
        );
        assert!(!err.contains('\n'), "{err:?}");
    }
}

#[test]
fn a_404_on_the_model_lists_the_servers_models() {
    let server = FakeServer::start(&["m"]);
    let mut backend = connect(&server);
    // The model went away between setup and the round.
    server.set_models(&["other-a", "other-b"]);
    server.push(Reply::status(
        404,
        r#"{"error":{"message":"model 'm' not found"}}"#,
    ));
    let err = turn(&mut backend, &CancellationToken::new()).0.unwrap_err();
    assert_eq!(err, "the server has no model 'm'; it has: other-a, other-b");
    // A 404 for another reason gives the server's own line.
    server.set_models(&["m"]);
    server.push(Reply::status(
        404,
        r#"{"error":{"message":"no such route"}}"#,
    ));
    let err = turn(&mut backend, &CancellationToken::new()).0.unwrap_err();
    assert_eq!(
        err,
        "the server rejected the request (HTTP 404): no such route"
    );
}

#[test]
fn busy_servers_are_retried_with_backoff_then_given_up_on() {
    let server = FakeServer::start(&["m"]);
    let mut backend = connect(&server);
    server.push(Reply::Status {
        code: 429,
        body: r#"{"error":"slow down"}"#.into(),
        retry_after: Some(0),
    });
    server.push(Reply::status(503, r#"{"error":"loading model"}"#));
    server.push(Reply::sse(&fixture("llama-server.sse")));
    let generation = turn(&mut backend, &CancellationToken::new()).0.unwrap();
    assert_eq!(names(&generation.text).len(), 1);
    assert_eq!(server.seen().len(), 3, "two retries, then the answer");

    let server = FakeServer::start(&["m"]);
    let mut backend = connect(&server);
    for _ in 0..4 {
        server.push(Reply::Status {
            code: 502,
            body: r#"{"error":"bad gateway"}"#.into(),
            retry_after: Some(0),
        });
    }
    let err = turn(&mut backend, &CancellationToken::new()).0.unwrap_err();
    assert_eq!(
        err,
        "the server kept failing (HTTP 502) after 4 attempts: bad gateway"
    );
    assert_eq!(server.seen().len(), 4, "bounded");
}

const FIRST_PIECE: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Thinking\"}}]}\n\n";

#[test]
fn cancel_mid_generation_ends_the_turn_within_a_second_and_closes_the_stream() {
    let server = FakeServer::start(&["m"]);
    let mut backend = connect(&server);
    server.push(Reply::Endless {
        partial: FIRST_PIECE.into(),
        filler: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" more\"}}]}\n\n".into(),
        every: Duration::from_millis(50),
    });
    let cancel = CancellationToken::new();
    let messages = messages();
    let tools = tools();
    let mut child = backend.new_child(1).unwrap();
    let mut cancelled_at = None;
    let mut pieces = 0;
    let generation = child
        .generate(
            Request {
                messages: &messages,
                tools: &tools,
                report_only: false,
                max_tokens: None,
            },
            &mut |_| {
                pieces += 1;
                if pieces == 5 {
                    cancel.cancel();
                    cancelled_at = Some(Instant::now());
                }
            },
            &cancel,
        )
        .unwrap();
    let ended = Instant::now();
    let cancelled_at = cancelled_at.unwrap();
    assert_eq!(generation.stop, StopReason::Cancelled);
    assert!(
        generation.text.starts_with("Thinking more"),
        "{}",
        generation.text
    );
    let latency = ended - cancelled_at;
    println!("cancel latency through the test server: {latency:?}");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    // The server sees the client go at its next write.
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.disconnected().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(server.disconnected().is_some(), "the stream was closed");
}

#[test]
fn a_cancel_during_a_stall_and_a_stall_past_the_timeout_each_end_within_a_second() {
    let server = FakeServer::start(&["m"]);
    let mut backend = connect(&server);
    server.push(Reply::Stall {
        partial: FIRST_PIECE.into(),
    });
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            cancel.cancel();
            Instant::now()
        })
    };
    let (result, _) = turn(&mut backend, &cancel);
    let ended = Instant::now();
    let cancelled_at = canceller.join().unwrap();
    assert_eq!(result.unwrap().stop, StopReason::Cancelled);
    assert!(
        ended - cancelled_at < Duration::from_secs(1),
        "{:?}",
        ended - cancelled_at
    );

    let mut cfg = config(&server);
    cfg.request_timeout = Duration::from_secs(1);
    let mut backend = OpenAiBackend::connect(cfg).unwrap();
    server.push(Reply::Stall {
        partial: FIRST_PIECE.into(),
    });
    let started = Instant::now();
    let err = turn(&mut backend, &CancellationToken::new()).0.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err, "the server sent nothing for 1 s (--request-timeout)");
    assert!(
        took < Duration::from_secs(2),
        "the stall ends the turn within 1 s of the timeout: {took:?}"
    );
}

// ---- headless runs through the binary ----

/// One streamed text turn that ends with `stop` and reports no usage.
fn sse_text(text: &str) -> String {
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    )
}

pub(super) fn sse_turn(text: &str) -> String {
    format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 7}}),
    )
}

fn sse_calls(calls: &[(&str, Value)]) -> String {
    let mut body = String::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        body.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "id": format!("c{i}"), "type": "function",
                 "function": {"name": name, "arguments": args.to_string()}}]}}]})
        ));
    }
    body.push_str(&format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 9}}),
    ));
    body
}

fn report_args(status: &str, summary: &str) -> Value {
    let next_step = format!("keep going after: {summary}");
    let (evidence, next): (Vec<&str>, Vec<&str>) = if status == "complete" {
        (vec!["checked the files"], vec![])
    } else {
        (vec![], vec![next_step.as_str()])
    };
    json!({"status": status, "summary": summary, "evidence": evidence, "next_steps": next, "blocker": ""})
}

#[test]
fn a_headless_run_completes_on_native_calls_and_never_writes_the_key() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let server = FakeServer::start(&["served-model"]).with_props_ctx(8192);
    // Round 1: a native tool call, then text-fallback report; round 2: a native report.
    server.push(Reply::sse(&sse_calls(&[(
        "read_file",
        json!({"path": "README.md"}),
    )])));
    server.push(Reply::sse(&sse_turn(&continue_report("read the readme"))));
    server.push(Reply::sse(&sse_calls(&[
        ("list_dir", json!({"path": "."})),
        ("ralph_report", report_args("complete", "done")),
    ])));
    let backend = format!("openai:{}", server.url);
    let out = headless(
        repo.path(),
        &run_dir,
        &["--backend", &backend, "-n", "3", "Read it"],
    )
    .env("RALPH_TEST_KEY_C", "sk-never-written")
    .args(["--api-key-env", "RALPH_TEST_KEY_C"])
    .output()
    .unwrap();
    let events = events(&out.stdout);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let started = of_type(&events, "run_started");
    assert_eq!(started[0]["model"], "served-model");
    assert!(started[0]["device"].as_str().unwrap().contains("127.0.0.1"));
    let calls: Vec<&str> = of_type(&events, "tool_call")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        ["read_file", "ralph_report", "list_dir", "ralph_report"]
    );
    assert!(
        !of_type(&events, "token").is_empty(),
        "tokens were streamed"
    );
    let finished = of_type(&events, "round_finished");
    assert_eq!(
        finished[0]["generated_tokens"], 16,
        "usage from the stream: 9 + 7"
    );
    assert_eq!(last(&events)["status"], "complete");
    // Each request was a fresh conversation: round 2 starts again from its own prompt.
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert_eq!(
        seen[2].body["messages"].as_array().map(Vec::len),
        Some(2),
        "{:?}",
        seen[2].body
    );
    assert!(seen
        .iter()
        .all(|s| s.authorization.as_deref() == Some("Bearer sk-never-written")));
    for entry in walk(&run_dir) {
        let text = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&text).contains("sk-never-written"),
            "{} holds the key",
            entry.display()
        );
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-never-written"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("sk-never-written"));
}

/// A call-only turn's content: one `{tool: arguments}` object, as a server sampling inside
/// the call schema sends it.
fn sse_json_call(name: &str, arguments: Value) -> String {
    sse_turn(&json!({ name: arguments }).to_string())
}

/// A one-round headless run on `server`, in a fresh repository; its output and run dir.
fn one_round_on(server: &FakeServer) -> (std::process::Output, tempfile::TempDir) {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let backend = format!("openai:{}", server.url);
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &["--backend", &backend, "-n", "1", "Read it"],
    )
    .output()
    .unwrap();
    (out, tmp)
}

fn system_prompt(seen: &Seen) -> String {
    seen.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn two_turns_that_called_nothing_are_followed_by_a_call_only_turn_whose_call_runs() {
    let server = FakeServer::start(&["m"]).with_props_ctx(8192);
    server.push(Reply::sse(&sse_turn("Let me think about the files first.")));
    server.push(Reply::sse(&sse_turn("I am still thinking.")));
    server.push(Reply::sse(&sse_json_call(
        "read_file",
        json!({"path": "README.md"}),
    )));
    server.push(Reply::sse(&sse_calls(&[(
        "ralph_report",
        report_args("complete", "read it"),
    )])));
    let (out, _tmp) = one_round_on(&server);
    let events = events(&out.stdout);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let calls: Vec<&str> = of_type(&events, "tool_call")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["read_file", "ralph_report"]);
    let results = of_type(&events, "tool_result");
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    let seen = server.seen();
    assert_eq!(seen.len(), 4);
    // An open turn; after it called nothing, a nudge and a second open turn; after that one
    // also called nothing, the call-only turn (no tools, one schema branch per tool); then
    // open again once a call was made.
    for open in [&seen[0], &seen[1]] {
        assert!(open.body.get("tools").is_some() && open.body.get("response_format").is_none());
    }
    let nudge = seen[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(nudge["role"], "user");
    assert!(nudge["content"]
        .as_str()
        .unwrap()
        .contains("You did not call a tool"));
    let seen = &seen[1..];
    assert!(seen[1].body.get("tools").is_none());
    let branches = seen[1].body["response_format"]["json_schema"]["schema"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["required"][0].as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    assert!(
        branches.contains(&"read_file".to_string())
            && branches.contains(&"ralph_report".to_string()),
        "{branches:?}"
    );
    assert!(seen[2].body.get("tools").is_some() && seen[2].body.get("response_format").is_none());
    // The call-only turn's call travels back to the server as a native call, answered.
    let messages = seen[2].body["messages"].as_array().unwrap();
    let called = messages
        .iter()
        .find(|m| m.get("tool_calls").is_some())
        .expect("a native call in the history");
    assert_eq!(called["tool_calls"][0]["function"]["name"], "read_file");
    // The server shows the tools (its template does): the prompt names them, once.
    let system = system_prompt(&seen[0]);
    assert!(
        system.contains("Your tools come with this conversation"),
        "{system}"
    );
    assert!(!system.contains("<tools>"), "{system}");
}

/// The prompt estimate keeps the server's counts for requests with and without the native
/// tools apart: a template's tool block makes them differ, and a call-only turn (no tools)
/// measured by an open turn's count would be over-counted by the whole block.
#[test]
fn the_prompt_estimate_is_calibrated_apart_for_turns_with_and_without_tools() {
    let server = FakeServer::start(&["m"]).with_props_ctx(8192);
    let talk = format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "Thinking it over."}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 2000, "completion_tokens": 7}}),
    );
    server.push(Reply::sse(&talk));
    let mut backend = connect(&server);
    let tools = tools();
    let mut messages = messages();
    let bytes: usize = messages.iter().map(|m| m.content.len()).sum();
    let mut child = backend.new_child(1).unwrap();
    let before = child
        .count_prompt_tokens(Request::new(&messages, &tools))
        .unwrap();
    let tools_json = serde_json::to_string(&tools).unwrap().len();
    assert_eq!(
        before as usize,
        (bytes + tools_json).div_ceil(4),
        "before any count: the messages and the tools as the template shows them"
    );
    let generation = child
        .generate(
            Request::new(&messages, &tools),
            &mut |_| {},
            &CancellationToken::new(),
        )
        .unwrap();
    messages.push(Message::new(Role::Assistant, generation.text));
    messages.push(Message::new(Role::User, "Call a tool."));
    messages.push(Message::new(Role::Assistant, "Still thinking."));
    messages.push(Message::new(Role::User, "Call a tool."));
    // After two turns that called nothing the next is call-only (no tools): the open turn's
    // 2,000 do not apply to it.
    let call_only = child
        .count_prompt_tokens(Request::new(&messages, &tools))
        .unwrap();
    let bytes: usize = messages.iter().map(|m| m.content.len()).sum();
    assert_eq!(call_only as usize, bytes.div_ceil(4));
    // After a call the turn is open again and starts from the server's own count.
    messages.push(Message::new(
        Role::Assistant,
        chat::by_name("hermes")
            .unwrap()
            .render_call("read_file", &json!({"path": "a"})),
    ));
    messages.push(Message::tool("read_file", "contents"));
    let open = child
        .count_prompt_tokens(Request::new(&messages, &tools))
        .unwrap();
    assert!(open >= 2007, "{open}");
}

#[test]
fn a_template_that_cannot_show_tools_gets_them_in_the_prompt_in_its_own_format() {
    // llama-server's /props for a model whose template knows no tools (SmolLM2's).
    let template = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
    let props = json!({
        "default_generation_settings": {"n_ctx": 8192},
        "chat_template": template,
        "chat_template_caps": {"supports_tools": false, "supports_tool_calls": false},
    });
    let server = FakeServer::start(&["m"]).with_props(props.clone());
    let info = connect(&server).info();
    assert_eq!(
        (info.chat_format.as_str(), info.native_tools),
        ("generic", false)
    );
    // The same template, but the server says it shows tools: they go natively.
    let mut showing = props.clone();
    showing["chat_template_caps"]["supports_tools"] = json!(true);
    let info = connect(&FakeServer::start(&["m"]).with_props(showing)).info();
    assert!(info.native_tools);
    // An explicit --chat-format wins over the template.
    let mut config = config(&server);
    config.chat_format = Some("llama3".into());
    assert_eq!(
        OpenAiBackend::connect(config).unwrap().info().chat_format,
        "llama3"
    );

    server.push(Reply::sse(&sse_json_call("list_dir", json!({"path": "."}))));
    server.push(Reply::sse(&sse_json_call(
        "ralph_report",
        report_args("complete", "nothing to do"),
    )));
    let (out, tmp) = one_round_on(&server);
    let run_dir = tmp.path().join("run");
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let seen = server.seen();
    // generic has no call markup to trigger on: every turn is call-only, as in-process.
    assert!(seen[0].body.get("response_format").is_some());
    let system = system_prompt(&seen[0]);
    assert!(
        system.contains("read_file") && system.contains("Read a text file"),
        "the full instructions: {system}"
    );
    let prompt: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("rounds/01/prompt.json")).unwrap())
            .unwrap();
    assert_eq!(prompt["chat_format"], "generic");
    assert_eq!(
        prompt["messages"][0]["content"].as_str(),
        Some(system.as_str()),
        "prompt.json records what was sent"
    );
}

#[test]
fn a_server_failure_mid_run_fails_the_round_and_keeps_the_last_valid_report() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let server = FakeServer::start(&["m"]).with_props_ctx(8192);
    server.push(Reply::sse(&sse_calls(&[(
        "ralph_report",
        report_args("continue", "half way"),
    )])));
    server.push(Reply::status(400, r#"{"error":{"message":"bad things"}}"#));
    let backend = format!("openai:{}", server.url);
    let out = headless(
        repo.path(),
        &run_dir,
        &["--backend", &backend, "-n", "3", "Go"],
    )
    .output()
    .unwrap();
    let events = events(&out.stdout);
    assert_eq!(code(&out), 5, "{}", String::from_utf8_lossy(&out.stderr));
    let end = last(&events);
    assert_eq!(end["status"], "round-failed");
    assert_eq!(end["last_valid_report"]["summary"], "half way");
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("the server rejected the request (HTTP 400): bad things"),
        "{end}"
    );
}

#[test]
fn an_unreachable_server_or_unknown_model_exits_2_before_the_run() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let backend = format!("openai:http://127.0.0.1:{port}/v1");
    let run_dir = tmp.path().join("run1");
    let out = headless(repo.path(), &run_dir, &["--backend", &backend, "Go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("connection refused"), "{stderr}");
    assert!(!run_dir.exists(), "nothing written before the run");

    let server = FakeServer::start(&["a", "b"]);
    let backend = format!("openai:{}", server.url);
    let run_dir = tmp.path().join("run2");
    let out = headless(
        repo.path(),
        &run_dir,
        &["--backend", &backend, "-m", "c", "Go"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the server has no model 'c'; it has: a, b"),
        "{stderr}"
    );
}

#[test]
fn the_backend_can_be_set_in_config_toml() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let server = FakeServer::start(&["m"]);
    server.push(Reply::sse(&sse_calls(&[
        ("list_dir", json!({"path": "."})),
        ("ralph_report", report_args("complete", "done")),
    ])));
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "backend = \"openai:{}\"\nrequest_timeout = 30\napi_key_env = \"RALPH_TEST_UNSET\"\nctx_size = 8192\n",
            server.url
        ),
    )
    .unwrap();
    let out = headless(
        repo.path(),
        &run_dir,
        &["--config", config.to_str().unwrap(), "Go"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.seen().len(), 1);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn the_evals_run_on_a_model_server_named_after_the_double_dash() {
    use ralph_tui::eval::{self, Arm, EvalOptions};
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    super::eval::task(&tasks, "a-server", super::eval::VERIFY_DONE_FILE, vec![]);
    let server = FakeServer::start(&["served"]).with_props_ctx(8192);
    server.push(Reply::sse(&sse_calls(&[(
        "write_file",
        json!({"path": "done.txt", "content": "ok\n"}),
    )])));
    server.push(Reply::sse(&sse_calls(&[(
        "ralph_report",
        report_args("complete", "wrote done.txt"),
    )])));
    let mut options = EvalOptions::new(tasks, std::path::PathBuf::from(BIN));
    options.rounds = 1;
    options.arms = vec![Arm::Ralph];
    let backend = format!("openai:{}", server.url);
    options.extra_args = vec!["--backend".into(), backend, "-m".into(), "served".into()];
    let results = eval::run(&options, &CancellationToken::new(), &mut |_| {}).unwrap();
    assert_eq!(results.backend, "openai");
    assert_eq!(results.runs.len(), 1);
    assert_eq!(results.runs[0].status, "complete", "{:?}", results.runs[0]);
    assert_eq!(server.seen().len(), 2);
}
