//! Tests: chat formats. Golden turns per family as the models write them, one script of
//! calls through every family, streaming splits, report capture for the DSML and GLM paths,
//! template detection, grammar sanity (and, with the default model present, llama.cpp
//! itself loading each grammar and accepting each rendered call), and parsers that never
//! panic on arbitrary text.

use proptest::prelude::*;
use ralph_tui::chat::{by_name, detect, ChatFormat, ParsedCall, ParsedTurn, FORMAT_NAMES};
use ralph_tui::engine::report;
use ralph_tui::protocol::message::Role;
use ralph_tui::protocol::report::{Report, ReportStatus};
use ralph_tui::protocol::tool::ToolSpec;
use ralph_tui::tools::Registry;
use serde_json::{json, Value};

fn format(name: &str) -> Box<dyn ChatFormat> {
    by_name(name).unwrap_or_else(|| panic!("no format {name}"))
}

fn formats() -> Vec<Box<dyn ChatFormat>> {
    FORMAT_NAMES.iter().map(|n| format(n)).collect()
}

#[track_caller]
fn assert_malformed(call: &ParsedCall, needle: &str) {
    match call {
        ParsedCall::Malformed { reason, .. } => {
            assert!(
                reason.contains(needle),
                "reason {reason:?} lacks {needle:?}"
            )
        }
        other => panic!("expected a malformed call ({needle}), got {other:?}"),
    }
}

/// The tools a child is offered.
fn tools() -> Vec<ToolSpec> {
    Registry::standard().specs()
}

/// One round's worth of calls, with the awkward strings real work produces.
fn script() -> Vec<(&'static str, Value)> {
    vec![
        ("list_dir", json!({"path": ".", "depth": 2})),
        (
            "read_file",
            json!({"path": "src/lib.rs", "offset": 10, "limit": 40}),
        ),
        (
            "edit_file",
            json!({
                "path": "src/grüße.rs",
                "old": "fn greet() {\n    println!(\"hi\");\n}",
                "new": "fn greet() {\n    println!(\"grüß dich, {}\", \"wörld\"); // «ok» ✓ 😀\n\ttabbed \\ back\n}",
            }),
        ),
        (
            "run_command",
            json!({"command": "cargo test -- --nocapture 2>&1 | tail -n 5", "timeout_s": 120}),
        ),
        (
            "ralph_report",
            json!({
                "status": "continue",
                "summary": "Renamed greet's output; tests pass.",
                "evidence": ["cargo test: 12 passed", "src/grüße.rs: greet prints \"grüß dich\""],
                "next_steps": ["Update the README example"],
                "blocker": ""
            }),
        ),
    ]
}

fn script_calls() -> Vec<ParsedCall> {
    script()
        .into_iter()
        .map(|(n, a)| ParsedCall::call(n, a))
        .collect()
}

/// Prose, every script call rendered by `f`, prose.
fn script_turn(f: &dyn ChatFormat) -> String {
    let calls: Vec<String> = script().iter().map(|(n, a)| f.render_call(n, a)).collect();
    format!(
        "Plan: look, read, edit, test, report.\n{}\nThat is all for now.",
        calls.join("\n")
    )
}

// ---------------------------------------------------------------- golden turns per family

#[test]
fn hermes_golden_turns() {
    let f = format("hermes");
    // Qwen 2.5 style: prose, then two calls, pretty JSON inside the tags.
    let t = f.parse("I'll start by looking at the layout of the repository.\n<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\", \"depth\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}\n</tool_call>");
    assert_eq!(
        t.content,
        "I'll start by looking at the layout of the repository."
    );
    assert_eq!(
        t.calls,
        vec![
            ParsedCall::call("list_dir", json!({"path": ".", "depth": 2})),
            ParsedCall::call("read_file", json!({"path": "README.md"}))
        ]
    );
    // Qwen 3 thinking first; a draft inside the thoughts does not run.
    let t = f.parse("<think>\nThe user wants tests. Maybe <tool_call>{\"name\": \"run_command\", \"arguments\": {\"command\": \"rm -rf target\"}}</tool_call>? No.\n</think>\n\n<tool_call>\n{\"name\": \"run_command\", \"arguments\": {\"command\": \"cargo test\"}}\n</tool_call>");
    assert_eq!(
        t.calls,
        vec![ParsedCall::call(
            "run_command",
            json!({"command": "cargo test"})
        )]
    );
    // Malformed JSON (bare key), then a call cut off at the token cap.
    let t = f.parse("Editing.\n<tool_call>\n{\"name\": \"edit_file\", \"arguments\": {\"path\": \"a.rs\", old: \"x\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"b.rs\", \"content\": \"fn main() {\\n");
    assert_malformed(&t.calls[0], "not valid JSON");
    assert_malformed(&t.calls[1], "</tool_call> is missing");
    assert_eq!(t.content, "Editing.");
    // Markup of another family is prose here.
    let t = f.parse("<function_call>{\"name\": \"x\"}</function_call>");
    assert!(t.calls.is_empty());
}

