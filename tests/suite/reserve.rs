//! The report reserve as a promise, driven to the edge of the context in-process.
//!
//! `Edge` stands in for a model with a hard context window: it counts a prompt as its bytes
//! at four a token plus a few tokens of markup a message, stops an ordinary turn at the
//! backends' cap (`report::turn_cap`), and writes every wrap-up report at the widest the
//! wrap-up grammar allows for the room left (`chat::report_grammar_within`), counted at the
//! grammar's worst case of one token a byte. A report that did not fit would be cut with
//! `context_full`, and the round would fail. Each case checks that `wrap_up` came while at
//! least the reserve was left and that the round handed off a valid report; a property test
//! does the same over random turn and result sizes.

use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use ralph_tui::chat::{self, ChatFormat};
use ralph_tui::engine::runlog::RunLog;
use ralph_tui::engine::{Engine, RunConfig, Toolbox};
use ralph_tui::llm::{
    Backend, BackendError, BackendInfo, Child, Generation, Output, Request, StopReason,
};
use ralph_tui::protocol::event::RunStatus;
use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
use ralph_tui::protocol::report::{turn_cap, ReportBounds, REPORT_RESERVE_TOKENS};
use ralph_tui::protocol::tool::{ToolSpec, REPORT_TOOL};
use ralph_tui::tools::approval::DenyAll;
use ralph_tui::tools::{Registry, ToolPolicy};
use ralph_tui::workspace::Workspace;

use super::common::*;

/// Tokens of markup the stand-in counts for each message (the template's role tags).
const MESSAGE_MARKUP: u32 = 4;

/// A model with a hard context window (see the module note).
struct Edge {
    ctx: u32,
    max_tokens: u32,
    /// The ordinary turns of each round, in order; a round that runs out thinks aloud.
    turns: Vec<String>,
    format: Box<dyn ChatFormat>,
    report_tool: Vec<ToolSpec>,
}

impl Edge {
    fn new(ctx: u32, max_tokens: u32, turns: Vec<String>) -> Self {
        Self {
            ctx,
            max_tokens,
            turns,
            format: chat::by_name("hermes").unwrap(),
            report_tool: Registry::standard()
                .specs()
                .into_iter()
                .filter(|t| t.name == REPORT_TOOL)
                .collect(),
        }
    }
}

struct EdgeChild<'a> {
    edge: &'a Edge,
    next: usize,
}

impl Backend for Edge {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: "edge".into(),
            model: None,
            device: "test".into(),
            ctx_size: self.ctx,
            max_tokens: self.max_tokens,
            chat_format: "hermes".into(),
            native_tools: false,
        }
    }

    fn new_child(&mut self, _round: u32) -> Result<Box<dyn Child + '_>, BackendError> {
        Ok(Box::new(EdgeChild {
            edge: self,
            next: 0,
        }))
    }
}

fn tokens_of(text: &str) -> u32 {
    u32::try_from(text.len().div_ceil(4)).unwrap()
}

/// The widest report the bounds allow: a blocked report with every string and list full.
fn widest_report(bounds: ReportBounds) -> Value {
    let items = |c: &str| vec![c.repeat(bounds.item); bounds.items];
    json!({
        "status": "blocked",
        "summary": "s".repeat(bounds.summary),
        "evidence": items("e"),
        "next_steps": items("n"),
        "blocker": "b".repeat(bounds.blocker),
    })
}

impl Child for EdgeChild<'_> {
    fn count_prompt_tokens(&mut self, request: Request<'_>) -> Result<u32, BackendError> {
        Ok(request
            .messages
            .iter()
            .map(|m| tokens_of(&m.content) + MESSAGE_MARKUP)
            .sum::<u32>()
            + MESSAGE_MARKUP)
    }

    fn generate_streaming(
        &mut self,
        request: Request<'_>,
        on_output: &mut dyn FnMut(Output<'_>),
        _cancel: &CancellationToken,
    ) -> Result<Generation, BackendError> {
        let on_text = &mut |piece: &str| on_output(Output::Text(piece));
        let edge = self.edge;
        let prompt = self.count_prompt_tokens(request)?;
        let room = edge.ctx.saturating_sub(prompt);
        let ended = |text: String, generated, stop| Generation {
            text,
            prompt_tokens: prompt,
            generated_tokens: generated,
            stop,
        };
        if room == 0 {
            return Ok(ended(String::new(), 0, StopReason::ContextFull));
        }
        if request.report_only {
            // Whatever was cut to make room, the wrap-up's instruction is still there.
            assert!(
                request
                    .messages
                    .iter()
                    .any(|m| m.content.contains("file your report now")),
                "the wrap-up's instruction was cut"
            );
            let (_, bounds, _) = chat::report_grammar_within(
                edge.format.as_ref(),
                &edge.report_tool,
                usize::try_from(room).unwrap(),
            )
            .unwrap();
            let text = edge.format.render_call(REPORT_TOOL, &widest_report(bounds));
            // The grammar's worst case: one token a byte.
            let generated = u32::try_from(text.len()).unwrap();
            if generated > room {
                let cut = text[..usize::try_from(room).unwrap()].to_string();
                on_text(&cut);
                return Ok(ended(cut, room, StopReason::ContextFull));
            }
            on_text(&text);
            return Ok(ended(text, generated, StopReason::EndOfTurn));
        }
        let text = edge
            .turns
            .get(self.next)
            .cloned()
            .unwrap_or_else(|| "Thinking it over.".into());
        self.next += 1;
        let cap = turn_cap(edge.ctx, prompt, edge.max_tokens);
        if tokens_of(&text) > cap {
            let mut end = usize::try_from(cap).unwrap() * 4;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let cut = text[..end].to_string();
            on_text(&cut);
            return Ok(ended(cut, cap, StopReason::MaxTokens));
        }
        on_text(&text);
        Ok(ended(text.clone(), tokens_of(&text), StopReason::EndOfTurn))
    }
}

