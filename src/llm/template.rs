//! Chat templates: a model's own Jinja template (GGUF `tokenizer.chat_template`), rendered
//! faithfully.
//!
//! Models ship the template they were trained with; rendering it the way Hugging Face
//! `transformers` does (Jinja2 with `trim_blocks` and `lstrip_blocks`, `messages`, `tools`,
//! `add_generation_prompt`, `bos_token`, `eos_token`, `raise_exception`, `strftime_now`, a
//! `tojson` that writes Python's `json.dumps` layout) is what keeps a prompt in the shape the
//! model expects. MiniJinja lacks Python's string and dict methods, which many templates call
//! (`.strip()`, `.startswith()`, `.items()`, ...); `minijinja-contrib`'s pycompat supplies them
//! (with one guard, `python_method`).
//! `tojson` and `strftime_now` are ours, as `transformers` defines them. This module has no
//! llama.cpp dependency, so it is tested on its own.

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State};
use serde::Serialize;

use crate::protocol::message::{Message, Role};
use crate::protocol::tool::ToolSpec;

/// Why a template could not be compiled or rendered, in words fit for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

const TEMPLATE_NAME: &str = "chat";

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    uses_tools: bool,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("uses_tools", &self.uses_tools)
            .finish_non_exhaustive()
    }
}

/// One message as chat templates see it.
#[derive(Debug, Serialize)]
struct TemplateMessage<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

/// One tool in the OpenAI layout templates expect.
#[derive(Debug, Serialize)]
struct TemplateTool<'a> {
    r#type: &'static str,
    function: &'a ToolSpec,
}

/// The role name templates use.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

impl ChatTemplate {
    /// Compiles `source`; `bos_token` and `eos_token` are the model's token texts.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_keep_trailing_newline(false);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        env.set_unknown_method_callback(python_method);
        env.add_template_owned(TEMPLATE_NAME, source.to_string())
            .map_err(|e| TemplateError(format!("the chat template does not compile: {e}")))?;
        let uses_tools = source.contains("tools");
        Ok(Self {
            env,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
            uses_tools,
        })
    }

    /// Whether the template refers to `tools` at all.
    pub fn uses_tools(&self) -> bool {
        self.uses_tools
    }

    /// Renders a conversation, ending with the assistant's generation prompt. `tools` is given
    /// to the template only when `Some`.
    pub fn render(
        &self,
        messages: &[Message],
        tools: Option<&[ToolSpec]>,
    ) -> Result<String, TemplateError> {
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| TemplateError(e.to_string()))?;
        let messages: Vec<TemplateMessage<'_>> = messages
            .iter()
            .map(|m| TemplateMessage {
                role: role_name(m.role),
                content: &m.content,
                name: m.name.as_deref(),
            })
            .collect();
        let tools: Option<Vec<TemplateTool<'_>>> = tools.map(|tools| {
            tools
                .iter()
                .map(|function| TemplateTool {
                    r#type: "function",
                    function,
                })
                .collect()
        });
        let ctx = minijinja::context! {
            messages => Value::from_serialize(&messages),
            tools => tools.map(|t| Value::from_serialize(&t)),
            add_generation_prompt => true,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
        };
        template.render(ctx).map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(inner) = source {
                text.push_str(": ");
                text.push_str(&inner.to_string());
                source = inner.source();
            }
            TemplateError(format!("the chat template failed: {text}"))
        })
    }
}