#[test]
fn llama3_golden_turns() {
    let f = format("llama3");
    let t = f.parse(
        "<|python_tag|>{\"name\": \"run_command\", \"parameters\": {\"command\": \"cargo build\"}}",
    );
    assert_eq!(
        t.calls,
        vec![ParsedCall::call(
            "run_command",
            json!({"command": "cargo build"})
        )]
    );
    let t = f.parse("Let me check two things.\n{\"name\": \"list_dir\", \"parameters\": {\"path\": \"src\"}}; {\"name\": \"read_file\", \"parameters\": {\"path\": \"Cargo.toml\"}}\nThen I'll decide.");
    assert_eq!(t.content, "Let me check two things.\nThen I'll decide.");
    assert_eq!(t.calls.len(), 2);
    let t = f.parse("{\"name\": \"read_file\", \"parameters\": {\"path\": 'a'}}\n{\"name\": \"write_file\", \"parameters\": {\"path\": \"b\", \"content\": \"x");
    assert_malformed(&t.calls[0], "not valid JSON");
    assert_malformed(&t.calls[1], "cut off");
    // JSON that is data, not a call, stays prose.
    let t = f.parse("package.json has {\"name\": \"demo\", \"private\": true}.");
    assert!(t.calls.is_empty());
}

#[test]
fn mistral_golden_turns() {
    let f = format("mistral");
    let t = f.parse("[TOOL_CALLS] [{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}, \"id\": \"Xk3m9Qp2a\"}, {\"name\": \"search\", \"arguments\": {\"pattern\": \"TODO\"}}]");
    assert_eq!(
        t.calls,
        vec![
            ParsedCall::call("list_dir", json!({"path": "."})),
            ParsedCall::call("search", json!({"pattern": "TODO"}))
        ]
    );
    let t = f.parse("[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"read_file\", \"arguments\": {\"pa");
    assert_eq!(
        t.calls[0],
        ParsedCall::call("read_file", json!({"path": "a"}))
    );
    assert_malformed(&t.calls[1], "cut off");
    let f = format("mistral-v11");
    let t = f.parse("I'll read both files.[TOOL_CALLS]read_file[ARGS]{\"path\": \"a.rs\"}[TOOL_CALLS]read_file[ARGS]{\"path\": \"b.rs\", }");
    assert_eq!(t.content, "I'll read both files.");
    assert_eq!(
        t.calls[0],
        ParsedCall::call("read_file", json!({"path": "a.rs"}))
    );
    assert_malformed(&t.calls[1], "not valid JSON");
    let t = f.parse("[THINK]Which file? a.rs.[/THINK]Reading.[TOOL_CALLS]read_file[CALL_ID]a1B2c3D4e[ARGS]{\"path\": \"a.rs\"}");
    assert_eq!(
        t.calls,
        vec![ParsedCall::call("read_file", json!({"path": "a.rs"}))]
    );
    assert!(t.content.ends_with("Reading."));
}

#[test]
fn deepseek_golden_turns() {
    let f = format("deepseek");
    let t = f.parse("<think>\nI need the directory listing first.\n</think>\n\nLet me look around.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>list_dir\n```json\n{\"path\": \".\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"README.md\", \"limit\": 50}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
    assert_eq!(
        t.calls,
        vec![
            ParsedCall::call("list_dir", json!({"path": "."})),
            ParsedCall::call("read_file", json!({"path": "README.md", "limit": 50}))
        ]
    );
    assert!(t.content.ends_with("Let me look around."));
    // V3.1 shape, a broken call, and one cut off at the cap.
    let t = format("deepseek-v3.1").parse("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>run_command<｜tool▁sep｜>{\"command\": \"make\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": a}<｜tool▁call▁end｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"READ");
    assert_eq!(
        t.calls[0],
        ParsedCall::call("run_command", json!({"command": "make"}))
    );
    assert_malformed(&t.calls[1], "not valid JSON");
    assert_malformed(&t.calls[2], "<｜tool▁call▁end｜> is missing");
}

