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

use crate::chat::{ChatFormat, ParsedCall};
use crate::protocol::message::{Message, Role};
use crate::protocol::report::{
    schema_value, REPORT_BLOCKER_MAX, REPORT_ITEMS_MAX, REPORT_ITEM_MAX, REPORT_SUMMARY_MAX,
};
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};

/// Sampling settings sent with every request.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u32,
}

/// The body of one streamed `POST /chat/completions`.
///
/// A report-only turn has no `tools` and a `response_format` with the report's JSON Schema;
/// any other turn has the native `tools` and no grammar (llama-server refuses both at once).
pub fn request_body(
    model: &str,
    messages: &[Message],
    tools: &[ToolSpec],
    report_only: bool,
    format: &dyn ChatFormat,
    sampling: &Sampling,
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
    if let Some(map) = body.as_object_mut() {
        if report_only {
            map.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {"name": REPORT_TOOL, "strict": true, "schema": sampling_schema()},
                }),
            );
        } else if !tools.is_empty() {
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect();
            map.insert("tools".into(), Value::Array(tools));
        }
    }
    body
}

/// The report's schema with every string and list bounded by the report rules: a server
/// samples inside it, and an unbounded string or list lets a small model loop to the token
/// cap. The engine still validates against the full schema and rules.
pub fn sampling_schema() -> Value {
    let mut schema = schema_value();
    let bounds = [
        ("/properties/summary", "maxLength", REPORT_SUMMARY_MAX),
        ("/properties/blocker", "maxLength", REPORT_BLOCKER_MAX),
        ("/properties/evidence", "maxItems", REPORT_ITEMS_MAX),
        ("/properties/evidence/items", "maxLength", REPORT_ITEM_MAX),
        ("/properties/next_steps", "maxItems", REPORT_ITEMS_MAX),
        ("/properties/next_steps/items", "maxLength", REPORT_ITEM_MAX),
    ];
    for (pointer, key, max) in bounds {
        if let Some(Value::Object(node)) = schema.pointer_mut(pointer) {
            node.insert(key.into(), json!(max));
        }
    }
    schema
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

    #[test]
    fn report_only_turns_carry_a_schema_and_no_tools() {
        let sampling = Sampling {
            max_tokens: 8,
            temperature: 0.0,
            top_p: 1.0,
            seed: 1,
        };
        let tools = vec![ToolSpec {
            name: "x".into(),
            description: "d".into(),
            parameters: json!({}),
        }];
        let body = request_body("m", &[], &tools, true, &Hermes, &sampling);
        assert!(body.get("tools").is_none());
        assert_eq!(body["response_format"]["type"], "json_schema");
        let schema = &body["response_format"]["json_schema"]["schema"];
        assert_eq!(schema["required"], schema_value()["required"]);
        assert_eq!(
            schema["properties"]["evidence"]["maxItems"],
            REPORT_ITEMS_MAX
        );
        assert_eq!(
            schema["properties"]["summary"]["maxLength"],
            REPORT_SUMMARY_MAX
        );
        let body = request_body("m", &[], &tools, false, &Hermes, &sampling);
        assert!(body.get("response_format").is_none());
        assert_eq!(body["tools"][0]["function"]["name"], "x");
        assert_eq!(body["stream_options"]["include_usage"], true);
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
}
