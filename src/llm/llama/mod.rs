//! The llama.cpp backend (feature `llama`): the model loaded once, a brand-new context per round.
//!
//! `LlamaBackend` owns the model (memory-mapped) for the whole run, its chat template and the
//! chat format that parses its tool calls. Each round gets a `LlamaChild` holding a fresh
//! `LlamaContext` (empty KV cache) that is dropped with the child; nothing crosses rounds.
//! llama.cpp contexts are not `Sync` and creating them in parallel from one model is unsound,
//! so the backend and its children live on the engine's thread, which is the only thread that
//! touches them. llama.cpp's process-wide state is initialised once (a `OnceLock`), with its
//! logs routed to `tracing` before anything is loaded.
//!
//! Two things the backend keeps beside the model for its children: the slot llama.cpp's abort
//! callback reads (`abort`), so a cancel stops a prompt batch mid-way, and the run's fixed
//! prompt prefix state (`prefix`), which each fresh context restores instead of evaluating
//! the system message again (off with `--no-prefix-cache`), and which the next run finds on
//! disk under the cache dir (`with_disk_prefix_cache`).

mod abort;
mod child;
mod grammar;
mod prefix;
mod sampling;
mod vocab;

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend as Runtime;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{list_llama_ggml_backend_devices, LlamaBackendDeviceType, LogOptions};

pub use crate::text::sha256_hex;
pub use child::{LlamaChild, TurnStats};
pub use prefix::{tokens_sha256, Prefix};
pub use vocab::Vocab;

use abort::AbortSlot;
use prefix::PrefixCache;

use super::prefix_store::{self, PrefixKey, PrefixStore};
use super::template::{role_name, ChatTemplate};
use super::{Backend, BackendError, BackendInfo, Child, Request};
use crate::chat::{self, ChatFormat};
use crate::error::UsageError;
use crate::llm::settings::InferenceSettings;
use crate::protocol::message::{Message, Role};

/// Whether this build has a GPU backend compiled in.
pub const GPU_BUILD: bool = cfg!(any(feature = "cuda", feature = "vulkan", feature = "metal"));

/// Loads the weights with `requested` layers on the GPU, telling `on_progress` how far
/// llama.cpp's load is (0 to 1) and logging each quarter.
fn load_model(
    runtime: &Runtime,
    model: &Path,
    requested: u32,
    on_progress: Option<std::sync::Arc<dyn Fn(f32) + Send + Sync>>,
) -> Result<LlamaModel, UsageError> {
    let started = std::time::Instant::now();
    // llama.cpp says how far the load is (once per tensor): the listener hears each new
    // whole percent, the log each quarter.
    let mut next_quarter = 1u32;
    let mut last_percent = None;
    let params = LlamaModelParams::default()
        .with_n_gpu_layers(requested)
        .with_progress_callback(move |progress| {
            let percent = (progress.clamp(0.0, 1.0) * 100.0) as u32;
            if let Some(listener) = on_progress
                .as_ref()
                .filter(|_| last_percent != Some(percent))
            {
                last_percent = Some(percent);
                listener(progress);
            }
            let quarters = (progress.clamp(0.0, 1.0) * 4.0) as u32;
            if quarters >= next_quarter {
                next_quarter = quarters + 1;
                tracing::info!(
                    percent = quarters * 25,
                    ms = started.elapsed().as_millis() as u64,
                    "model loading"
                );
            }
            true
        });
    let llama_model = LlamaModel::load_from_file(runtime, model, &params).map_err(|e| {
        model_error(
            model,
            format!("llama.cpp cannot load it ({e}): the file is corrupt, truncated or of an unsupported architecture (details in the log file)"),
        )
    })?;
    tracing::info!(
        path = %model.display(),
        ms = started.elapsed().as_millis() as u64,
        "model loaded"
    );
    Ok(llama_model)
}

