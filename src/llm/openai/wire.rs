//! The chat-completions wire format: the request body built from a round's messages, and the
//! streamed chunks read back, as our own serde types.
//!
//! The engine keeps a conversation as plain messages whose assistant text holds the call
//! markup of the run's chat format. On the wire the same messages travel in the server's
//! terms: an assistant message's calls (found with the chat format's parser) become its
//! `tool_calls`, and each tool result that follows answers one of them by id. Nothing is
//! added or dropped, so a request carries exactly the messages `prompt.json` records.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::chat::{call_required, ChatFormat, ParsedCall};
use crate::protocol::message::{Message, Role};
use crate::protocol::report::{schema_value, Need, ReportBounds, ReportStatus, REPORT_FIELDS};
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};

/// Sampling settings sent with every request.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u32,
}

/// What a turn may produce, and so what its request asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnShape {
    /// Text and calls of any offered tool, through the native `tools` field.
    Open,
    /// One call of an offered tool and nothing else, from the first token: the request has
    /// no `tools` and a `response_format` whose schema is one `{tool: arguments}` branch per
    /// tool ([`call_schema`]). The server backend's counterpart of the llama backend's required-call grammar:
    /// sent after a turn that called nothing, and on every turn for a format with no call
    /// markup to trigger on (`generic`).
    CallOnly,
    /// A wrap-up turn: the report alone, as `response_format` with the report's schema.
    ReportOnly,
}

impl TurnShape {
    /// The shape of the next turn of `messages`, as the llama backend decides its grammar:
    /// the wrap-up is report-only; a format without trigger words, or a conversation whose
    /// last assistant turn called nothing, gets a call-only turn; anything else is open.
    pub fn of(
        report_only: bool,
        tools: &[ToolSpec],
        messages: &[Message],
        format: &dyn ChatFormat,
    ) -> Self {
        if report_only {
            return Self::ReportOnly;
        }
        if tools.is_empty() {
            return Self::Open;
        }
        if format.call_triggers().is_empty() || call_required(format, messages) {
            Self::CallOnly
        } else {
            Self::Open
        }
    }
}

/// The body of one streamed `POST /chat/completions`.
///
/// An open turn has the native `tools` and no grammar (llama-server refuses both at once); a
/// call-only or report-only turn has no `tools` and a `response_format` (see [`TurnShape`])
/// whose report schema holds the report's rules.
pub fn request_body(
    model: &str,
    messages: &[Message],
    tools: &[ToolSpec],
    shape: TurnShape,
    format: &dyn ChatFormat,
    sampling: &Sampling,
) -> Value {
    request_body_within(
        model,
        messages,
        tools,
        shape,
        format,
        sampling,
        ReportBounds::FULL,
    )
}

/// [`request_body`] with the report's sampling schema kept within `report` (a wrap-up whose
/// context is short asks for a shorter report, [`report_bounds_for`]).
pub fn request_body_within(
    model: &str,
    messages: &[Message],
    tools: &[ToolSpec],
    shape: TurnShape,
    format: &dyn ChatFormat,
    sampling: &Sampling,
    report: ReportBounds,
) -> Value {
    let mut body = json!({
        "model": model,
        "messages": wire_messages(messages, format),
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": sampling.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "seed": sampling.seed,
    });
    let schema = |name: &str, schema: Value| {
        json!({
            "type": "json_schema",
            "json_schema": {"name": name, "strict": true, "schema": schema},
        })
    };
    if let Some(map) = body.as_object_mut() {
        match shape {
            TurnShape::ReportOnly => {
                map.insert(
                    "response_format".into(),
                    schema(REPORT_TOOL, sampling_schema_within(report)),
                );
            }
            TurnShape::CallOnly => {
                map.insert(
                    "response_format".into(),
                    schema("tool_call", call_schema(tools)),
                );
            }
            TurnShape::Open if !tools.is_empty() => {
                let tools: Vec<Value> = tools
                    .iter()
                    .map(|t| {
                        json!({"type": "function", "function": {
                            "name": t.name, "description": t.description,
                            "parameters": t.parameters,
                        }})
                    })
                    .collect();
                map.insert("tools".into(), Value::Array(tools));
            }
            TurnShape::Open => {}
        }
    }
    body
}

/// Has llama-server sample the request `body` under the GBNF `gbnf` (its `grammar` field)
/// instead of its `response_format` (the server takes one or the other, never both).
pub fn sample_under_grammar(body: &mut Value, gbnf: String) {
    if let Some(map) = body.as_object_mut() {
        map.remove("response_format");
        map.insert("grammar".into(), Value::String(gbnf));
    }
}

