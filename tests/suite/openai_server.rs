//! A small local OpenAI-compatible server for the openai backend's tests: it serves a model
//! list and the context-size endpoints, records every chat request, and answers each with
//! the next scripted reply (a recorded SSE stream, an error status, or a fault: a stream cut
//! short, a stall, a stream that never ends).
#![allow(dead_code, reason = "each suite uses a different part")]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::{Request, Response};
use serde_json::{json, Value};

/// What the server answers one chat request with.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An SSE body, one event at a time, `delay` between events.
    Sse { body: String, delay: Duration },
    /// A status with a JSON body (and a `Retry-After` of seconds, when given).
    Status {
        code: u16,
        body: String,
        retry_after: Option<u64>,
    },
    /// Sends `partial`, then nothing more, holding the connection open.
    Stall { partial: String },
    /// Sends `partial`, then `filler` every `every` forever (a model that never stops).
    Endless {
        partial: String,
        filler: String,
        every: Duration,
    },
}

impl Reply {
    pub fn sse(body: &str) -> Self {
        Self::Sse {
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn status(code: u16, body: &str) -> Self {
        Self::Status {
            code,
            body: body.to_string(),
            retry_after: None,
        }
    }
}

/// One chat request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct State {
    models: Value,
    props: Option<Value>,
    ollama_ps: Option<Value>,
    /// Bytes a token of llama-server's `/tokenize`, when the server counts prompts.
    bytes_per_token: Option<usize>,
    replies: VecDeque<Reply>,
    seen: Vec<Seen>,
    /// When a streamed reply found its client gone.
    disconnected: Vec<Instant>,
}

/// The running server; it stops when dropped.
pub struct FakeServer {
    /// Base URL up to and including `/v1`.
    pub url: String,
    state: Arc<Mutex<State>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl FakeServer {
    /// A server listing `models` (ids).
    pub fn start(models: &[&str]) -> Self {
        let data: Vec<Value> = models
            .iter()
            .map(|id| json!({"id": id, "object": "model", "owned_by": "test"}))
            .collect();
        Self::with_models(json!({"object": "list", "data": data}))
    }

    /// A server answering `GET /v1/models` with `models` as given.
    pub fn with_models(models: Value) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(Mutex::new(State {
            models,
            ..State::default()
        }));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let accept_state = state.clone();
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = accept_state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(answer(req, state).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            url: format!("http://{addr}/v1"),
            state,
            runtime: Some(runtime),
        }
    }

    /// Serves llama-server's `/props` with this context size.
    pub fn with_props_ctx(self, n_ctx: u32) -> Self {
        self.state.lock().unwrap().props =
            Some(json!({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}));
        self
    }

    /// Serves llama-server's `/props` as given (a chat template and its capabilities, say).
    pub fn with_props(self, props: Value) -> Self {
        self.state.lock().unwrap().props = Some(props);
        self
    }

    /// Serves llama-server's `/apply-template` (the request's messages, each behind its role,
    /// and its tools as JSON) and `/tokenize` (a token every `bytes_per_token` bytes).
    pub fn with_tokenizer(self, bytes_per_token: usize) -> Self {
        self.state.lock().unwrap().bytes_per_token = Some(bytes_per_token);
        self
    }

    /// Serves Ollama's `/api/ps` with this model loaded at this context length.
    pub fn with_ollama_ps(self, model: &str, context_length: u32) -> Self {
        self.state.lock().unwrap().ollama_ps = Some(
            json!({"models": [{"name": model, "model": model, "context_length": context_length}]}),
        );
        self
    }

    /// Changes the model list the server gives from now on.
    pub fn set_models(&self, models: &[&str]) {
        let data: Vec<Value> = models.iter().map(|id| json!({"id": id})).collect();
        self.state.lock().unwrap().models = json!({"object": "list", "data": data});
    }