/// The chat format: `chat_format` when it names one, else the one detected from the model's
/// template, architecture and name.
fn pick_format(
    llama_model: &LlamaModel,
    chat_format: Option<&str>,
    template_source: Option<&str>,
    architecture: Option<&str>,
) -> Result<Box<dyn ChatFormat>, UsageError> {
    let model_name = llama_model
        .meta_val_str("general.basename")
        .or_else(|_| llama_model.meta_val_str("general.name"))
        .ok();
    let format_name = match chat_format {
        None | Some("auto") => {
            chat::detect(template_source, architecture, model_name.as_deref()).to_string()
        }
        Some(name) => name.to_string(),
    };
    chat::by_name(&format_name).ok_or_else(|| {
        UsageError::Invalid(format!(
            "unknown --chat-format '{format_name}': use auto or one of {}",
            chat::FORMAT_NAMES.join(", ")
        ))
    })
}

/// llama.cpp's process-wide state: initialised once, never torn down.
fn runtime() -> Result<&'static Runtime, String> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(LogOptions::default());
            Runtime::init().map_err(|e| format!("llama.cpp does not start: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// How prompts are rendered: the model's own Jinja template, or llama.cpp's built-in matcher
/// when MiniJinja cannot render that template.
enum Prompter {
    Jinja(Box<ChatTemplate>),
    Builtin(LlamaChatTemplate),
}

/// The model, loaded once per run.
pub struct LlamaBackend {
    runtime: &'static Runtime,
    model: LlamaModel,
    path: PathBuf,
    settings: InferenceSettings,
    ctx_size: u32,
    prompter: Prompter,
    format: Box<dyn ChatFormat>,
    device: String,
    bos_text: String,
    /// Read by llama.cpp's abort callback of every context this backend creates; boxed so its
    /// address stays put, and owned here so it outlives those contexts (they borrow `model`).
    abort: Box<AbortSlot>,
    /// Whether contexts get the abort callback (always, but for benchmarks measuring its cost).
    abortable: bool,
    prefix: PrefixCache,
    /// The last prompt evaluation's tokens a second (`f64` bits; 0: none yet), so a turn
    /// knows before its first batch whether its prompt is slow enough to report progress.
    prompt_rate: AtomicU64,
    /// The chat's structure tokens ([`structure_tokens`]), which no turn samples.
    structure: Vec<LlamaToken>,
}

impl std::fmt::Debug for LlamaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaBackend")
            .field("path", &self.path)
            .field("device", &self.device)
            .field("ctx_size", &self.ctx_size)
            .field("chat_format", &self.format.name())
            .field("prefix_cache", &self.prefix.enabled())
            .finish_non_exhaustive()
    }
}

