//! The OpenAI-compatible backend (`--backend openai:URL`): llama-server, vLLM, SGLang,
//! Ollama and LM Studio, through streamed chat completions.
//!
//! Crates: `reqwest` (with `rustls`, so no system OpenSSL is needed) is the HTTP client and
//! `eventsource-stream` turns its byte stream into server-sent events; the request and chunk
//! types are our own (`wire`), because each server adds and omits fields of its own (vLLM's
//! `reasoning`, Ollama's whole-call chunks) and we read only what we use. `async-openai`
//! would bring its own types for every endpoint and still need ours for those differences.
//! No HTTP or SSE parsing is written here.
//!
//! The engine is blocking on its own thread, so the backend owns a small tokio runtime (one
//! worker, which keeps connections going between calls) and each turn is one `block_on`: a `select!` on the next event, the round's
//! cancel token and a stall timer (`--request-timeout` since the last byte). A cancel drops
//! the stream, which closes the connection; servers stop generating when the client goes.
//!
//! A round is a fresh conversation: each request carries exactly the round's messages
//! (`wire`), so nothing crosses rounds here either. Setup problems (server unreachable, bad
//! key, unknown model) are usage errors before the run starts; the same problems during a
//! round fail the round with one line.

mod stream;
pub mod wire;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use self::stream::Assembly;
use self::wire::{ModelList, Sampling, TurnShape};
use super::{Backend, BackendError, BackendInfo, Child, Generation, Output, Request, StopReason};
use crate::chat::{self, ChatFormat};
use crate::error::UsageError;
use crate::protocol::report::{turn_cap, ReportBounds};

/// Most attempts at one request when the server answers 429 or 5xx.
const MAX_ATTEMPTS: u32 = 4;
/// The first wait before a retry; it doubles each time.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait a `Retry-After` header may ask for.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long the context-size probes may take each.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Bytes a token assumed for what a conversation gained since the server last counted it.
const ADDED_BYTES_PER_TOKEN: usize = 3;
/// Most tokens a wrap-up turn asks for: what the widest report's JSON can take.
const REPORT_MAX_TOKENS: u32 = 3072;

/// What `--backend openai:URL` and its options ask for.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL up to and including `/v1`.
    pub url: String,
    /// `-m`: the server's model name; `None` takes the first the server lists.
    pub model: Option<String>,
    /// `--api-key-env`: the variable that holds the key (the key itself is never kept
    /// anywhere but the request header).
    pub api_key_env: String,
    pub request_timeout: Duration,
    /// `--ctx-size` where the person gave one (command line, config file or the resumed
    /// run), used when the server does not tell its context size. A server that does not
    /// tell, with no `--ctx-size`, is refused: the report's reserve cannot be kept in a
    /// context of unknown size.
    pub ctx_fallback: Option<u32>,
    /// `--chat-format`: the syntax native calls are rendered in and text calls parsed with.
    pub chat_format: Option<String>,
    pub sampling: Sampling,
}

/// One line that says what went wrong with the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    #[error("cannot reach the server at {url}: connection refused (is it running?)")]
    Refused { url: String },
    #[error("cannot find the server's host '{host}' (DNS lookup failed)")]
    Dns { host: String },
    #[error("cannot reach the server at {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error(
        "the server wants an API key (HTTP {status}): put it in the environment variable {var}"
    )]
    NoKey { status: u16, var: String },
    #[error("the server refused the API key in {var} (HTTP {status})")]
    BadKey { status: u16, var: String },
    #[error("the server has no model '{model}'; it has: {available}")]
    NoModel { model: String, available: String },
    #[error("the server lists no models: name one with -m")]
    NoModels,
    #[error("the server rejected the request (HTTP {status}): {message}")]
    Rejected { status: u16, message: String },
    #[error("the server kept failing (HTTP {status}) after {attempts} attempts: {message}")]
    Unavailable {
        status: u16,
        attempts: u32,
        message: String,
    },
    #[error("the server's stream ended mid-turn{detail}")]
    Truncated { detail: String },
    #[error("the server sent a malformed event: {0}")]
    Malformed(String),
    #[error("the server's response had no choices")]
    NoChoices,
    #[error("the server reported an error mid-stream: {0}")]
    InStream(String),
    #[error("the server sent nothing for {0} s (--request-timeout)")]
    Stalled(u64),
}