/// Python's string and dict methods, from pycompat, but for `str.count('')`: pycompat's loop
/// never ends on an empty needle (minijinja-contrib 2.24), and a model's template must not
/// hang the run. Python answers the length plus one.
fn python_method(
    state: &State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if let (ValueKind::String, "count", [needle]) = (value.kind(), method, args) {
        if needle.as_str() == Some("") {
            let chars = value.as_str().map_or(0, |s| s.chars().count());
            return Ok(Value::from(chars + 1));
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(
        ErrorKind::InvalidOperation,
        format!("the template raised: {message}"),
    ))
}

fn strftime_now(format: String) -> String {
    chrono::Local::now().format(&format).to_string()
}

/// `tojson` as `transformers` defines it: `json.dumps(ensure_ascii=False)`, no HTML escaping.
fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match indent {
        Some(indent) => Some(indent),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    // Python-only options that do not change our output.
    let _: Option<Value> = kwargs.get("ensure_ascii")?;
    let _: Option<Value> = kwargs.get("sort_keys")?;
    let _: Option<Value> = kwargs.get("separators")?;
    kwargs.assert_all_used()?;
    let indent = indent.filter(|v| !v.is_none()).and_then(|v| v.as_usize());
    let serialize_error =
        |e| Error::new(ErrorKind::InvalidOperation, "cannot serialize to JSON").with_source(e);
    let text = match indent {
        Some(n) => {
            let pad = " ".repeat(n);
            let formatter = serde_json::ser::PrettyFormatter::with_indent(pad.as_bytes());
            let mut out = Vec::new();
            value
                .serialize(&mut serde_json::Serializer::with_formatter(
                    &mut out, formatter,
                ))
                .map_err(serialize_error)?;
            String::from_utf8(out)
                .map_err(|_| Error::new(ErrorKind::InvalidOperation, "JSON is not UTF-8"))?
        }
        None => crate::text::python_json(value).map_err(serialize_error)?,
    };
    Ok(Value::from_safe_string(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CHATML: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    fn convo() -> Vec<Message> {
        vec![
            Message::new(Role::System, "Be brief."),
            Message::new(Role::User, "Hi"),
        ]
    }

    #[test]
    fn renders_chatml_with_the_generation_prompt() {
        let t = ChatTemplate::new(CHATML, "<|im_start|>", "<|im_end|>").unwrap();
        let out = t.render(&convo(), None).unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
        assert!(!t.uses_tools());
    }

    #[test]
    fn python_methods_tojson_and_raise_exception_work() {
        let src = "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' and not m.content.strip().startswith(('H', 'X')) %}{{ raise_exception('bad user turn') }}{% endif %}[{{ m.role.upper() }}] {{ m.content.rstrip('.') }}\n{% endfor %}{% if tools %}{% for t in tools %}{{ t.function | tojson }}{% endfor %}{% endif %}";
        let t = ChatTemplate::new(src, "<s>", "</s>").unwrap();
        let tools = vec![ToolSpec {
            name: "read_file".into(),
            description: "Read <a> file".into(),
            parameters: json!({"type": "object"}),
        }];
        let out = t.render(&convo(), Some(&tools)).unwrap();
        assert_eq!(
            out,
            "<s>[SYSTEM] Be brief\n[USER] Hi\n{\"name\": \"read_file\", \"description\": \"Read <a> file\", \"parameters\": {\"type\": \"object\"}}"
        );
        let bad = vec![Message::new(Role::User, "nope")];
        let err = t.render(&bad, None).unwrap_err();
        assert!(err.0.contains("bad user turn"), "{err}");
    }

    #[test]
    fn dict_and_string_methods_of_thinking_and_tool_templates_work() {
        // The calls Qwen3, DeepSeek R1, GLM and Hermes templates make on messages and tools.
        let src = "{% for m in messages %}{{ m.get('name', 'none') }}|{{ m.content.split('</think>')[-1].lstrip('\\n') }}|{{ m.content.split('/', 1) | length }}\n{% endfor %}{% for k, v in tools[0].function.parameters.items() %}{{ '{}={}'.format(k, v) }};{% endfor %}{{ messages[0].content.replace('/', ':', 1) }}";
        let t = ChatTemplate::new(src, "", "").unwrap();
        let tools = vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "required": ["path"]}),
        }];
        let messages = vec![
            Message::new(Role::Assistant, "<think>a/b</think>\n\nc/d/e"),
            Message::tool("read_file", "x"),
        ];
        let out = t.render(&messages, Some(&tools)).unwrap();
        assert_eq!(
            out,
            "none|c/d/e|2\nread_file|x|1\nrequired=[\"path\"];type=object;<think>a:b</think>\n\nc/d/e"
        );
    }

    #[test]
    fn counting_an_empty_needle_ends() {
        let t =
            ChatTemplate::new("{{ 'héllo'.count('') }} {{ 'a-b-c'.count('-') }}", "", "").unwrap();
        assert_eq!(t.render(&convo(), None).unwrap(), "6 2");
    }

    #[test]
    fn trim_and_lstrip_blocks_follow_transformers() {
        let src = "{% for m in messages %}\n    {% if m.role == 'user' %}\nU:{{ m.content }}\n    {% endif %}\n{% endfor %}";
        let t = ChatTemplate::new(src, "", "").unwrap();
        assert_eq!(t.render(&convo(), None).unwrap(), "U:Hi\n");
    }

    #[test]
    fn syntax_errors_are_reported() {
        let err = ChatTemplate::new("{% for %}", "", "").unwrap_err();
        assert!(err.0.contains("does not compile"), "{err}");
    }
}