fn model_error(path: &Path, message: impl Into<String>) -> UsageError {
    UsageError::Model {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// GPU layers to ask for: the setting, else all of them on a GPU build and none otherwise.
pub fn requested_gpu_layers(settings: &InferenceSettings) -> u32 {
    settings
        .gpu_layers
        .unwrap_or(if GPU_BUILD { u32::MAX } else { 0 })
}

/// Says which device runs the model, and whether a requested offload fell back to the CPU.
fn describe_device(runtime: &Runtime, requested: u32, n_layer: u32) -> String {
    if requested == 0 {
        return "CPU".into();
    }
    let gpus: Vec<_> = list_llama_ggml_backend_devices()
        .into_iter()
        .filter(|d| {
            matches!(
                d.device_type,
                LlamaBackendDeviceType::Gpu | LlamaBackendDeviceType::IntegratedGpu
            )
        })
        .collect();
    match gpus.first() {
        Some(dev) if runtime.supports_gpu_offload() => {
            // llama.cpp offloads the repeating layers plus the output layer.
            let total = n_layer + 1;
            let used = requested.min(total);
            let label = if dev.description.is_empty() {
                dev.name.clone()
            } else {
                format!("{} {}", dev.name, dev.description)
            };
            format!("GPU ({label}, {used}/{total} layers)")
        }
        _ => format!(
            "CPU ({requested_text} GPU layers requested, but {why}: running on the CPU)",
            requested_text = if requested == u32::MAX {
                "all".to_string()
            } else {
                requested.to_string()
            },
            why = if GPU_BUILD {
                "no usable GPU device was found"
            } else {
                "this build has no GPU backend"
            }
        ),
    }
}

impl LlamaBackend {
    /// Loads a GGUF model. `chat_format` is `--chat-format` (`None` or `auto`: detected from
    /// the model). Every failure is a usage error naming the file and what to do.
    pub fn load(
        model: &Path,
        settings: &InferenceSettings,
        chat_format: Option<&str>,
    ) -> Result<Self, UsageError> {
        Self::load_reporting(model, settings, chat_format, None)
    }

    /// `load`, telling `on_progress` how far llama.cpp's load is (0 to 1) as it goes.
    pub fn load_reporting(
        model: &Path,
        settings: &InferenceSettings,
        chat_format: Option<&str>,
        on_progress: Option<std::sync::Arc<dyn Fn(f32) + Send + Sync>>,
    ) -> Result<Self, UsageError> {
        super::model_file::check(model)?;
        let runtime = runtime().map_err(|e| model_error(model, e))?;
        if llama_cpp_2::gguf::GgufContext::from_file(model).is_none() {
            return Err(model_error(
                model,
                "not a valid GGUF file (its header or metadata is corrupt or truncated): fetch it again or pass another --model",
            ));
        }
        let requested = requested_gpu_layers(settings);
        let llama_model = load_model(runtime, model, requested, on_progress)?;

        let architecture = llama_model.meta_val_str("general.architecture").ok();
        let template_source = llama_model
            .chat_template(None)
            .ok()
            .and_then(|t| t.to_string().ok());
        let format = pick_format(
            &llama_model,
            chat_format,
            template_source.as_deref(),
            architecture.as_deref(),
        )?;

        let (bos_text, eos_text) = (
            token_text(&llama_model, Vocab::of(&llama_model).bos()),
            token_text(&llama_model, Vocab::of(&llama_model).eos()),
        );
        let prompter = choose_prompter(
            model,
            template_source.as_deref(),
            &bos_text,
            &eos_text,
            &llama_model,
        )?;
        let ctx_size = capped_ctx_size(settings.ctx_size, llama_model.n_ctx_train());
        let device = describe_device(runtime, requested, llama_model.n_layer());
        tracing::info!(
            device = %device,
            chat_format = format.name(),
            architecture = architecture.as_deref().unwrap_or("?"),
            ctx_size,
            threads = settings.threads,
            template = match prompter { Prompter::Jinja(_) => "jinja", Prompter::Builtin(_) => "llama.cpp built-in" },
            "llama backend ready"
        );
        let mut backend = Self {
            runtime,
            model: llama_model,
            path: model.to_path_buf(),
            settings: settings.clone(),
            ctx_size,
            prompter,
            format,
            device,
            bos_text,
            abort: Box::default(),
            abortable: true,
            prefix: PrefixCache::new(true),
            prompt_rate: AtomicU64::new(0),
            structure: Vec::new(),
        };
        backend.structure = structure_tokens(&backend);
        Ok(backend)
    }

    /// The control tokens no turn may sample ([`structure_tokens`]).
    pub fn structure(&self) -> &[LlamaToken] {
        &self.structure
    }

    /// The chat format this backend's output is parsed with.
    pub fn format(&self) -> &dyn ChatFormat {
        self.format.as_ref()
    }

    /// The settings the backend runs with.
    pub fn settings(&self) -> &InferenceSettings {
        &self.settings
    }

    /// Turns the fixed-prefix cache on (the default) or off (`--no-prefix-cache`). Any stored
    /// prefix state is dropped.
    pub fn with_prefix_cache(mut self, enabled: bool) -> Self {
        self.prefix = PrefixCache::new(enabled);
        self
    }

    /// Turns llama.cpp's abort callback off (`false`) for contexts created from now on, so a
    /// cancel waits for the batch in progress. Only benchmarks want this: to measure what the
    /// callback costs.
    pub fn with_abort_callback(mut self, enabled: bool) -> Self {
        self.abortable = enabled;
        self
    }

    /// Whether rounds restore the fixed prefix's state instead of evaluating it again.
    pub fn prefix_cache_enabled(&self) -> bool {
        self.prefix.enabled()
    }

    /// The loaded model.
    pub fn model(&self) -> &LlamaModel {
        &self.model
    }

    /// The GBNF a wrap-up turn is sampled under (root `root`): the report call alone, in this
    /// backend's chat format. `None` when `tools` offer no report or the format has no grammar.
    pub fn wrap_up_grammar(&self, tools: &[crate::protocol::tool::ToolSpec]) -> Option<String> {
        match grammar::for_report(self.format(), tools, u32::MAX)? {
            sampling::TurnGrammar::Required { gbnf } | sampling::TurnGrammar::Lazy { gbnf, .. } => {
                Some(gbnf)
            }
        }
    }

    /// Every round's context parameters.
    fn context_params(&self) -> LlamaContextParams {
        let threads = self.settings.threads.max(1);
        let batch = self.settings.batch_size.max(1);
        LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(self.ctx_size))
            .with_n_batch(batch)
            .with_n_ubatch(batch)
            .with_n_seq_max(1)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
    }

    /// Keeps the fixed prefix's state on disk as well, in `store` (under the cache dir), so
    /// the next run's round 1 restores it. Reads the model's sha256 from the store's record
    /// of model files (computing it once per file identity). Without a readable model file,
    /// or with the prefix cache off, nothing changes.
    pub fn with_disk_prefix_cache(mut self, store: PrefixStore) -> Self {
        if !self.prefix.enabled() || store.limit() == 0 {
            return self;
        }
        let Some(model_sha256) = prefix_store::model_sha256(store.dir(), &self.path) else {
            tracing::warn!("the model file cannot be hashed: the prefix cache stays in memory");
            return self;
        };
        let key = self.prefix_key_base(model_sha256);
        let cache = std::mem::take(&mut self.prefix);
        self.prefix = cache.with_disk(prefix::Disk { store, key });
        self
    }

    /// The disk key's fields that hold for the whole run: everything the prefix's state
    /// depends on but the prefix itself.
    fn prefix_key_base(&self, model_sha256: String) -> PrefixKey {
        let params = self.context_params();
        PrefixKey {
            model_sha256,
            prefix_sha256: String::new(),
            prefix_tokens: 0,
            llama_cpp_2: prefix_store::LLAMA_CPP_2_VERSION.into(),
            n_ctx: self.ctx_size,
            n_batch: params.n_batch(),
            n_ubatch: params.n_ubatch(),
            kv_type: format!(
                "{:?}/{:?} flash-attn {:?} offload-kqv {} swa-full {} unified {}",
                params.type_k(),
                params.type_v(),
                params.flash_attention_policy(),
                params.offload_kqv(),
                params.swa_full(),
                params.kv_unified()
            ),
            device: format!(
                "{} (gpu layers {})",
                self.device,
                requested_gpu_layers(&self.settings)
            ),
        }
    }

    /// The last prompt evaluation's tokens a second, when one was measured.
    fn prompt_rate(&self) -> Option<f64> {
        let rate = f64::from_bits(self.prompt_rate.load(Ordering::Relaxed));
        (rate > 0.0).then_some(rate)
    }

    /// Records a prompt evaluation's rate: `tokens` in `took` (skipped when too short to say).
    fn note_prompt_rate(&self, tokens: usize, took: std::time::Duration) {
        if tokens >= 16 && took >= std::time::Duration::from_millis(20) {
            let rate = tokens as f64 / took.as_secs_f64();
            self.prompt_rate.store(rate.to_bits(), Ordering::Relaxed);
        }
    }

    /// Whether the fixed prefix's state also goes to and comes from disk.
    pub fn prefix_cache_on_disk(&self) -> bool {
        self.prefix.on_disk()
    }

    /// A bare context with every round's parameters and no abort callback, for measuring
    /// llama.cpp itself beside the backend (benchmarks).
    pub fn bare_context(&self) -> Result<llama_cpp_2::context::LlamaContext<'_>, BackendError> {
        self.model
            .new_context(self.runtime, self.context_params())
            .map_err(|e| BackendError::ChildFailed(format!("cannot create a llama context: {e}")))
    }

    /// A fresh child for `round`: a new context with an empty KV cache.
    pub fn child(&self, round: u32) -> Result<LlamaChild<'_>, BackendError> {
        let params = self.context_params();
        let params = if self.abortable {
            abort::with_abort(params, &self.abort)
        } else {
            params
        };
        let ctx = self.model.new_context(self.runtime, params).map_err(|e| {
            BackendError::ChildFailed(format!("cannot create a llama context: {e}"))
        })?;
        Ok(LlamaChild::new(self, ctx, round))
    }

    /// The prompt text for a request: the messages rendered with the model's chat template,
    /// ending with the assistant's generation prompt. This is exactly what gets tokenized.
    pub fn render_prompt(&self, request: Request<'_>) -> Result<String, BackendError> {
        match self.render_with(request.messages, request.tools) {
            Ok(text) => Ok(text),
            Err(first) if request.messages.iter().any(|m| m.role == Role::Tool) => {
                // Templates without a tool role often raise on one: retry with tool results
                // as user messages before giving up.
                let converted: Vec<Message> = request
                    .messages
                    .iter()
                    .map(|m| match m.role {
                        Role::Tool => Message::new(
                            Role::User,
                            format!(
                                "[result of {}]\n{}",
                                m.name.as_deref().unwrap_or("the tool"),
                                m.content
                            ),
                        ),
                        _ => m.clone(),
                    })
                    .collect();
                self.render_with(&converted, request.tools)
                    .map_err(|_| BackendError::ChildFailed(first))
            }
            Err(e) => Err(BackendError::ChildFailed(e)),
        }
    }

    fn render_with(
        &self,
        messages: &[Message],
        tools: &[crate::protocol::tool::ToolSpec],
    ) -> Result<String, String> {
        match &self.prompter {
            Prompter::Jinja(template) => {
                let instructions = self.format.tool_instructions(tools);
                let in_system = !instructions.is_empty()
                    && messages
                        .iter()
                        .any(|m| m.role == Role::System && m.content.contains(&instructions));
                let pass_tools = template.uses_tools() && !tools.is_empty() && !in_system;
                template
                    .render(messages, pass_tools.then_some(tools))
                    .map_err(|e| e.to_string())
            }
            Prompter::Builtin(template) => builtin_render(&self.model, template, messages),
        }
    }

    /// The fixed prefix of a round's prompt (`full`, tokenized as `tokens`): the rendered text
    /// up to the end of the system message, tokenized. `Err` says why there is none (no system
    /// message, or the tokens at the boundary differ from the full prompt's); the round then
    /// evaluates its whole prompt.
    pub fn fixed_prefix(
        &self,
        request: Request<'_>,
        full: &str,
        tokens: &[LlamaToken],
    ) -> Result<Prefix, String> {
        let system = match request.messages.first() {
            Some(m) if m.role == Role::System => m,
            _ => return Err("the prompt does not start with a system message".into()),
        };
        let system_only = self
            .render_with(std::slice::from_ref(system), request.tools)
            .map_err(|e| format!("the system message alone does not render: {e}"))?;
        let end = prefix::prefix_end(full, &system_only, &system.content)
            .ok_or("the system message alone renders differently from the prompt's start")?;
        let prefix = self.tokenize(&full[..end]);
        if prefix.is_empty() || prefix.len() >= tokens.len() {
            return Err("the prefix leaves nothing of the prompt to evaluate".into());
        }
        if !tokens.starts_with(&prefix) {
            return Err(
                "the prompt's tokens do not start with the prefix's tokens (the tokenizer merges across the boundary)".into(),
            );
        }
        Ok(Prefix::new(prefix))
    }

    /// Tokenizes a rendered prompt the way generation does: special tokens parsed, BOS added
    /// when the model wants one and the template did not write it.
    pub fn tokenize(&self, prompt: &str) -> Vec<LlamaToken> {
        let vocab = Vocab::of(&self.model);
        let written = !self.bos_text.is_empty() && prompt.starts_with(&self.bos_text);
        let add_bos = vocab.should_add_bos() && !written;
        vocab.tokenize(prompt.as_bytes(), add_bos, true)
    }
}