impl From<ServerError> for BackendError {
    fn from(e: ServerError) -> Self {
        BackendError::Server(e.to_string())
    }
}

impl From<ServerError> for UsageError {
    fn from(e: ServerError) -> Self {
        UsageError::Invalid(e.to_string())
    }
}

/// A connected server and the model a run uses on it.
pub struct OpenAiBackend {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    url: String,
    key: Option<String>,
    key_var: String,
    model: String,
    host: String,
    ctx_size: u32,
    format: Box<dyn ChatFormat>,
    sampling: Sampling,
    timeout: Duration,
    native_tools: bool,
    /// llama-server (it answered `/props`): a wrap-up is sampled under our own report
    /// grammar (`grammar`), whose longest text is known to the byte, rather than under the
    /// report's JSON Schema, whose whitespace the server's own grammar leaves open.
    llama_server: bool,
    /// The server counts a request's prompt itself (llama-server's `/apply-template` and
    /// `/tokenize`); cleared the first time that fails, and the estimate is used from then on.
    counts_prompts: AtomicBool,
}

/// What llama-server's `/props` tells; every field `None` on other servers.
#[derive(Debug, Default)]
struct ServerProps {
    ctx_size: Option<u32>,
    template: Option<String>,
    shows_tools: Option<bool>,
}

impl std::fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is left out on purpose.
        f.debug_struct("OpenAiBackend")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("ctx_size", &self.ctx_size)
            .finish_non_exhaustive()
    }
}

impl OpenAiBackend {
    /// Reaches the server, picks the model and finds the context size. Every failure is a
    /// usage error of one line (the run has not started).
    pub fn connect(config: OpenAiConfig) -> Result<Self, UsageError> {
        let mut backend = Self::unconnected(&config)?;
        let (model, listed) = backend.pick_model(config.model.as_deref())?;
        backend.model = model;
        let props = backend.props();
        // llama-server (the server with `/props`) counts a prompt exactly and samples under a
        // grammar of ours.
        backend.llama_server = props.ctx_size.is_some();
        backend
            .counts_prompts
            .store(backend.llama_server, Ordering::Relaxed);
        backend.ctx_size = listed
            .or(props.ctx_size)
            .or_else(|| backend.ollama_ctx())
            .or(config.ctx_fallback)
            .ok_or_else(|| {
                UsageError::Invalid(format!(
                    "the server at {} does not say its context size (no /props, max_model_len or /api/ps): give it with --ctx-size",
                    backend.url
                ))
            })?;
        // `--chat-format auto`: the format the server's template shows calls in, where the
        // server says (llama-server); else hermes, the most common native rendering.
        if matches!(config.chat_format.as_deref(), None | Some("auto")) {
            // A Qwen Coder model writes fenced calls whatever the template teaches; its name
            // tells, even where the server does not show its template.
            let name = chat::detect(props.template.as_deref(), None, Some(&backend.model));
            if props.template.is_some() || name == "qwen-coder" {
                if let Some(format) = chat::by_name(name) {
                    backend.format = format;
                }
            }
        }
        // A template that cannot show tools (llama-server says so) needs them spelled out in
        // the system prompt, and its calls come back as text.
        backend.native_tools = props.shows_tools != Some(false);
        tracing::info!(
            url = %backend.url,
            model = %backend.model,
            ctx_size = backend.ctx_size,
            chat_format = backend.format.name(),
            native_tools = backend.native_tools,
            key = backend.key.is_some(),
            "openai backend connected"
        );
        Ok(backend)
    }