#[test]
fn dsml_golden_turns() {
    let f = format("dsml");
    let t = f.parse("<think>Check the tests first.</think>Running the tests.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"run_command\">\n<｜DSML｜parameter name=\"command\" string=\"true\">cargo test --lib</｜DSML｜parameter>\n<｜DSML｜parameter name=\"timeout_s\" string=\"false\">300</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"search\">\n<｜DSML｜parameter name=\"pattern\" string=\"true\">fn \\w+\\(</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>");
    assert_eq!(
        t.calls,
        vec![
            ParsedCall::call(
                "run_command",
                json!({"command": "cargo test --lib", "timeout_s": 300})
            ),
            ParsedCall::call("search", json!({"pattern": "fn \\w+\\("}))
        ]
    );
    assert!(t.content.ends_with("Running the tests."));
    let t = f.parse("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"limit\" string=\"false\">forty</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">src/ma");
    assert_malformed(&t.calls[0], "not JSON");
    assert_malformed(&t.calls[1], "cut off");
}

#[test]
fn glm_golden_turns() {
    let f = format("glm");
    let t = f.parse("<think>I should list the files, then read the manifest.</think>\nI'll look at the project first.\n<tool_call>list_dir\n<arg_key>path</arg_key>\n<arg_value>.</arg_value>\n<arg_key>depth</arg_key>\n<arg_value>2</arg_value>\n</tool_call>\n<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>Cargo.toml</arg_value>\n</tool_call>");
    assert_eq!(
        t.calls,
        vec![
            ParsedCall::call("list_dir", json!({"path": ".", "depth": 2})),
            ParsedCall::call("read_file", json!({"path": "Cargo.toml"}))
        ]
    );
    assert!(t.content.ends_with("I'll look at the project first."));
    let t = f.parse("<tool_call>edit_file\n<arg_key>path</arg_key>\n<arg_value>a.rs</arg_value>\n<arg_key>old</arg_key>\n</tool_call>\n<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>b.rs</arg_value>\n<arg_key>content</arg_key>\n<arg_value>fn main() {");
    assert_malformed(&t.calls[0], "no <arg_value>");
    assert_malformed(&t.calls[1], "cut off");
}

#[test]
fn generic_golden_turns() {
    let f = format("generic");
    // What a small model writes: tags, tags without a newline, and a forgotten tag.
    let t = f.parse("Sure! I will list the files.\n<tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}</tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}");
    assert_eq!(
        t.calls,
        vec![
            ParsedCall::call("list_dir", json!({"path": "."})),
            ParsedCall::call("read_file", json!({"path": "README.md"}))
        ]
    );
    assert_eq!(t.content, "Sure! I will list the files.");
    let t = f.parse("<tool_call>{'name': 'list_dir', 'arguments': {'path': '.'}}</tool_call>");
    assert_malformed(&t.calls[0], "double quotes");
    let result = f.tool_result("list_dir", "src/\nCargo.toml");
    assert_eq!(result.role, Role::User);
    assert!(result.content.starts_with("Tool result (list_dir):\n"));
}

// ------------------------------------------------------ one script through every family

#[test]
fn the_same_script_round_trips_through_every_family() {
    for f in formats() {
        let text = script_turn(f.as_ref());
        let t = f.parse(&text);
        assert_eq!(t.calls, script_calls(), "{}:\n{text}", f.name());
        assert_eq!(
            t.content,
            "Plan: look, read, edit, test, report.\nThat is all for now.",
            "{}",
            f.name()
        );
        let (partial, settled) = f.parse_partial(&text);
        assert_eq!(
            (partial, settled),
            (t.clone(), script().len()),
            "{}",
            f.name()
        );
    }
}

#[test]
fn every_family_reads_every_other_familys_shape_it_claims() {
    // The parsers that share a family read each other's renderings.
    for (reader, writer) in [
        ("mistral", "mistral-v11"),
        ("mistral-v11", "mistral"),
        ("deepseek", "deepseek-v3.1"),
        ("deepseek-v3.1", "deepseek"),
        ("glm", "hermes"),
        ("generic", "hermes"),
        ("generic", "llama3"),
    ] {
        let text = script_turn(format(writer).as_ref());
        let calls = format(reader).parse(&text).calls;
        let want: Vec<ParsedCall> = script_calls();
        assert_eq!(calls, want, "{reader} reading {writer}");
    }
}

#[test]
fn instructions_show_the_syntax_they_parse() {
    let tools = tools();
    for f in formats() {
        let text = f.tool_instructions(&tools);
        for tool in &tools {
            assert!(
                text.contains(&tool.name),
                "{}: {} missing",
                f.name(),
                tool.name
            );
        }
        // qwen-coder's worked examples read the file its edit example changes: an example
        // that reads README.md had the model read a README that was not there, again and
        // again.
        let path = if f.name() == "qwen-coder" {
            "app.py"
        } else {
            "README.md"
        };
        let example = f.render_call("read_file", &json!({ "path": path }));
        assert!(
            text.contains(&example),
            "{}: the example is not the rendered call",
            f.name()
        );
        assert_eq!(
            f.parse(&example).calls,
            vec![ParsedCall::call("read_file", json!({ "path": path }))]
        );
    }
}

// ------------------------------------------------------------- report capture regressions

#[track_caller]
fn validated(f: &dyn ChatFormat, text: &str) -> Report {
    let t = f.parse(text);
    let [ParsedCall::Call { name, arguments }] = &t.calls[..] else {
        panic!("{}: expected one call, got {:?}", f.name(), t.calls);
    };
    assert_eq!(name, "ralph_report");
    report::validate(arguments).unwrap_or_else(|e| panic!("{}: {e}: {arguments}", f.name()))
}

#[test]
fn dsml_reports_are_captured_and_validate() {
    let f = format("deepseek-v4");
    let complete = "<think>The fix is in and the suite is green; time to report.</think>All tests pass.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"ralph_report\">\n<｜DSML｜parameter name=\"status\" string=\"true\">complete</｜DSML｜parameter>\n<｜DSML｜parameter name=\"summary\" string=\"true\">Fixed the off-by-one in parse_range and added a regression test.</｜DSML｜parameter>\n<｜DSML｜parameter name=\"evidence\" string=\"false\">[\"cargo test: 42 passed, 0 failed\", \"src/range.rs: the end bound is inclusive now\"]</｜DSML｜parameter>\n<｜DSML｜parameter name=\"next_steps\" string=\"false\">[]</｜DSML｜parameter>\n<｜DSML｜parameter name=\"blocker\" string=\"true\"></｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
    let r = validated(f.as_ref(), complete);
    assert_eq!(r.status, ReportStatus::Complete);
    assert_eq!(r.evidence.len(), 2);

    let blocked = "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"ralph_report\">\n<｜DSML｜parameter name=\"status\" string=\"true\">blocked</｜DSML｜parameter>\n<｜DSML｜parameter name=\"summary\" string=\"true\">The build needs a system library.</｜DSML｜parameter>\n<｜DSML｜parameter name=\"evidence\" string=\"false\">[\"cargo build: could not find libssl\"]</｜DSML｜parameter>\n<｜DSML｜parameter name=\"next_steps\" string=\"false\">[\"Install libssl-dev, then rerun cargo build\"]</｜DSML｜parameter>\n<｜DSML｜parameter name=\"blocker\" string=\"true\">libssl-dev is not installed and installing it needs root.</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
    let r = validated(f.as_ref(), blocked);
    assert_eq!(r.status, ReportStatus::Blocked);
    assert_eq!(
        r.blocker,
        "libssl-dev is not installed and installing it needs root."
    );
}

#[test]
fn glm_reports_are_captured_and_validate() {
    let f = format("glm4");
    let cont = "Progress so far is recorded below.\n<tool_call>ralph_report\n<arg_key>status</arg_key>\n<arg_value>continue</arg_value>\n<arg_key>summary</arg_key>\n<arg_value>Read the parser; tokenize() drops the last token.</arg_value>\n<arg_key>evidence</arg_key>\n<arg_value>[\"src/parse.rs:88 returns before pushing the last token\"]</arg_value>\n<arg_key>next_steps</arg_key>\n<arg_value>[\"Fix tokenize() to keep the last token\", \"Run cargo test\"]</arg_value>\n<arg_key>blocker</arg_key>\n<arg_value></arg_value>\n</tool_call>";
    let r = validated(f.as_ref(), cont);
    assert_eq!(r.status, ReportStatus::Continue);
    assert_eq!(r.next_steps.len(), 2);
    assert_eq!(r.blocker, "");

    // GLM 4.7 writes it without newlines.
    let complete = "<tool_call>ralph_report<arg_key>status</arg_key><arg_value>complete</arg_value><arg_key>summary</arg_key><arg_value>Added the --json flag.</arg_value><arg_key>evidence</arg_key><arg_value>[\"cargo test cli: 5 passed\"]</arg_value><arg_key>next_steps</arg_key><arg_value>[]</arg_value><arg_key>blocker</arg_key><arg_value></arg_value></tool_call>";
    assert_eq!(
        validated(f.as_ref(), complete).status,
        ReportStatus::Complete
    );
}

#[test]
fn rendered_reports_validate_in_every_family() {
    let reports = [
        json!({"status": "continue", "summary": "Half done.", "evidence": [], "next_steps": ["Finish \"b\""], "blocker": ""}),
        json!({"status": "complete", "summary": "Done — all green ✓.", "evidence": ["cargo test: ok"], "next_steps": [], "blocker": ""}),
        json!({"status": "blocked", "summary": "Stuck.", "evidence": [], "next_steps": [], "blocker": "No network: cannot fetch crates."}),
    ];
    for f in formats() {
        for r in &reports {
            let text = f.render_call("ralph_report", r);
            let got = validated(f.as_ref(), &text);
            assert_eq!(&serde_json::to_value(&got).unwrap(), r, "{}", f.name());
        }
    }
}

// -------------------------------------------------------------------------- detection

#[test]
fn detect_reads_the_template_markup() {
    let cases: [(&str, Option<&str>, &str); 12] = [
        ("{%- if tools %}<tools>{{ tool | tojson }}</tools>For each function call, return a json object within <tool_call></tool_call> XML tags{% endif %}<|im_start|>", Some("qwen2"), "hermes"),
        ("{{- \"Environment: ipython\\n\" }}{%- if builtin_tools is defined %}<|python_tag|>{{ tool_call.name }}{% endif %}<|start_header_id|>", Some("llama"), "llama3"),
        ("[AVAILABLE_TOOLS]{{ tools|tojson }}[/AVAILABLE_TOOLS]{{ \"[TOOL_CALLS]\" + tool_calls|tojson }}", Some("llama"), "mistral"),
        ("{{- \"[TOOL_CALLS]\" + tool.function.name + \"[ARGS]\" + arguments }}", Some("mistral3"), "mistral-v11"),
        ("{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'}}", Some("deepseek2"), "deepseek"),
        ("{{'<｜tool▁call▁begin｜>'+ tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}", Some("deepseek2"), "deepseek-v3.1"),
        ("{{ '<｜DSML｜function_calls>' }}{% for tc in tool_calls %}<｜DSML｜invoke name=\"{{ tc.name }}\">", Some("deepseek2"), "dsml"),
        ("<tool_call>{{ tc.name }}\n{% for k, v in tc.arguments.items() %}<arg_key>{{ k }}</arg_key>\n<arg_value>{{ v }}</arg_value>\n{% endfor %}</tool_call>", Some("glm4moe"), "glm"),
        // SmolLM2 and Gemma: no tools in the template, whatever the architecture.
        ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}", Some("llama"), "generic"),
        ("{{ bos_token }}{% for message in messages %}<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}", Some("gemma3"), "generic"),
        ("{% if tools %}{{ tools | tojson }}{% endif %}<|im_start|>", Some("qwen3"), "hermes"),
        ("{% if tools %}<|tool|>{{ tools | tojson }}<|/tool|>{% endif %}", Some("phi3"), "generic"),
    ];
    for (template, arch, want) in cases {
        assert_eq!(detect(Some(template), arch, None), want, "{template}");
        assert!(FORMAT_NAMES.contains(&want));
    }
    assert_eq!(detect(None, Some("qwen2"), None), "hermes");
    assert_eq!(detect(None, Some("glm4moe"), None), "glm");
    assert_eq!(detect(None, Some("deepseek2"), None), "deepseek");
    assert_eq!(detect(None, Some("llama"), None), "generic");
    assert_eq!(detect(None, None, None), "generic");
    // A Qwen Coder model writes fenced calls whatever its template teaches.
    let qwen = "{% if tools %}<tools>{{ tools | tojson }}</tools><tool_call>{% endif %}";
    assert_eq!(
        detect(Some(qwen), Some("qwen2"), Some("Qwen2.5-Coder")),
        "qwen-coder"
    );
    assert_eq!(detect(Some(qwen), Some("qwen2"), Some("Qwen2.5")), "hermes");
    assert_eq!(
        detect(
            None,
            Some("qwen2"),
            Some("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
        ),
        "qwen-coder"
    );
    // Qwen3-Coder's XML calls keep hermes, which reads them.
    let xml = "<tool_call>\n<function={{ tc.name }}>";
    assert_eq!(
        detect(Some(xml), Some("qwen3moe"), Some("Qwen3-Coder")),
        "hermes"
    );
}

// ---------------------------------------------------------------------------- grammars

/// Rule names defined and referenced in a GBNF text (literals, classes, bounds skipped).
fn gbnf_names(grammar: &str) -> (Vec<String>, Vec<String>) {
    let mut defined = Vec::new();
    let mut used = Vec::new();
    for line in grammar.lines().filter(|l| !l.trim().is_empty()) {
        let (name, body) = line.split_once(" ::= ").expect("a rule per line");
        defined.push(name.to_string());
        let mut chars = body.chars().peekable();
        let mut word = String::new();
        let flush = |word: &mut String, used: &mut Vec<String>| {
            if !word.is_empty() {
                used.push(std::mem::take(word));
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '"' | '[' => {
                    flush(&mut word, &mut used);
                    let end = if c == '"' { '"' } else { ']' };
                    while let Some(d) = chars.next() {
                        if d == '\\' {
                            chars.next();
                        } else if d == end {
                            break;
                        }
                    }
                }
                '{' => {
                    flush(&mut word, &mut used);
                    for d in chars.by_ref() {
                        if d == '}' {
                            break;
                        }
                    }
                }
                c if c.is_ascii_alphanumeric() || c == '-' => word.push(c),
                _ => flush(&mut word, &mut used),
            }
        }
        flush(&mut word, &mut used);
    }
    (defined, used)
}

#[test]
fn grammars_are_well_formed_and_triggered_by_rendered_calls() {
    let tools = tools();
    for f in formats() {
        let g = f
            .grammar(&tools)
            .unwrap_or_else(|| panic!("{} has no grammar", f.name()));
        assert!(g.grammar.starts_with("root ::= "), "{}", f.name());
        let (defined, used) = gbnf_names(&g.grammar);
        let mut unique = defined.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            defined.len(),
            "{}: a rule defined twice",
            f.name()
        );
        for name in &used {
            assert!(
                defined.contains(name),
                "{}: rule {name} is used but not defined",
                f.name()
            );
        }
        assert!(!g.trigger_words.is_empty());
        for (name, args) in script() {
            let text = f.render_call(name, &args);
            assert!(
                g.trigger_words.iter().any(|w| text.starts_with(w.as_str())),
                "{}: {text} does not start with a trigger word",
                f.name()
            );
        }
        assert!(f.grammar(&[]).is_none(), "{}", f.name());
    }
}