/// One in-process run's outcome and events.
struct EdgeRun {
    status: RunStatus,
    events: Vec<Value>,
}

fn edge_config(max_turns: u32) -> RunConfig {
    let mut config = super::engine_inproc::config(1);
    config.max_turns = max_turns;
    config.run_info.settings.options.max_turns = Some(max_turns);
    config
}

/// Runs one round of `edge` in `repo`, at most `max_turns` turns.
fn run_edge(repo: &TempRepo, mut edge: Edge, max_turns: u32) -> EdgeRun {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Registry::standard();
    let tools = Toolbox {
        registry: &registry,
        policy: ToolPolicy::new(SandboxMode::Off, ApprovalPolicy::Auto, false),
        approver: Arc::new(DenyAll),
    };
    let format = chat::by_name("hermes").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let summary = Engine::new(
        edge_config(max_turns),
        &mut edge,
        format.as_ref(),
        tools,
        Workspace::open(repo.path()).unwrap(),
        RunLog::create(&tmp.path().join("run")).unwrap(),
        Box::new(move |stamped| {
            let value: Value = serde_json::from_str(&stamped.to_line()).unwrap();
            sink.lock().unwrap().push(value);
        }),
    )
    .run();
    let events = seen.lock().unwrap().clone();
    EdgeRun {
        status: summary.status,
        events,
    }
}

/// The promise, checked on a run's events: the round wrapped up with at least the reserve
/// left for the wrap-up turn (the `context_counted` right after `wrap_up`), and ended with an
/// accepted report. Returns the context the wrap-up turn had left.
#[track_caller]
fn assert_handed_off_within_the_reserve(run: &EdgeRun, ctx: u32) -> u32 {
    let events = &run.events;
    assert_eq!(run.status, RunStatus::Blocked, "{:#?}", last(events));
    let wrap_up = events
        .iter()
        .position(|e| e["type"] == "wrap_up")
        .unwrap_or_else(|| panic!("no wrap_up in {events:#?}"));
    let counted = events[wrap_up..]
        .iter()
        .find(|e| e["type"] == "context_counted")
        .unwrap()["tokens"]
        .as_u64()
        .unwrap();
    let left = u64::from(ctx) - counted;
    assert!(
        left >= u64::from(REPORT_RESERVE_TOKENS),
        "the wrap-up turn had {left} tokens left"
    );
    assert_eq!(of_type(events, "report_accepted").len(), 1);
    assert!(of_type(events, "round_finished")
        .iter()
        .all(|r| r["error"].is_null()));
    u32::try_from(left).unwrap()
}

/// Text of about `tokens` tokens as the stand-in counts them.
fn prose(tokens: usize) -> String {
    "I am weighing it. ".repeat(tokens * 4 / 18 + 1)
}

#[test]
fn turns_that_each_nearly_fill_the_room_still_leave_the_wrap_up_its_reserve() {
    let repo = TempRepo::new();
    let ctx = 6_000;
    let max_tokens = 700;
    // Each turn writes almost its whole cap, then a call (a different one each time).
    let turns = (0..24)
        .map(|i| {
            format!(
                "{}{}",
                prose(max_tokens as usize - 40),
                call("search", json!({"pattern": format!("needle{i}")}))
            )
        })
        .collect();
    let run = run_edge(&repo, Edge::new(ctx, max_tokens, turns), 24);
    let left = assert_handed_off_within_the_reserve(&run, ctx);
    let wrap_up = of_type(&run.events, "wrap_up")[0];
    assert_eq!(wrap_up["reason"], "context");
    // The wrap-up came before the turn that would not have fitted, not after it.
    assert!(left < max_tokens + REPORT_RESERVE_TOKENS + 300, "{left}");
}