    /// The backend before it has asked the server anything: the HTTP runtime and client, the
    /// key, the chat format as configured (hermes for `auto`, settled by `connect`), no model
    /// and no context size yet.
    fn unconnected(config: &OpenAiConfig) -> Result<Self, UsageError> {
        // One worker thread: the turn itself runs on the engine's thread inside `block_on`,
        // and the worker keeps the connections going between calls (so a dropped stream is
        // closed at once, not at the next request).
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ralph-http")
            .enable_all()
            .build()
            .map_err(|e| UsageError::Invalid(format!("cannot start the HTTP runtime: {e}")))?;
        let client = reqwest::Client::builder()
            .connect_timeout(config.request_timeout)
            .build()
            .map_err(|e| UsageError::Invalid(format!("cannot set up the HTTP client: {e}")))?;
        let key = std::env::var(&config.api_key_env)
            .ok()
            .filter(|k| !k.trim().is_empty());
        let host = reqwest::Url::parse(&config.url)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| u.port().map_or(h.to_string(), |p| format!("{h}:{p}")))
            })
            .unwrap_or_else(|| config.url.clone());
        let format_name = match config.chat_format.as_deref() {
            None | Some("auto") => "hermes",
            Some(name) => name,
        };
        let format = chat::by_name(format_name)
            .ok_or_else(|| UsageError::Invalid(format!("unknown chat format '{format_name}'")))?;
        Ok(Self {
            runtime,
            client,
            url: config.url.clone(),
            key,
            key_var: config.api_key_env.clone(),
            model: String::new(),
            host,
            ctx_size: 0,
            format,
            sampling: config.sampling.clone(),
            timeout: config.request_timeout,
            native_tools: true,
            counts_prompts: AtomicBool::new(false),
            llama_server: false,
        })
    }

    /// The served model to use: `wanted` (also as `wanted:latest`) or the first listed; and
    /// the context size the list gives for it, if any.
    fn pick_model(&self, wanted: Option<&str>) -> Result<(String, Option<u32>), ServerError> {
        let models = self.block_on_models()?;
        let model = match wanted {
            Some(name) => models
                .data
                .iter()
                .find(|m| m.id == name || m.id == format!("{name}:latest"))
                .map(|m| m.id.clone())
                .ok_or_else(|| ServerError::NoModel {
                    model: name.to_string(),
                    available: list(&models),
                })?,
            None => models
                .data
                .first()
                .map(|m| m.id.clone())
                .ok_or(ServerError::NoModels)?,
        };
        let listed = models
            .data
            .iter()
            .find(|m| m.id == model)
            .and_then(|m| m.max_model_len);
        Ok((model, listed))
    }

    /// The request body of one turn. A wrap-up's report is never cut: it may take the
    /// context left (the engine keeps the report's reserve free), up to what the widest
    /// report needs, and the schema (or, on llama-server, a grammar) bounds the report to fit
    /// that. An ordinary turn stops where the report's reserve and the turn margin would
    /// still be free.
    fn turn_body(&self, request: &Request<'_>, shape: TurnShape, estimate: u32) -> Value {
        let mut sampling = self.sampling.clone();
        let mut report = ReportBounds::FULL;
        let mut grammar = None;
        if shape == TurnShape::ReportOnly {
            let room = self.ctx_size.saturating_sub(estimate);
            sampling.max_tokens = room.clamp(1, REPORT_MAX_TOKENS);
            if self.llama_server {
                let room = usize::try_from(sampling.max_tokens).unwrap_or(usize::MAX);
                let (gbnf, bounds, _) = chat::report_json_grammar_within(room);
                report = bounds;
                grammar = Some(gbnf);
            } else {
                report = wire::report_bounds_for(sampling.max_tokens);
            }
        } else {
            let wanted = request.max_tokens.unwrap_or(sampling.max_tokens);
            sampling.max_tokens = turn_cap(self.ctx_size, estimate, wanted).max(1);
        }
        let mut body = wire::request_body_within(
            &self.model,
            request.messages,
            request.tools,
            shape,
            self.format.as_ref(),
            &sampling,
            report,
        );
        if let Some(gbnf) = grammar {
            wire::sample_under_grammar(&mut body, gbnf);
        }
        body
    }

    /// The model name in use.
    pub fn model(&self) -> &str {
        &self.model
    }

    fn block_on_models(&self) -> Result<ModelList, ServerError> {
        self.runtime.block_on(self.models())
    }

    async fn models(&self) -> Result<ModelList, ServerError> {
        let url = format!("{}/models", self.url);
        let response = self
            .authorized(self.client.get(&url))
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| self.transport(&e))?;
        let status = response.status();
        let body = response.text().await.map_err(|e| self.transport(&e))?;
        if !status.is_success() {
            return Err(self.status_error(status, &body, 1));
        }
        serde_json::from_str(&body).map_err(|e| ServerError::Rejected {
            status: status.as_u16(),
            message: format!("GET /models is not a model list ({e})"),
        })
    }

    /// What llama-server's `/props` says of its model: context size, chat template and
    /// whether that template shows tools. Other servers have no `/props`: nothing.
    fn props(&self) -> ServerProps {
        let origin = self.url.trim_end_matches("/v1").to_string();
        let Some(props) = self
            .runtime
            .block_on(self.probe(&format!("{origin}/props")))
        else {
            return ServerProps::default();
        };
        ServerProps {
            ctx_size: props
                .pointer("/default_generation_settings/n_ctx")
                .or_else(|| props.get("n_ctx"))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
            template: props
                .get("chat_template")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string),
            shows_tools: props
                .pointer("/chat_template_caps/supports_tools")
                .and_then(Value::as_bool),
        }
    }

    /// The context size from Ollama's `/api/ps` (vLLM's `max_model_len` comes with the
    /// model list, llama-server's with `/props`).
    fn ollama_ctx(&self) -> Option<u32> {
        let origin = self.url.trim_end_matches("/v1").to_string();
        self.runtime.block_on(async {
            let ps = self.probe(&format!("{origin}/api/ps")).await?;
            ps.get("models")?
                .as_array()?
                .iter()
                .find(|m| {
                    m.get("name").and_then(Value::as_str) == Some(self.model.as_str())
                        || m.get("model").and_then(Value::as_str) == Some(self.model.as_str())
                })
                .and_then(|m| m.get("context_length"))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        })
    }

    /// The server's own count of the prompt of the chat request `body`: llama-server's chat
    /// template applied to it (`POST /apply-template`), then tokenized (`POST /tokenize`).
    /// `None` when the server cannot say (the backend then estimates from now on).
    fn count_prompt(&self, body: &str) -> Option<u32> {
        if !self.counts_prompts.load(Ordering::Relaxed) {
            return None;
        }
        let origin = self.url.trim_end_matches("/v1");
        let count = self.runtime.block_on(async {
            let rendered = self
                .post_probe(&format!("{origin}/apply-template"), body.to_string())
                .await?;
            let prompt = rendered.get("prompt")?.as_str()?;
            let tokens = self
                .post_probe(
                    &format!("{origin}/tokenize"),
                    serde_json::json!({ "content": prompt }).to_string(),
                )
                .await?;
            u32::try_from(tokens.get("tokens")?.as_array()?.len()).ok()
        });
        if count.is_none() {
            tracing::info!("the server does not count prompts; estimating them");
            self.counts_prompts.store(false, Ordering::Relaxed);
        }
        count
    }

    async fn post_probe(&self, url: &str, body: String) -> Option<Value> {
        self.probe_json(
            self.client
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body),
        )
        .await
    }

    async fn probe(&self, url: &str) -> Option<Value> {
        self.probe_json(self.client.get(url)).await
    }

    /// Sends a probe (authorized, within [`PROBE_TIMEOUT`]): its JSON answer, or `None` on
    /// any failure.
    async fn probe_json(&self, request: reqwest::RequestBuilder) -> Option<Value> {
        let response = self
            .authorized(request)
            .timeout(PROBE_TIMEOUT)
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let text = response.text().await.ok()?;
        serde_json::from_str(&text).ok()
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    /// A transport failure in one line.
    fn transport(&self, e: &reqwest::Error) -> ServerError {
        if e.is_timeout() {
            return ServerError::Stalled(self.timeout.as_secs());
        }
        let chain = error_chain(e);
        if e.is_connect() {
            if chain.contains("dns error") || chain.contains("failed to lookup address") {
                return ServerError::Dns {
                    host: self.host.clone(),
                };
            }
            if chain.contains("Connection refused") || chain.contains("connection refused") {
                return ServerError::Refused {
                    url: self.url.clone(),
                };
            }
        }
        ServerError::Connect {
            url: self.url.clone(),
            detail: chain,
        }
    }

    /// A non-success status in one line.
    fn status_error(&self, status: StatusCode, body: &str, attempts: u32) -> ServerError {
        let code = status.as_u16();
        let message = wire::error_message(body);
        match code {
            401 | 403 if self.key.is_none() => ServerError::NoKey {
                status: code,
                var: self.key_var.clone(),
            },
            401 | 403 => ServerError::BadKey {
                status: code,
                var: self.key_var.clone(),
            },
            429 | 500..=599 => ServerError::Unavailable {
                status: code,
                attempts,
                message,
            },
            _ => ServerError::Rejected {
                status: code,
                message,
            },
        }
    }

    /// Sends the chat request, retrying 429 and 5xx with a doubling backoff. `Ok(None)`:
    /// cancelled while waiting.
    async fn send(
        &self,
        body: &Value,
        cancel: &CancellationToken,
    ) -> Result<Option<reqwest::Response>, ServerError> {
        let url = format!("{}/chat/completions", self.url);
        let payload = wire::body_text(body);
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=MAX_ATTEMPTS {
            let request = self
                .authorized(self.client.post(&url))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(payload.clone())
                .send();
            let response = tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(None),
                () = tokio::time::sleep(self.timeout) => {
                    return Err(ServerError::Stalled(self.timeout.as_secs()))
                }
                response = request => response.map_err(|e| self.transport(&e))?,
            };
            let status = response.status();
            if status.is_success() {
                return Ok(Some(response));
            }
            let wait = retry_after(&response).unwrap_or(backoff).min(MAX_BACKOFF);
            let text = tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(None),
                text = response.text() => text.unwrap_or_default(),
            };
            let retryable = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
            if status == StatusCode::NOT_FOUND {
                return Err(self.missing_model(&text).await);
            }
            if !retryable || attempt == MAX_ATTEMPTS {
                return Err(self.status_error(status, &text, attempt));
            }
            tracing::warn!(status = status.as_u16(), attempt, "server busy; retrying");
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(None),
                () = tokio::time::sleep(wait) => {}
            }
            backoff *= 2;
        }
        Err(ServerError::Unavailable {
            status: 0,
            attempts: MAX_ATTEMPTS,
            message: "no answer".into(),
        })
    }

    /// A 404 on the chat request: the model is gone (or was never there); name the ones the
    /// server has.
    async fn missing_model(&self, body: &str) -> ServerError {
        match self.models().await {
            Ok(models) if !models.data.iter().any(|m| m.id == self.model) => ServerError::NoModel {
                model: self.model.clone(),
                available: list(&models),
            },
            _ => ServerError::Rejected {
                status: 404,
                message: wire::error_message(body),
            },
        }
    }

    /// One streamed turn.
    async fn stream_turn(
        &self,
        body: &Value,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancellationToken,
    ) -> Result<Streamed, ServerError> {
        let mut assembly = Assembly::default();
        let Some(response) = self.send(body, cancel).await? else {
            return Ok(Streamed::Cancelled(String::new()));
        };
        let mut events = response.bytes_stream().eventsource();
        let mut done = false;
        loop {
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    // Dropping the stream closes the connection: the server stops.
                    drop(events);
                    let text = assembly.finish(self.format.as_ref(), TurnShape::Open, &mut |_| {});
                    return Ok(Streamed::Cancelled(text));
                }
                () = tokio::time::sleep(self.timeout) => {
                    return Err(ServerError::Stalled(self.timeout.as_secs()))
                }
                next = events.next() => next,
            };
            let event = match next {
                None => break,
                Some(Ok(event)) => event,
                Some(Err(EventStreamError::Transport(e))) => {
                    if e.is_timeout() {
                        return Err(ServerError::Stalled(self.timeout.as_secs()));
                    }
                    return Err(ServerError::Truncated {
                        detail: format!(" ({})", error_chain(&e)),
                    });
                }
                Some(Err(e)) => return Err(ServerError::Malformed(e.to_string())),
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                done = true;
                break;
            }
            if data.is_empty() {
                continue;
            }
            let chunk: wire::Chunk = serde_json::from_str(data).map_err(|e| {
                let start: String = data.chars().take(80).collect();
                ServerError::Malformed(format!("{e} in `{start}`"))
            })?;
            if let Some(error) = &chunk.error {
                return Err(ServerError::InStream(wire::error_message(
                    &serde_json::json!({ "error": error }).to_string(),
                )));
            }
            assembly.feed(chunk, on_text);
        }
        if !done && !assembly.finished() {
            return Err(ServerError::Truncated {
                detail: String::new(),
            });
        }
        if !assembly.saw_choice {
            return Err(ServerError::NoChoices);
        }
        let stop = match assembly.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            _ => StopReason::EndOfTurn,
        };
        Ok(Streamed::Done(assembly, stop))
    }
}