#[test]
fn report_grammars_bound_every_string() {
    let tools = tools();
    for f in formats() {
        let g = f.grammar(&tools).unwrap().grammar;
        for bound in ["{0,398}", "{0,158}", "{0,298}"] {
            assert!(g.contains(bound), "{}: no {bound} bound", f.name());
        }
    }
}

// ------------------------------------------------------------------------- streaming

/// Calls out of a turn while it streams, as a consumer of `parse_partial` would take them:
/// after each chunk, the calls the format says are final and were not handed out yet.
struct Stream<'f> {
    format: &'f dyn ChatFormat,
    text: String,
    handed_out: usize,
}

impl<'f> Stream<'f> {
    fn new(format: &'f dyn ChatFormat) -> Self {
        Self {
            format,
            text: String::new(),
            handed_out: 0,
        }
    }

    fn push(&mut self, chunk: &str) -> Vec<ParsedCall> {
        self.text.push_str(chunk);
        let (turn, settled) = self.format.parse_partial(&self.text);
        let settled = settled.min(turn.calls.len());
        if settled <= self.handed_out {
            return Vec::new();
        }
        let new = turn.calls[self.handed_out..settled].to_vec();
        self.handed_out = settled;
        new
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn finish(self) -> (ParsedTurn, Vec<ParsedCall>) {
        let turn = self.format.parse(&self.text);
        let rest = turn
            .calls
            .get(self.handed_out..)
            .unwrap_or_default()
            .to_vec();
        (turn, rest)
    }
}

/// Pushes `chunks` through a `Stream`; returns the calls handed out, in order, and the
/// finished parse.
fn stream(f: &dyn ChatFormat, chunks: &[&str]) -> (Vec<ParsedCall>, ParsedTurn) {
    let mut s = Stream::new(f);
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(s.push(chunk));
    }
    let (turn, rest) = s.finish();
    out.extend(rest);
    (out, turn)
}