#[test]
fn a_huge_tool_result_is_cut_and_the_wrap_up_keeps_its_reserve() {
    let repo = TempRepo::new();
    let line = "0123456789abcdef".repeat(6);
    repo.write("big.txt", &format!("{line}\n").repeat(5_000));
    let ctx = 5_000;
    let turns = vec![
        call("read_file", json!({"path": "big.txt"})),
        call("read_file", json!({"path": "big.txt", "offset": 2000})),
    ];
    let run = run_edge(&repo, Edge::new(ctx, 512, turns), 24);
    assert_handed_off_within_the_reserve(&run, ctx);
    let result = of_type(&run.events, "tool_result")[0]["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("cut to fit the context window"), "{result}");
}

#[test]
fn a_long_malformed_call_echoed_back_cannot_spend_the_reserve() {
    let repo = TempRepo::new();
    let ctx = 4_500;
    // A call that never closes its JSON, as long as the turn may be: its echo repeats it.
    let malformed = format!(
        "<tool_call>{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"a\", \"content\": \"{}",
        "x".repeat(20_000)
    );
    let turns = vec![
        prose(200),
        malformed.clone(),
        malformed,
        call("list_dir", json!({"path": "."})),
    ];
    let run = run_edge(&repo, Edge::new(ctx, 1_024, turns), 24);
    assert_handed_off_within_the_reserve(&run, ctx);
    assert!(of_type(&run.events, "tool_call")
        .iter()
        .any(|c| c["name"] == "(malformed)"));
}

#[test]
fn a_wrap_up_at_the_last_turn_with_the_context_nearly_full_still_has_its_reserve() {
    let repo = TempRepo::new();
    let line = "fn main() { println!(\"{}\", 1 + 1); }\n".repeat(40);
    repo.write("code.rs", &line.repeat(60));
    let ctx = 4_096;
    // A read, a long malformed call, a turn with no call: the round's last turn comes while
    // the messages since the last turn already press on the reserve.
    let turns = vec![
        call("read_file", json!({"path": "code.rs"})),
        format!("<tool_call>{{\"name\": {}", "\"".repeat(1_200)),
        prose(300),
    ];
    let run = run_edge(&repo, Edge::new(ctx, 384, turns), 4);
    assert_handed_off_within_the_reserve(&run, ctx);
}

#[test]
fn many_results_of_one_turn_that_press_on_the_reserve_are_cut_before_the_wrap_up() {
    let repo = TempRepo::new();
    let line = "0123456789abcdef".repeat(6);
    repo.write("big.txt", &format!("{line}\n").repeat(5_000));
    let ctx = 5_000;
    // Sixteen reads in one turn: each result is cut to what is left, the later ones to a
    // note alone, and the notes together outgrow the turn margin.
    let reads: String = (0..16)
        .map(|i| {
            call(
                "read_file",
                json!({"path": "big.txt", "offset": 1 + 300 * i}),
            )
        })
        .collect();
    let run = run_edge(&repo, Edge::new(ctx, 512, vec![reads]), 24);
    assert_handed_off_within_the_reserve(&run, ctx);
    let warnings = of_type(&run.events, "warning");
    assert!(
        warnings
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("report's reserve")),
        "{warnings:#?}"
    );
}

/// The held-out failure's sequence through the binary and the script backend (4 bytes a
/// token, a 4,096-token window): a turn that would run past the room (a call left open, cut
/// at the turn's cap: 8,000 bytes in 1,000 pieces, so the turn may start), its malformed
/// echo, then the wrap-up, which still has its reserve, and the report is accepted.
#[test]
fn through_the_binary_a_cut_malformed_turn_and_its_echo_still_leave_the_reserve() {
    let repo = TempRepo::new();
    let ctx = 4_096;
    let open_call = format!(
        "<tool_call>{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"a.py\", \"content\": \"{}",
        "x".repeat(8_000)
    );
    let run = run_script_with(
        &repo,
        vec![turns(&[
            open_call,
            continue_report("handed off at the edge"),
        ])],
        json!({"ctx_size": ctx}),
        &["-n", "1", "objective"],
    );
    assert_eq!(
        code(&run.out),
        4,
        "{}\n{:#?}",
        String::from_utf8_lossy(&run.out.stderr),
        run.events
            .iter()
            .filter(|e| e["type"] != "token")
            .collect::<Vec<_>>()
    );
    let events = &run.events;
    let cut = of_type(events, "turn_finished")[0];
    assert!(
        cut["context_tokens"].as_u64().unwrap() <= u64::from(ctx - REPORT_RESERVE_TOKENS),
        "{cut}"
    );
    assert_eq!(of_type(events, "tool_call")[0]["name"], "(malformed)");
    let wrap_up = events.iter().position(|e| e["type"] == "wrap_up").unwrap();
    assert_eq!(events[wrap_up]["reason"], "context");
    let counted = events[wrap_up..]
        .iter()
        .find(|e| e["type"] == "context_counted")
        .unwrap()["tokens"]
        .as_u64()
        .unwrap();
    assert!(
        u64::from(ctx) - counted >= u64::from(REPORT_RESERVE_TOKENS),
        "{counted}"
    );
    assert_eq!(
        last(events)["last_valid_report"]["summary"],
        "handed off at the edge"
    );
}