/// A tool's parameters as a call-only turn samples them: the report's sampling schema for the
/// report tool. (Native `tools` carry the plain schemas: the template shows them to the model,
/// and the sampling schema's branches and patterns would cost some 600 tokens a turn there.)
fn parameters(tool: &ToolSpec) -> Value {
    if tool.name == REPORT_TOOL {
        sampling_schema()
    } else {
        tool.parameters.clone()
    }
}

/// The schema of a call-only turn: one branch per tool, each an object whose one key is the
/// tool's name and whose value is its arguments (`{"read_file": {"path": "a"}}`). The name
/// comes first whatever order a server writes an object's keys in (llama.cpp writes them
/// sorted, which would put `arguments` before `name`), so the model picks the tool before it
/// writes the arguments.
pub fn call_schema(tools: &[ToolSpec]) -> Value {
    let branches: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut properties = Map::new();
            properties.insert(t.name.clone(), parameters(t));
            json!({
                "type": "object",
                "properties": properties,
                "required": [t.name],
                "additionalProperties": false,
            })
        })
        .collect();
    json!({ "anyOf": branches })
}

/// The call a call-only turn's content holds: `(name, arguments)` from its one key.
pub fn call_of(content: &Value) -> Option<(&str, &Value)> {
    let map = content.as_object()?;
    if map.len() != 1 {
        return None;
    }
    map.iter()
        .next()
        .map(|(name, arguments)| (name.as_str(), arguments))
}

/// The report's schema as a server samples it: one branch per status, each with that
/// status's rules ([`ReportStatus::rule`]: a field it needs empty or non-empty) and every
/// string and list bounded by the report's limits, so an unbounded field cannot let a small
/// model loop to the token cap and a status cannot come with the wrong fields. The engine
/// still validates every report against the full schema and rules.
pub fn sampling_schema() -> Value {
    sampling_schema_with(ReportBounds::FULL, TextChars::NoEscapes)
}

/// Bytes of a report's JSON that are not its text, at most, for `items` items a list: the
/// keys with their quotes and colons, the longest status word, brackets, braces, commas and
/// the quotes around each string, with one byte of whitespace between any two JSON tokens.
fn report_json_overhead(items: usize) -> usize {
    110 + 2 * items * 5
}

/// The widest report bounds whose JSON takes at most `tokens` bytes, whitespace counted at
/// one byte between JSON tokens (see [`report_json_overhead`]): the bounds of a wrap-up that
/// may generate `tokens`. Report text is printable ASCII, one byte a character, and a
/// sampled token writes at least one byte, so such a report cannot outgrow `tokens`.
pub fn report_bounds_for(tokens: u32) -> ReportBounds {
    let tokens = usize::try_from(tokens).unwrap_or(usize::MAX);
    let mut chars = tokens.saturating_sub(report_json_overhead(ReportBounds::FULL.items));
    loop {
        let bounds = ReportBounds::within(chars);
        let size = bounds.text_chars() + report_json_overhead(bounds.items);
        if size <= tokens || bounds == ReportBounds::MIN {
            return bounds;
        }
        chars = chars
            .min(bounds.text_chars())
            .saturating_sub(size - tokens)
            .min(chars - 1);
    }
}

/// A wrap-up's [`sampling_schema`]: every string and list kept within `bounds`, report text
/// printable ASCII (a character is a byte), so the widest report's size is known in bytes.
pub fn sampling_schema_within(bounds: ReportBounds) -> Value {
    sampling_schema_with(bounds, TextChars::Ascii)
}

/// Which characters sampled report text may hold (neither ever `"`, `\` or a control
/// character: see [`trimmed_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextChars {
    /// Any other character.
    NoEscapes,
    /// Printable ASCII only: a wrap-up's.
    Ascii,
}