/// Splits `text` at the given byte offsets (moved back to char boundaries).
fn split_at<'t>(text: &'t str, cuts: &[usize]) -> Vec<&'t str> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c % (text.len() + 1);
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for c in cuts {
        out.push(&text[from..c]);
        from = c;
    }
    out.push(&text[from..]);
    out
}

#[test]
fn calls_are_handed_out_by_their_last_character() {
    for f in formats() {
        for (name, args) in script() {
            let text = f.render_call(name, &args);
            let mut s = Stream::new(f.as_ref());
            let mut handed = Vec::new();
            for (i, c) in text.char_indices() {
                handed.extend(s.push(&text[i..i + c.len_utf8()]));
            }
            assert_eq!(s.text(), text);
            let (_, rest) = s.finish();
            assert!(
                rest.is_empty(),
                "{}: {name} was held back until the end",
                f.name()
            );
            assert_eq!(
                handed,
                vec![ParsedCall::call(name, args.clone())],
                "{}: {name}",
                f.name()
            );
        }
    }
}

/// A long turn for the streaming properties: the script, some noise, and a broken call.
fn streaming_turn(f: &dyn ChatFormat) -> String {
    let broken = f.render_call("read_file", &json!({"path": "x"}));
    let broken = broken.replacen("read_file", "read file", 1);
    format!(
        "{}\nnoise {{ [ ] }} < > \n{broken}\n{}",
        script_turn(f),
        f.render_call("list_dir", &json!({"path": "ü"}))
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_split_of_a_turn_streams_to_the_same_calls(
        which in 0..FORMAT_NAMES.len(),
        cuts in prop::collection::vec(any::<usize>(), 0..24),
        cap in any::<usize>(),
    ) {
        let f = format(FORMAT_NAMES[which]);
        let full = streaming_turn(f.as_ref());
        // Also a turn cut anywhere, as at the token cap.
        let mut end = cap % (full.len() + 1);
        while !full.is_char_boundary(end) {
            end -= 1;
        }
        for text in [full.as_str(), &full[..end]] {
            let chunks = split_at(text, &cuts);
            prop_assert_eq!(chunks.concat(), text);
            let whole = f.parse(text);
            prop_assert_eq!(&f.parse(&chunks.concat()), &whole);
            let (handed, turn) = stream(f.as_ref(), &chunks);
            prop_assert_eq!(&turn, &whole);
            prop_assert_eq!(&handed, &whole.calls);
        }
    }
}

// ------------------------------------------------------------------ never panic, ever

/// Fragments of every family's markup, whole and cut, for splicing into random text.
const FRAGMENTS: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<tool_",
    "{\"name\": \"a\", \"arguments\": {",
    "}",
    "{",
    "]",
    "[",
    "\"",
    "\\",
    "\n",
    " ",
    "<think>",
    "</think>",
    "[THINK]",
    "[/THINK]",
    "<|python_tag|>",
    "{\"name\"",
    "\"parameters\": ",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "[TOOL_CA",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
    "<|tool_call_begin|>",
    "<｜tool▁",
    "function",
    "```json\n",
    "```",
    "<｜DSML｜function_calls>",
    "</｜DSML｜function_calls>",
    "<｜DSML｜invoke name=\"a\">",
    "</｜DSML｜invoke>",
    "<｜DSML｜parameter name=\"k\" string=\"false\">",
    "<｜DSML｜parameter name=\"k\" string=\"true\">",
    "</｜DSML｜parameter>",
    "<｜DSML｜",
    "｜",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<function=a>",
    "<parameter=k>",
    "</parameter>",
    "read_file",
    "42",
    "null",
    "é",
    "😀",
    "\u{0}",
    "▁",
];