/// The control tokens that build the chat's structure, read from the template's own rendering
/// of a short conversation without tools: BOS and a role's start (`<|im_start|>`, Llama 3's
/// header tokens). No turn samples one: the 1.5B, deep in a long JSON string, wrote
/// `<|im_start|>` over and over and lost the round's report. The tokens that end a turn
/// stay (they are how it ends), and a format's call markers are not among these, since the
/// conversation has no tools.
fn structure_tokens(backend: &LlamaBackend) -> Vec<LlamaToken> {
    let probe = [
        Message::new(Role::System, "s"),
        Message::new(Role::User, "u"),
        Message::new(Role::Assistant, "a"),
        Message::new(Role::User, "v"),
    ];
    let text = match backend.render_prompt(crate::llm::Request::new(&probe, &[])) {
        Ok(text) => text,
        Err(e) => {
            tracing::warn!("cannot read the chat's structure tokens ({e}); sampling all tokens");
            return Vec::new();
        }
    };
    let vocab = Vocab::of(&backend.model);
    let mut found: Vec<LlamaToken> = backend
        .tokenize(&text)
        .into_iter()
        .filter(|&t| vocab.is_control(t) && !vocab.is_eog(t))
        .collect();
    found.sort_by_key(|t| t.0);
    found.dedup();
    let names: Vec<String> = found
        .iter()
        .map(|&t| token_text(&backend.model, t))
        .collect();
    tracing::info!(tokens = ?names, "chat structure tokens, never sampled");
    found
}