fn sampling_schema_with(bounds: ReportBounds, chars: TextChars) -> Value {
    let mut base = schema_value();
    if let Some(map) = base.as_object_mut() {
        for key in ["$schema", "$id", "title", "description"] {
            map.remove(key);
        }
    }
    let limits = [
        ("/properties/summary", "maxLength", bounds.summary),
        ("/properties/blocker", "maxLength", bounds.blocker),
        ("/properties/evidence", "maxItems", bounds.items),
        ("/properties/evidence/items", "maxLength", bounds.item),
        ("/properties/next_steps", "maxItems", bounds.items),
        ("/properties/next_steps/items", "maxLength", bounds.item),
    ];
    for (pointer, key, max) in limits {
        if let Some(Value::Object(node)) = base.pointer_mut(pointer) {
            node.insert(key.into(), json!(max));
        }
    }
    for (pointer, max) in [
        ("/properties/summary", bounds.summary),
        ("/properties/evidence/items", bounds.item),
        ("/properties/next_steps/items", bounds.item),
    ] {
        if let Some(Value::Object(node)) = base.pointer_mut(pointer) {
            node.insert("pattern".into(), json!(trimmed_text(max, chars)));
        }
    }
    let branches: Vec<Value> = ReportStatus::ALL
        .iter()
        .map(|status| {
            let rule = status.rule();
            let mut branch = base.clone();
            if let Some(Value::Object(node)) = branch.pointer_mut("/properties/status") {
                node.insert("enum".into(), json!([status.as_str()]));
            }
            for (field, need, is_list) in [
                ("evidence", rule.evidence, true),
                ("next_steps", rule.next_steps, true),
                ("blocker", rule.blocker, false),
            ] {
                let pointer = format!("/properties/{field}");
                let Some(Value::Object(node)) = branch.pointer_mut(&pointer) else {
                    continue;
                };
                let (min, max) = if is_list {
                    ("minItems", "maxItems")
                } else {
                    ("minLength", "maxLength")
                };
                match need {
                    Need::Empty => {
                        node.insert(max.into(), json!(0));
                    }
                    Need::NonEmpty => {
                        node.insert(min.into(), json!(1));
                        if !is_list {
                            node.insert(
                                "pattern".into(),
                                json!(trimmed_text(bounds.blocker, chars)),
                            );
                        }
                    }
                    Need::Any => {}
                }
            }
            branch
        })
        .collect();
    json!({ "anyOf": branches })
}

/// The request's JSON text. An object's keys come sorted out of `serde_json`, and a server
/// samples inside a JSON Schema in the order its text lists the properties, so sorted keys
/// would have a model write a report's `blocker` first and its `status` last. Here the
/// report's fields keep the report's own order (status first) and `name` leads its object;
/// every other key stays sorted. The text parses back to the same value.
pub fn body_text(body: &Value) -> String {
    let mut out = String::new();
    write_ordered(body, &mut out);
    out
}

fn write_ordered(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let rank = |key: &str| {
                std::iter::once("name")
                    .chain(REPORT_FIELDS)
                    .position(|k| k == key)
                    .unwrap_or(usize::MAX)
            };
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(item) = map.get(key) {
                    write_ordered(item, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_ordered(item, out);
            }
            out.push(']');
        }
        leaf => out.push_str(&leaf.to_string()),
    }
}

/// A pattern for report text of 1 to `max` characters that neither starts nor ends with
/// whitespace (the report rules), as the llama backend's report grammar samples it. It leaves
/// out control characters, `"` and `\`: llama.cpp turns a pattern into a grammar over the
/// JSON text, where those would need escapes that the same pattern, read over the decoded
/// string as other servers read it, cannot express alike. A wrap-up's text is printable
/// ASCII besides, so a character is one byte and the report's size is bounded in bytes. A
/// server that cannot use a pattern still has `maxLength`, and the engine still validates.
fn trimmed_text(max: usize, chars: TextChars) -> String {
    let (edge, inner) = match chars {
        TextChars::NoEscapes => (r#"[^\x00-\x20"\\]"#, r#"[^\x00-\x1F"\\]"#),
        TextChars::Ascii => (
            r#"[\x21\x23-\x5B\x5D-\x7E]"#,
            r#"[\x20\x21\x23-\x5B\x5D-\x7E]"#,
        ),
    };
    format!("^{edge}({inner}{{0,{}}}{edge})?$", max.saturating_sub(2))
}

/// The id given to the `index`-th call of the assistant message at `message`.
fn call_id(message: usize, index: usize) -> String {
    format!("call_{message}_{index}")
}

/// The round's messages in the server's terms (see the module note).
pub fn wire_messages(messages: &[Message], format: &dyn ChatFormat) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    // Ids of the last assistant message's calls not yet answered by a tool message.
    let mut open: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::System => out.push(json!({"role": "system", "content": m.content})),
            Role::User => out.push(json!({"role": "user", "content": m.content})),
            Role::Assistant => {
                open.clear();
                let parsed = format.parse(&m.content);
                let calls: Vec<Value> = parsed
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(j, call)| {
                        let id = call_id(i, j);
                        open.push_back(id.clone());
                        let (name, arguments) = match call {
                            ParsedCall::Call { name, arguments } => {
                                (name.as_str(), arguments.to_string())
                            }
                            ParsedCall::Malformed { raw, .. } => ("(malformed)", raw.clone()),
                        };
                        json!({"id": id, "type": "function",
                               "function": {"name": name, "arguments": arguments}})
                    })
                    .collect();
                if calls.is_empty() {
                    out.push(json!({"role": "assistant", "content": m.content}));
                } else {
                    out.push(json!({"role": "assistant", "content": parsed.content,
                                    "tool_calls": calls}));
                }
            }
            Role::Tool => match open.pop_front() {
                Some(id) => out.push(json!({"role": "tool", "tool_call_id": id,
                                            "content": m.content})),
                // A result with no call to answer (cannot happen from the engine, which
                // answers every parsed call): the child still reads it, as a user turn.
                None => out.push(json!({"role": "user", "content": format!(
                    "[{} result]\n{}", m.name.as_deref().unwrap_or("tool"), m.content)})),
            },
        }
    }
    out
}