/// How a streamed turn ended.
enum Streamed {
    Done(Assembly, StopReason),
    /// Cancelled, with the text received so far.
    Cancelled(String),
}

/// The models a server lists, comma-separated.
fn list(models: &ModelList) -> String {
    if models.data.is_empty() {
        return "none".into();
    }
    models
        .data
        .iter()
        .map(|m| m.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// An error and its sources in one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// A `Retry-After` of whole seconds.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

impl Backend for OpenAiBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: format!("openai:{}", self.url),
            model: Some(self.model.clone()),
            device: format!("server {}", self.host),
            ctx_size: self.ctx_size,
            max_tokens: self.sampling.max_tokens,
            chat_format: self.format.name().to_string(),
            native_tools: self.native_tools,
        }
    }

    fn new_child(&mut self, _round: u32) -> Result<Box<dyn Child + '_>, BackendError> {
        Ok(Box::new(OpenAiChild {
            backend: self,
            calibration: [None, None],
            counted: None,
        }))
    }
}

/// One round's conversation with the server. It keeps nothing but what it knows of the
/// prompt's size: the server's last count of a request, and a calibration of the estimate
/// from the last usage the server reported.
struct OpenAiChild<'a> {
    backend: &'a OpenAiBackend,
    /// (bytes of messages and generated text, tokens the server counted for them), kept
    /// apart for requests without and with the native tools: a template that shows tools
    /// adds its own tool block to the prompt, so the two do not measure alike.
    calibration: [Option<(usize, u32)>; 2],
    /// The last request the server counted (a hash of its text) and its prompt tokens: the
    /// engine asks about the same conversation several times a turn.
    counted: Option<(u64, u32)>,
}