    pub fn push(&self, reply: Reply) {
        self.state.lock().unwrap().replies.push_back(reply);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// When the server found a streamed reply's client gone, if it did.
    pub fn disconnected(&self) -> Option<Instant> {
        self.state.lock().unwrap().disconnected.first().copied()
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn full(code: u16, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = hyper::StatusCode::from_u16(code).unwrap();
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    response
}

async fn answer(req: Request<Incoming>, state: Arc<Mutex<State>>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    match path.as_str() {
        "/v1/models" => return full(200, state.lock().unwrap().models.to_string()),
        "/props" => {
            return match state.lock().unwrap().props.clone() {
                Some(props) => full(200, props.to_string()),
                None => full(404, r#"{"error":"not found"}"#.into()),
            }
        }
        "/api/ps" => {
            return match state.lock().unwrap().ollama_ps.clone() {
                Some(ps) => full(200, ps.to_string()),
                None => full(404, "404 page not found".into()),
            }
        }
        "/apply-template" | "/tokenize" => {
            let Some(per) = state.lock().unwrap().bytes_per_token else {
                return full(404, r#"{"error":"no such route"}"#.into());
            };
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if path == "/tokenize" {
                let content = request["content"].as_str().unwrap_or_default();
                let tokens = vec![1; content.len().div_ceil(per)];
                return full(200, json!({ "tokens": tokens }).to_string());
            }
            let mut prompt: String = request["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| format!("<{}>{}\n", m["role"], m["content"]))
                .collect();
            if let Some(tools) = request.get("tools") {
                prompt.push_str(&tools.to_string());
            }
            return full(200, json!({ "prompt": prompt }).to_string());
        }
        "/v1/chat/completions" => {}
        _ => return full(404, r#"{"error":"no such route"}"#.into()),
    }
    let reply = {
        let mut state = state.lock().unwrap();
        state.seen.push(Seen {
            path,
            authorization,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
        state.replies.pop_front()
    };
    let Some(reply) = reply else {
        return full(
            500,
            r#"{"error":{"message":"the test scripted no more replies"}}"#.into(),
        );
    };
    match reply {
        Reply::Status {
            code,
            body,
            retry_after,
        } => {
            let mut response = full(code, body);
            if let Some(secs) = retry_after {
                response
                    .headers_mut()
                    .insert("retry-after", secs.to_string().parse().unwrap());
            }
            response
        }
        Reply::Sse { body, delay } => {
            let events: Vec<String> = body.split_inclusive("\n\n").map(String::from).collect();
            stream(state, move |mut tx| async move {
                for event in events {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    if tx.send(event).await.is_err() {
                        return Err(());
                    }
                }
                Ok(())
            })
        }
        Reply::Stall { partial } => stream(state, move |mut tx| async move {
            tx.send(partial).await.map_err(|_| ())?;
            // Hold the connection open without a byte more, until the client goes.
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if tx.is_closed() {
                    return Err(());
                }
            }
        }),
        Reply::Endless {
            partial,
            filler,
            every,
        } => stream(state, move |mut tx| async move {
            tx.send(partial).await.map_err(|_| ())?;
            loop {
                tokio::time::sleep(every).await;
                tx.send(filler.clone()).await.map_err(|_| ())?;
            }
        }),
    }
}

/// A streamed `text/event-stream` response fed by `feed`; a feed that finds the client gone
/// (`Err`) records when.
fn stream<F, Fut>(state: Arc<Mutex<State>>, feed: F) -> Response<Body>
where
    F: FnOnce(mpsc::Sender<String>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<(), ()>> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<String>(1);
    tokio::spawn(async move {
        if feed(tx).await.is_err() {
            state.lock().unwrap().disconnected.push(Instant::now());
        }
    });
    let frames = rx.map(|text| Ok::<_, Infallible>(Frame::data(Bytes::from(text))));
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(frames)));
    response
        .headers_mut()
        .insert("content-type", "text/event-stream".parse().unwrap());
    response
}

/// A recorded stream under `tests/fixtures/openai/`.
pub fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openai")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