/// One streamed chunk (`data: {...}`), with only the fields we read; everything else a
/// server adds is ignored.
#[derive(Debug, Default, Deserialize)]
pub struct Chunk {
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Some servers report a failure inside the stream.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub delta: Option<Delta>,
    /// Servers that answer a streamed request with whole messages put it here.
    #[serde(default)]
    pub message: Option<Delta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Delta {
    #[serde(default)]
    pub content: Option<String>,
    /// llama-server, SGLang, DeepSeek, LM Studio.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// vLLM (and OpenRouter-style servers).
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ToolCallDelta {
    /// Missing on Ollama, which sends each call whole in one chunk.
    #[serde(default)]
    pub index: Option<usize>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    /// A fragment of the JSON text; some servers send the whole object instead.
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u32,
    #[serde(default)]
    pub completion_tokens: u32,
}

/// `GET /models`: the ids, and vLLM's `max_model_len` where a server gives one.
#[derive(Debug, Default, Deserialize)]
pub struct ModelList {
    #[serde(default)]
    pub data: Vec<ModelEntry>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ModelEntry {
    pub id: String,
    #[serde(default)]
    pub max_model_len: Option<u32>,
}

/// The server's own message in an error body (`{"error": {"message": ...}}`,
/// `{"error": "..."}`, `{"message": ...}` or `{"detail": ...}`), else the body's start.
pub fn error_message(body: &str) -> String {
    let from_value = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Object(map) => message_of(map),
            _ => None,
        }
    };
    fn message_of(map: &Map<String, Value>) -> Option<String> {
        ["message", "detail", "error"]
            .iter()
            .find_map(|k| map.get(*k))
            .and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Object(inner) => message_of(inner),
                other => Some(other.to_string()),
            })
    }
    let text = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("error")
                .and_then(from_value)
                .or_else(|| from_value(&v))
        })
        .unwrap_or_else(|| body.trim().to_string());
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::hermes::Hermes;

    #[test]
    fn calls_in_assistant_text_travel_as_tool_calls_answered_by_id() {
        let messages = vec![
            Message::new(Role::System, "sys"),
            Message::new(Role::User, "go"),
            Message::new(
                Role::Assistant,
                "Reading.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>",
            ),
            Message::tool("read_file", "contents"),
        ];
        let wire = wire_messages(&messages, &Hermes);
        assert_eq!(wire.len(), 4);
        assert_eq!(wire[2]["content"], "Reading.");
        assert_eq!(wire[2]["tool_calls"][0]["id"], "call_2_0");
        assert_eq!(wire[2]["tool_calls"][0]["function"]["name"], "read_file");
        let args: Value = serde_json::from_str(
            wire[2]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap_or(""),
        )
        .unwrap_or_default();
        assert_eq!(args, json!({"path": "a"}));
        assert_eq!(
            wire[3],
            json!({"role": "tool", "tool_call_id": "call_2_0", "content": "contents"})
        );
    }

    fn sampling() -> Sampling {
        Sampling {
            max_tokens: 8,
            temperature: 0.0,
            top_p: 1.0,
            seed: 1,
        }
    }

    fn tools() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "x".into(),
                description: "d".into(),
                parameters: json!({"type": "object", "properties": {"p": {"type": "string"}},
                                   "required": ["p"], "additionalProperties": false}),
            },
            ToolSpec {
                name: REPORT_TOOL.into(),
                description: "r".into(),
                parameters: schema_value(),
            },
        ]
    }

    #[test]
    fn each_turn_shape_asks_the_server_for_what_it_may_produce() {
        let tools = tools();
        let body = request_body(
            "m",
            &[],
            &tools,
            TurnShape::ReportOnly,
            &Hermes,
            &sampling(),
        );
        assert!(body.get("tools").is_none());
        assert_eq!(body["response_format"]["type"], "json_schema");
        // A wrap-up's report: the schema's rules, its text printable ASCII.
        assert_eq!(
            body["response_format"]["json_schema"]["schema"],
            sampling_schema_within(ReportBounds::FULL)
        );
        let summary = &body["response_format"]["json_schema"]["schema"]["anyOf"][0]["properties"]
            ["summary"]["pattern"];
        assert!(summary.as_str().unwrap().contains("\\x7E"), "{summary}");
        let body = request_body("m", &[], &tools, TurnShape::CallOnly, &Hermes, &sampling());
        assert!(body.get("tools").is_none());
        let schema = &body["response_format"]["json_schema"]["schema"];
        assert_eq!(schema, &call_schema(&tools));
        assert_eq!(schema["anyOf"][0]["required"], json!(["x"]));
        let body = request_body("m", &[], &tools, TurnShape::Open, &Hermes, &sampling());
        assert!(body.get("response_format").is_none());
        assert_eq!(body["tools"][0]["function"]["name"], "x");
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            tools[0].parameters
        );
        // Native tools go as the model should read them; the rules are sampled where a
        // turn must be a call.
        assert_eq!(body["tools"][1]["function"]["parameters"], schema_value());
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    #[test]
    fn a_call_only_turn_follows_two_turns_that_called_nothing() {
        let tools = tools();
        let mut messages = vec![
            Message::new(Role::System, "s"),
            Message::new(Role::User, "go"),
        ];
        let shape = |m: &[Message], f: &dyn ChatFormat| TurnShape::of(false, &tools, m, f);
        assert_eq!(shape(&messages, &Hermes), TurnShape::Open);
        messages.push(Message::new(
            Role::Assistant,
            "<tool_call>{\"name\": \"x\", \"arguments\": {\"p\": \"a\"}}</tool_call>",
        ));
        messages.push(Message::tool("x", "ok"));
        assert_eq!(shape(&messages, &Hermes), TurnShape::Open);
        // One turn that called nothing gets the nudge and stays open; a second makes the
        // next turn call-only.
        messages.push(Message::new(Role::Assistant, "Just talking."));
        messages.push(Message::new(Role::User, "call a tool"));
        assert_eq!(shape(&messages, &Hermes), TurnShape::Open);
        messages.push(Message::new(Role::Assistant, "Still talking."));
        messages.push(Message::new(Role::User, "call a tool"));
        assert_eq!(shape(&messages, &Hermes), TurnShape::CallOnly);
        // A format with nothing to trigger on is always call-only, as its grammar is
        // always required in the llama backend.
        let generic = crate::chat::by_name("generic").unwrap();
        assert_eq!(shape(&messages[..2], generic.as_ref()), TurnShape::CallOnly);
        assert_eq!(
            TurnShape::of(true, &tools, &messages, &Hermes),
            TurnShape::ReportOnly
        );
        assert_eq!(
            TurnShape::of(false, &[], &messages, &Hermes),
            TurnShape::Open
        );
    }

    /// The sampling schema admits a report exactly when the report rules do (within the
    /// bounds): a server that samples inside it cannot produce a report the engine rejects
    /// for its status.
    #[test]
    fn the_sampling_schema_admits_what_the_report_rules_admit() {
        use crate::protocol::report::{check_rules, Report};
        let schema = sampling_schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let texts = [json!(""), json!("why"), json!(" why")];
        let lists = [json!([]), json!(["a"]), json!(["a", "b"]), json!(["a "])];
        let mut checked = 0;
        for status in ["continue", "complete", "blocked"] {
            for evidence in &lists {
                for next_steps in &lists {
                    for blocker in &texts {
                        let report = json!({
                            "status": status, "summary": "did it", "evidence": evidence,
                            "next_steps": next_steps, "blocker": blocker,
                        });
                        let by_rules = serde_json::from_value::<Report>(report.clone())
                            .is_ok_and(|r| check_rules(&r).is_ok());
                        assert_eq!(validator.is_valid(&report), by_rules, "{report}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 144);
        let padded = json!({"status": "continue", "summary": "did it ", "evidence": [],
            "next_steps": ["go on"], "blocker": ""});
        assert!(!validator.is_valid(&padded));
        // The limit the README names: no `"` or `\` in sampled text.
        let quoted = json!({"status": "continue", "summary": "ran \"ls\"", "evidence": [],
            "next_steps": ["go on"], "blocker": ""});
        assert!(!validator.is_valid(&quoted));
        assert!(validator.is_valid(
            &json!({"status": "continue", "summary": "did it, then 'that'.",
            "evidence": [], "next_steps": ["go on"], "blocker": ""})
        ));
        let call = json!({REPORT_TOOL: {"status": "complete",
            "summary": "s", "evidence": ["e"], "next_steps": [], "blocker": ""}});
        let calls = jsonschema::validator_for(&call_schema(&tools())).unwrap();
        assert!(calls.is_valid(&call));
        assert!(calls.is_valid(&json!({"x": {"p": "a"}})));
        assert_eq!(
            call_of(&json!({"x": {"p": "a"}})),
            Some(("x", &json!({"p": "a"})))
        );
        assert!(!calls.is_valid(&json!({"x": {}})));
        assert!(!calls.is_valid(&json!({"y": {"p": "a"}})));
        assert!(!calls.is_valid(&json!({"x": {"p": "a"}, "z": {}})));
        assert_eq!(call_of(&json!({"x": {}, "z": {}})), None);
    }

    /// The widest report a wrap-up's schema allows, written as JSON with a space between
    /// every two JSON tokens, takes no more bytes than the tokens the wrap-up may generate.
    #[test]
    fn the_widest_report_within_the_bounds_fits_the_wrap_ups_tokens() {
        assert_eq!(report_bounds_for(3072), ReportBounds::FULL);
        for tokens in [625, 700, 900, 1_250, 2_000, 2_600] {
            let bounds = report_bounds_for(tokens);
            let items = |c: &str| vec![c.repeat(bounds.item); bounds.items];
            let report = json!({"status": "continue", "summary": "s".repeat(bounds.summary),
                "evidence": items("e"), "next_steps": items("n"), "blocker": "b".repeat(bounds.blocker)});
            let compact = report.to_string();
            let separators = compact.matches([',', ':', '[', ']', '{', '}']).count();
            let widest = compact.len() + "complete".len() - "continue".len() + 2 * separators;
            assert!(
                widest <= tokens as usize,
                "{tokens}: {widest} bytes, {bounds:?}"
            );
            assert!(validate_against(&sampling_schema_within(bounds), &report));
        }
    }

    fn validate_against(schema: &Value, report: &Value) -> bool {
        let mut report = report.clone();
        // The widest status that allows every field filled.
        report["status"] = json!("blocked");
        jsonschema::validator_for(schema).unwrap().is_valid(&report)
    }

    #[test]
    fn error_bodies_give_the_servers_own_line() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad\n thing","code":400}}"#),
            "bad thing"
        );
        assert_eq!(
            error_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(error_message(r#"{"detail":"nope"}"#), "nope");
        assert_eq!(error_message("plain text"), "plain text");
    }

    #[test]
    fn the_body_text_lists_the_reports_fields_in_the_reports_order() {
        let tools = tools();
        for shape in [TurnShape::ReportOnly, TurnShape::CallOnly] {
            let body = request_body("m", &[], &tools, shape, &Hermes, &sampling());
            let text = body_text(&body);
            let back: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(back, body, "{shape:?}: the same value");
            // Every report schema branch: status first, blocker last, as the report reads.
            let mut from = 0;
            let mut branches = 0;
            while let Some(at) = text[from..].find("\"properties\":{\"status\"") {
                let start = from + at;
                let branch = &text[start..];
                let order: Vec<usize> = REPORT_FIELDS
                    .iter()
                    .map(|f| branch.find(&format!("\"{f}\":{{")).unwrap())
                    .collect();
                assert!(
                    order.windows(2).all(|w| w[0] < w[1]),
                    "{shape:?}: {order:?}"
                );
                branches += 1;
                from = start + 1;
            }
            assert_eq!(branches, 3, "{shape:?}: one branch per status");
        }
        assert_eq!(
            body_text(&json!({"arguments": {}, "name": "x", "b": [1, "two"], "a": null})),
            r#"{"name":"x","a":null,"arguments":{},"b":[1,"two"]}"#
        );
    }
}
