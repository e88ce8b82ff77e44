//! Chat templates: a model's own Jinja template (GGUF `tokenizer.chat_template`), rendered
//! faithfully.
//!
//! Models ship the template they were trained with; rendering it the way Hugging Face
//! `transformers` does (Jinja2 with `trim_blocks` and `lstrip_blocks`, `messages`, `tools`,
//! `add_generation_prompt`, `bos_token`, `eos_token`, `raise_exception`, `strftime_now`, a
//! `tojson` that writes Python's `json.dumps` layout) is what keeps a prompt in the shape the
//! model expects. MiniJinja lacks Python's string and dict methods, which many templates call
//! (`.strip()`, `.startswith()`, `.items()`, ...); the common ones are supplied here. This module
//! has no llama.cpp dependency, so it is tested on its own.

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

fn no_method() -> Error {
    Error::from(ErrorKind::UnknownMethod)
}

fn str_arg(args: &[Value], index: usize) -> Option<&str> {
    args.get(index).and_then(Value::as_str)
}

fn strip_with<'a>(text: &'a str, chars: Option<&str>, left: bool, right: bool) -> &'a str {
    let matches = |c: char| match chars {
        Some(set) => set.contains(c),
        None => c.is_whitespace(),
    };
    let mut out = text;
    if left {
        out = out.trim_start_matches(matches);
    }
    if right {
        out = out.trim_end_matches(matches);
    }
    out
}

/// Prefix/suffix tests accept one string or a sequence of strings, as in Python.
fn affix_test(arg: Option<&Value>, test: impl Fn(&str) -> bool) -> Result<Value, Error> {
    let Some(arg) = arg else {
        return Err(Error::from(ErrorKind::MissingArgument));
    };
    if let Some(s) = arg.as_str() {
        return Ok(Value::from(test(s)));
    }
    for item in arg.try_iter()? {
        if item.as_str().is_some_and(&test) {
            return Ok(Value::from(true));
        }
    }
    Ok(Value::from(false))
}

fn string_method(text: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    let out = match method {
        "strip" => Value::from(strip_with(text, str_arg(args, 0), true, true)),
        "lstrip" => Value::from(strip_with(text, str_arg(args, 0), true, false)),
        "rstrip" => Value::from(strip_with(text, str_arg(args, 0), false, true)),
        "upper" => Value::from(text.to_uppercase()),
        "lower" => Value::from(text.to_lowercase()),
        "startswith" => return affix_test(args.first(), |p| text.starts_with(p)),
        "endswith" => return affix_test(args.first(), |p| text.ends_with(p)),
        "replace" => {
            let (Some(old), Some(new)) = (str_arg(args, 0), str_arg(args, 1)) else {
                return Err(Error::from(ErrorKind::MissingArgument));
            };
            match args.get(2).and_then(Value::as_usize) {
                Some(count) => Value::from(text.replacen(old, new, count)),
                None => Value::from(text.replace(old, new)),
            }
        }
        "split" => {
            let parts: Vec<Value> = match str_arg(args, 0) {
                Some(sep) => text.split(sep).map(Value::from).collect(),
                None => text.split_whitespace().map(Value::from).collect(),
            };
            Value::from(parts)
        }
        "find" => {
            let needle = str_arg(args, 0).ok_or_else(|| Error::from(ErrorKind::MissingArgument))?;
            let at = text
                .find(needle)
                .map(|i| text[..i].chars().count() as i64)
                .unwrap_or(-1);
            Value::from(at)
        }
        "count" => {
            let needle = str_arg(args, 0).ok_or_else(|| Error::from(ErrorKind::MissingArgument))?;
            Value::from(text.matches(needle).count())
        }
        "join" => {
            let items = args
                .first()
                .ok_or_else(|| Error::from(ErrorKind::MissingArgument))?;
            let parts: Vec<String> = items.try_iter()?.map(|v| v.to_string()).collect();
            Value::from(parts.join(text))
        }
        "title" => {
            let mut out = String::with_capacity(text.len());
            let mut start = true;
            for c in text.chars() {
                if start {
                    out.extend(c.to_uppercase());
                } else {
                    out.extend(c.to_lowercase());
                }
                start = !c.is_alphanumeric();
            }
            Value::from(out)
        }
        _ => return Err(no_method()),
    };
    Ok(out)
}

fn map_method(state: &State, map: &Value, method: &str, args: &[Value]) -> Result<Value, Error> {
    match method {
        "items" => state.apply_filter("items", std::slice::from_ref(map)),
        "keys" => Ok(Value::from(map.try_iter()?.collect::<Vec<_>>())),
        "values" => {
            let values: Result<Vec<Value>, Error> =
                map.try_iter()?.map(|k| map.get_item(&k)).collect();
            Ok(Value::from(values?))
        }
        "get" => {
            let key = args
                .first()
                .ok_or_else(|| Error::from(ErrorKind::MissingArgument))?;
            let value = map.get_item(key)?;
            if value.is_undefined() {
                Ok(args.get(1).cloned().unwrap_or(Value::from(())))
            } else {
                Ok(value)
            }
        }
        _ => Err(no_method()),
    }
}

/// The Python methods templates commonly call.
fn python_method(
    state: &State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    match value.kind() {
        ValueKind::String => string_method(value.as_str().unwrap_or_default(), method, args),
        ValueKind::Map => map_method(state, value, method, args),
        _ => Err(no_method()),
    }
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