fn spliced() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::sample::select(FRAGMENTS).prop_map(str::to_string),
            1 => any::<String>(),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parsers_never_panic_on_arbitrary_text(text in any::<String>()) {
        for f in formats() {
            let (turn, settled) = f.parse_partial(&text);
            prop_assert!(settled <= turn.calls.len());
            prop_assert_eq!(f.parse(&text), turn);
        }
    }

    #[test]
    fn parsers_never_panic_and_never_take_back_a_call(
        text in spliced(),
        cuts in prop::collection::vec(any::<usize>(), 1..6),
    ) {
        for f in formats() {
            let whole = f.parse(&text);
            for prefix_end in split_at(&text, &cuts).iter().scan(0, |at, c| { *at += c.len(); Some(*at) }) {
                let (turn, settled) = f.parse_partial(&text[..prefix_end]);
                prop_assert!(settled <= turn.calls.len());
                prop_assert!(
                    settled <= whole.calls.len(),
                    "{} settled {} calls at byte {} of {:?}, more than the whole turn has",
                    f.name(), settled, prefix_end, text
                );
                prop_assert_eq!(
                    &turn.calls[..settled],
                    &whole.calls[..settled],
                    "{} took back a call at byte {} of {:?}", f.name(), prefix_end, text
                );
            }
            let chunks = split_at(&text, &cuts);
            let (handed, turn) = stream(f.as_ref(), &chunks);
            prop_assert_eq!(&handed, &whole.calls);
            prop_assert_eq!(turn, whole);
        }
    }
}