/// A special token's text (empty for a model without that token).
fn token_text(model: &LlamaModel, token: LlamaToken) -> String {
    if token.0 < 0 {
        return String::new();
    }
    String::from_utf8_lossy(&Vocab::of(model).token_to_piece(token, true)).into_owned()
}

/// The context size: the requested one, capped at the model's training context when the
/// model says what that is (and logged when it caps).
fn capped_ctx_size(requested: u32, n_ctx_train: u32) -> u32 {
    let used = if n_ctx_train > 0 {
        requested.min(n_ctx_train)
    } else {
        requested
    };
    if used < requested {
        tracing::warn!(
            requested,
            used,
            "context size capped at the model's training context"
        );
    }
    used
}

fn builtin_render(
    model: &LlamaModel,
    template: &LlamaChatTemplate,
    messages: &[Message],
) -> Result<String, String> {
    let chat: Result<Vec<LlamaChatMessage>, _> = messages
        .iter()
        .map(|m| LlamaChatMessage::new(role_name(m.role).to_string(), m.content.clone()))
        .collect();
    let chat = chat.map_err(|e| format!("a message cannot be passed to llama.cpp: {e}"))?;
    model
        .apply_chat_template(template, &chat, true)
        .map_err(|e| format!("llama.cpp's built-in template failed: {e}"))
}