fn message_bytes(request: &Request<'_>) -> usize {
    request.messages.iter().map(|m| m.content.len()).sum()
}

impl OpenAiChild<'_> {
    fn shape(&self, request: &Request<'_>) -> TurnShape {
        TurnShape::of(
            request.report_only,
            request.tools,
            request.messages,
            self.backend.format.as_ref(),
        )
    }

    /// Which calibration a request of `shape` uses: 1 when it carries the native tools.
    fn slot(shape: TurnShape, request: &Request<'_>) -> usize {
        usize::from(shape == TurnShape::Open && !request.tools.is_empty())
    }
}

impl OpenAiChild<'_> {
    /// The prompt's size in tokens for a request of `shape`: the server's last count plus
    /// three bytes a token for what was added since (tool output, code and JSON run denser
    /// than prose; counting them high keeps the report's reserve free); before any count,
    /// four bytes a token and the tools as the template will show them.
    fn estimate(&self, request: &Request<'_>, shape: TurnShape) -> u32 {
        let slot = Self::slot(shape, request);
        let bytes = message_bytes(request);
        match self.calibration[slot] {
            Some((known_bytes, tokens)) if bytes >= known_bytes => tokens.saturating_add(
                u32::try_from((bytes - known_bytes).div_ceil(ADDED_BYTES_PER_TOKEN))
                    .unwrap_or(u32::MAX),
            ),
            _ => {
                let tools = if slot == 1 && self.backend.native_tools {
                    serde_json::to_string(request.tools).map_or(0, |t| t.len())
                } else {
                    0
                };
                u32::try_from((bytes + tools).div_ceil(4)).unwrap_or(u32::MAX)
            }
        }
    }
}