/// A scripted wrap-up turn that is no report and would run past the context is cut where
/// the context ends; the next wrap-up turn gets its reserve back (the cut turn is left out
/// behind a note, with a warning) and its report is accepted.
#[test]
fn through_the_binary_a_wrap_up_turn_that_fills_the_context_is_left_out_for_the_next() {
    let repo = TempRepo::new();
    let flood = format!(
        "<tool_call>{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"a.py\", \"content\": \"{}",
        "print(1)\\n".repeat(2_000)
    );
    let run = run_script_with(
        &repo,
        vec![turns(&[flood, continue_report("reported after all")])],
        json!({"ctx_size": 4_096}),
        &["-n", "1", "objective"],
    );
    assert_eq!(
        code(&run.out),
        4,
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let warnings = of_type(&run.events, "warning");
    assert!(
        warnings
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("left out")),
        "{warnings:#?}"
    );
    assert_eq!(
        last(&run.events)["last_valid_report"]["summary"],
        "reported after all"
    );
}

/// One ordinary turn of a random round.
#[derive(Debug, Clone)]
enum TurnKind {
    /// Prose of about this many tokens, no call.
    Think(usize),
    /// Prose, then a call whose result is this many lines of the big file.
    Read(usize, usize),
    /// A call left open after this many bytes.
    Malformed(usize),
    /// Prose, then a command whose output is this many bytes.
    Command(usize, usize),
    /// This many reads in one turn.
    Reads(usize),
}

impl TurnKind {
    fn text(&self, index: usize) -> String {
        match self {
            Self::Think(n) => prose(*n),
            Self::Read(n, lines) => format!(
                "{}{}",
                prose(*n),
                call(
                    "read_file",
                    json!({"path": "big.txt", "offset": 1 + index, "limit": lines})
                )
            ),
            Self::Malformed(n) => format!("<tool_call>{{\"name\": \"{}", "y".repeat(*n)),
            Self::Reads(count) => (0..*count)
                .map(|i| {
                    call(
                        "read_file",
                        json!({"path": "big.txt", "offset": 1 + 97 * (index + i)}),
                    )
                })
                .collect(),
            Self::Command(n, bytes) => format!(
                "{}{}",
                prose(*n),
                call(
                    "run_command",
                    json!({"command": format!("head -c {bytes} big.txt; echo {index}")})
                )
            ),
        }
    }
}

fn turn_kind() -> impl Strategy<Value = TurnKind> {
    prop_oneof![
        (0usize..1_500).prop_map(TurnKind::Think),
        ((0usize..600), (1usize..3_000)).prop_map(|(n, l)| TurnKind::Read(n, l)),
        (0usize..12_000).prop_map(TurnKind::Malformed),
        ((0usize..600), (1usize..200_000)).prop_map(|(n, b)| TurnKind::Command(n, b)),
        (1usize..20).prop_map(TurnKind::Reads),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the turns and their results, once the round prompt fits beside the reserve
    /// no round ends round-failed for lack of context: it wraps up with the reserve free and
    /// hands off a valid report.
    #[test]
    fn no_round_fails_for_lack_of_context_once_the_prompt_fits(
        ctx in 3_000u32..12_000,
        max_tokens in 32u32..1_500,
        max_turns in 2u32..16,
        kinds in proptest::collection::vec(turn_kind(), 1..16),
    ) {
        let repo = TempRepo::new();
        let line = "let value = compute(input, 42); // checked\n";
        repo.write("big.txt", &line.repeat(6_000));
        let turns = kinds.iter().enumerate().map(|(i, k)| k.text(i)).collect();
        let run = run_edge(&repo, Edge::new(ctx, max_tokens, turns), max_turns);
        let prompt = of_type(&run.events, "round_started")[0]["prompt_tokens"].as_u64().unwrap();
        let margin = u64::from(REPORT_RESERVE_TOKENS + ralph_tui::protocol::report::TURN_MARGIN_TOKENS);
        prop_assume!(prompt + margin <= u64::from(ctx));
        assert_handed_off_within_the_reserve(&run, ctx);
    }
}