/// Picks how to render prompts: the GGUF's Jinja template when MiniJinja renders it, else
/// llama.cpp's built-in matcher, else a clear error.
fn choose_prompter(
    path: &Path,
    source: Option<&str>,
    bos: &str,
    eos: &str,
    model: &LlamaModel,
) -> Result<Prompter, UsageError> {
    let Some(source) = source else {
        return Err(model_error(
            path,
            "it has no chat template (tokenizer.chat_template): ralph-tui needs an instruct/chat model",
        ));
    };
    let probe = [
        Message::new(Role::System, "You are a test."),
        Message::new(Role::User, "Hello."),
    ];
    let jinja_error = match ChatTemplate::new(source, bos, eos) {
        Ok(template) => match template.render(&probe, None) {
            Ok(_) => return Ok(Prompter::Jinja(Box::new(template))),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    };
    tracing::warn!("{jinja_error}; trying llama.cpp's built-in template matcher");
    let builtin = LlamaChatTemplate::new(source)
        .map_err(|e| model_error(path, format!("its chat template is unusable: {e}")))?;
    match builtin_render(model, &builtin, &probe) {
        Ok(_) => Ok(Prompter::Builtin(builtin)),
        Err(e) => Err(model_error(
            path,
            format!("its chat template cannot be rendered ({jinja_error}; {e})"),
        )),
    }
}

impl Backend for LlamaBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: "llama".into(),
            model: Some(self.path.display().to_string()),
            device: self.device.clone(),
            ctx_size: self.ctx_size,
            max_tokens: self.settings.max_tokens,
            chat_format: self.format.name().to_string(),
            native_tools: false,
        }
    }

    fn new_child(&mut self, round: u32) -> Result<Box<dyn Child + '_>, BackendError> {
        Ok(Box::new(self.child(round)?))
    }
}