impl OpenAiChild<'_> {
    /// The prompt's size in tokens for a request of `shape`: the server's own count where it
    /// gives one, else the estimate.
    fn prompt_size(&mut self, request: &Request<'_>, shape: TurnShape) -> u32 {
        let backend = self.backend;
        if backend.counts_prompts.load(Ordering::Relaxed) {
            let body = wire::body_text(&wire::request_body(
                &backend.model,
                request.messages,
                request.tools,
                shape,
                backend.format.as_ref(),
                &backend.sampling,
            ));
            let key = {
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                body.hash(&mut hasher);
                hasher.finish()
            };
            if let Some((known, tokens)) = self.counted {
                if known == key {
                    return tokens;
                }
            }
            if let Some(tokens) = backend.count_prompt(&body) {
                self.counted = Some((key, tokens));
                return tokens;
            }
        }
        self.estimate(request, shape)
    }
}

impl Child for OpenAiChild<'_> {
    fn count_prompt_tokens(&mut self, request: Request<'_>) -> Result<u32, BackendError> {
        let shape = self.shape(&request);
        Ok(self.prompt_size(&request, shape))
    }

    fn generate_streaming(
        &mut self,
        request: Request<'_>,
        on_output: &mut dyn FnMut(Output<'_>),
        cancel: &CancellationToken,
    ) -> Result<Generation, BackendError> {
        let on_text = &mut |piece: &str| on_output(Output::Text(piece));
        let backend = self.backend;
        let shape = self.shape(&request);
        let estimate = self.prompt_size(&request, shape);
        let body = backend.turn_body(&request, shape, estimate);
        let streamed = backend
            .runtime
            .block_on(backend.stream_turn(&body, on_text, cancel))?;
        let (assembly, stop) = match streamed {
            Streamed::Done(assembly, stop) => (assembly, stop),
            Streamed::Cancelled(text) => {
                return Ok(Generation {
                    text,
                    prompt_tokens: estimate,
                    generated_tokens: 0,
                    stop: StopReason::Cancelled,
                })
            }
        };
        let usage = assembly.usage;
        let pieces = assembly.pieces;
        let text = assembly.finish(backend.format.as_ref(), shape, on_text);
        let (prompt_tokens, generated_tokens) = match usage {
            Some(u) => (u.prompt_tokens, u.completion_tokens),
            None => (estimate, pieces),
        };
        self.calibration[Self::slot(shape, &request)] = Some((
            message_bytes(&request) + text.len(),
            prompt_tokens.saturating_add(generated_tokens),
        ));
        let stop = if stop == StopReason::MaxTokens
            && prompt_tokens.saturating_add(generated_tokens) >= backend.ctx_size
        {
            StopReason::ContextFull
        } else {
            stop
        };
        Ok(Generation {
            text,
            prompt_tokens,
            generated_tokens,
            stop,
        })
    }
}