// ------------------------------------------------- the grammars inside llama.cpp itself

#[cfg(feature = "llama")]
mod llama_grammar {
    use super::*;
    use llama_cpp_2::llama_backend::LlamaBackend;
    use llama_cpp_2::model::params::LlamaModelParams;
    use llama_cpp_2::model::LlamaModel;
    use llama_cpp_2::sampling::LlamaSampler;
    use llama_cpp_2::token::data::LlamaTokenData;
    use llama_cpp_2::token::data_array::LlamaTokenDataArray;
    use ralph_tui::llm::llama::Vocab;
    use std::path::PathBuf;
    use std::process::Command;

    const CHILD_ENV: &str = "RALPH_TUI_GRAMMAR_CHECK_MODEL";

    fn model_path() -> PathBuf {
        std::env::var_os(CHILD_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| ralph_tui::config::Dirs::discover().unwrap().test_model())
    }

    /// llama.cpp's backend initialises once per process, so the check runs in a process of
    /// its own: this test binary again, with only the ignored test below selected.
    #[test]
    fn llama_cpp_loads_each_grammar_and_accepts_each_rendered_call() {
        let model = model_path();
        if !model.exists() {
            eprintln!(
                "skipped: no model at {} (run `make model`)",
                model.display()
            );
            return;
        }
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "suite::chat::llama_grammar::check_in_own_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &model)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "grammar check failed:\n{stdout}\n{stderr}"
        );
    }

    /// Feeds `text` token by token to a lazy grammar sampler: whether every token was
    /// accepted, and whether the grammar may end there (an end-of-generation token survives).
    fn feed(
        model: &LlamaModel,
        grammar: &ralph_tui::chat::CallGrammar,
        text: &str,
    ) -> (bool, bool) {
        let mut sampler = LlamaSampler::grammar_lazy(
            model,
            &grammar.grammar,
            "root",
            grammar.trigger_words.iter().map(String::as_str),
            &[],
        )
        .expect("llama.cpp parses the grammar");
        for token in Vocab::of(model).tokenize(text.as_bytes(), false, false) {
            if sampler.try_accept(token).is_err() {
                return (false, false);
            }
        }
        let eos = Vocab::of(model).eos();
        let mut candidates =
            LlamaTokenDataArray::new(vec![LlamaTokenData::new(eos, 1.0, 0.0)], false);
        candidates.apply_sampler(&sampler);
        (true, candidates.data[0].logit().is_finite())
    }

    #[test]
    #[ignore = "run in its own process by llama_cpp_loads_each_grammar_and_accepts_each_rendered_call"]
    fn check_in_own_process() {
        let Ok(mut backend) = LlamaBackend::init() else {
            eprintln!("skipped: llama.cpp is already initialised in this process");
            return;
        };
        backend.void_logs();
        let model =
            LlamaModel::load_from_file(&backend, model_path(), &LlamaModelParams::default())
                .expect("the model loads");
        let tools = tools();
        let bad_reports = [
            json!({"status": "continue", "summary": "x", "evidence": [], "next_steps": [], "blocker": ""}),
            json!({"status": "complete", "summary": "x", "evidence": [], "next_steps": [], "blocker": ""}),
            json!({"status": "continue", "summary": " padded", "evidence": [], "next_steps": ["y"], "blocker": ""}),
            json!({"status": "blocked", "summary": "x", "evidence": [], "next_steps": [], "blocker": ""}),
        ];
        for f in formats() {
            let started = std::time::Instant::now();
            let grammar = f.grammar(&tools).unwrap();
            for (name, args) in script() {
                let text = format!("Let me do that.\n{}", f.render_call(name, &args));
                assert_eq!(
                    feed(&model, &grammar, &text),
                    (true, true),
                    "{}: {name}",
                    f.name()
                );
                // One character short, the grammar is active and will not let the turn end.
                let mut short = text.clone();
                short.pop();
                assert_eq!(
                    feed(&model, &grammar, &short),
                    (true, false),
                    "{}: {name} cut short",
                    f.name()
                );
            }
            assert!(
                !feed(&model, &grammar, &f.render_call("no_such_tool", &json!({}))).0,
                "{}: an unknown tool got through",
                f.name()
            );
            for bad in &bad_reports {
                let (accepted, complete) =
                    feed(&model, &grammar, &f.render_call("ralph_report", bad));
                assert!(
                    !(accepted && complete),
                    "{}: invalid report {bad} got through",
                    f.name()
                );
            }
            eprintln!(
                "{}: grammar of {} bytes checked in {:?}",
                f.name(),
                grammar.grammar.len(),
                started.elapsed()
            );
            wrap_up_grammar_takes_a_report_within_its_room(&model, f.as_ref());
        }
    }

    /// A wrap-up's grammar, built for the bare report reserve, parses in llama.cpp, takes a
    /// report at its bounds and refuses one a character longer (or with text that is not
    /// printable ASCII).
    fn wrap_up_grammar_takes_a_report_within_its_room(model: &LlamaModel, f: &dyn ChatFormat) {
        use ralph_tui::protocol::report::REPORT_RESERVE_TOKENS;
        let report_tool = vec![ralph_tui::tools::report_spec()];
        let room = usize::try_from(REPORT_RESERVE_TOKENS).unwrap();
        let (grammar, bounds, longest) =
            ralph_tui::chat::report_grammar_within(f, &report_tool, room).unwrap();
        assert!(longest.unwrap() <= room, "{}", f.name());
        let report = |summary: String| {
            json!({"status": "continue", "summary": summary,
                "evidence": vec!["e".repeat(bounds.item); bounds.items],
                "next_steps": vec!["n".repeat(bounds.item); bounds.items], "blocker": ""})
        };
        let at_bounds = f.render_call("ralph_report", &report("s".repeat(bounds.summary)));
        assert_eq!(
            feed(model, &grammar, &at_bounds),
            (true, true),
            "{}: {at_bounds}",
            f.name()
        );
        for bad in [
            report("s".repeat(bounds.summary + 1)),
            report(format!("gr\u{fc}{}", "s".repeat(8))),
        ] {
            let (accepted, complete) = feed(model, &grammar, &f.render_call("ralph_report", &bad));
            assert!(!(accepted && complete), "{}: {bad} got through", f.name());
        }
    }
}
