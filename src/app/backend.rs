//! The backend a run will use: the plan `prepare` checks (a script, a model file, a server
//! reached once), loading it bounded, and what each backend is given from the run's options
//! (`InferenceSettings` for the model, the openai backend's config), the chat format it
//! parses turns with, and the model's source and hash for `run.json`.

use std::path::{Path, PathBuf};

use super::{LoadProgress, StartError};
use crate::chat;
use crate::config::Settings;
use crate::llm::bounded::{Bounded, MAX_TURN_BYTES};
use crate::llm::script::ScriptBackend;
use crate::llm::settings::InferenceSettings;
use crate::llm::Backend;
use crate::options::{ChatFormatName, Resolved};

/// The backend a run will use, checked but not yet loaded.
#[derive(Debug, Clone)]
pub enum BackendPlan {
    Script(ScriptBackend, PathBuf),
    Llama(PathBuf),
    /// An OpenAI-compatible server, reached once here: its base URL, the model name it
    /// serves and its context size.
    OpenAi {
        url: String,
        model: String,
        ctx_size: u32,
    },
}

/// Fills the settings nobody set from the model file's metadata (see `model_defaults`). A
/// header this program cannot read leaves the built-in defaults: loading the model judges
/// the file.
pub(super) fn take_model_defaults(settings: &mut Settings, model: &Path) {
    let Ok(meta) = crate::model_file::ModelMeta::read(model) else {
        return;
    };
    let bytes = std::fs::metadata(model).map_or(0, |m| m.len());
    settings.take_model_defaults(&meta, bytes, crate::model_defaults::mem_available());
}

/// Loads the backend `plan` names with the run's `settings`, its turns bounded to
/// [`MAX_TURN_BYTES`]; `on_load` hears how far a model file's load is.
pub fn load_backend(
    plan: &BackendPlan,
    settings: &Settings,
    on_load: Option<&LoadProgress>,
) -> Result<Box<dyn Backend>, StartError> {
    let backend = load_unbounded(plan, settings, on_load)?;
    Ok(Box::new(Bounded::new(backend, MAX_TURN_BYTES)))
}

fn load_unbounded(
    plan: &BackendPlan,
    settings: &Settings,
    on_load: Option<&LoadProgress>,
) -> Result<Box<dyn Backend>, StartError> {
    match plan {
        BackendPlan::Script(script, _) => Ok(Box::new(script.clone())),
        BackendPlan::OpenAi { url, model, .. } => {
            let mut config = openai_config(url, settings);
            config.model = Some(model.clone());
            Ok(Box::new(crate::llm::openai::OpenAiBackend::connect(
                config,
            )?))
        }
        #[cfg(feature = "llama")]
        BackendPlan::Llama(path) => {
            let options = &settings.options;
            let backend = crate::llm::llama::LlamaBackend::load_reporting(
                path,
                &inference(options),
                chat_format(options),
                on_load.map(|l| l.0.clone()),
            )?
            .with_prefix_cache(!options.no_prefix_cache)
            .with_disk_prefix_cache(crate::llm::prefix_store::PrefixStore::in_cache(
                &settings.dirs.cache,
                options.prefix_cache_max_mib.saturating_mul(1 << 20),
            ));
            Ok(Box::new(backend))
        }
        #[cfg(not(feature = "llama"))]
        BackendPlan::Llama(_) => Err(StartError::Usage(crate::error::UsageError::Invalid(
            "this build has no llama backend (built without the `llama` feature): use --backend script:FILE".into(),
        ))),
    }
}

/// What a backend is given to load and sample from the run's options.
pub fn inference(options: &Resolved) -> InferenceSettings {
    InferenceSettings {
        ctx_size: options.ctx_size,
        threads: options.threads,
        gpu_layers: options.gpu_layers,
        batch_size: options.batch_size,
        max_tokens: options.max_tokens,
        temperature: options.temperature,
        top_k: options.top_k,
        top_p: options.top_p,
        min_p: options.min_p,
        repeat_penalty: options.repeat_penalty,
        seed: options.seed,
    }
}

/// The chat format the options ask for (`None`: auto).
pub(super) fn chat_format(options: &Resolved) -> Option<&str> {
    options.chat_format.as_ref().map(ChatFormatName::as_str)
}

/// What the openai backend takes from the settings.
pub fn openai_config(url: &str, settings: &Settings) -> crate::llm::openai::OpenAiConfig {
    let options = &settings.options;
    crate::llm::openai::OpenAiConfig {
        url: url.to_string(),
        model: options
            .model
            .as_ref()
            .map(|m| m.to_string_lossy().into_owned()),
        api_key_env: options.api_key_env.clone(),
        request_timeout: std::time::Duration::from_secs(options.request_timeout),
        // Only a context size the person gave: a default is no knowledge of the server's.
        ctx_fallback: (settings.sources.get("ctx_size") != Some(&crate::config::Source::Default))
            .then_some(options.ctx_size),
        chat_format: chat_format(options).map(String::from),
        sampling: crate::llm::openai::wire::Sampling {
            max_tokens: options.max_tokens,
            temperature: options.temperature,
            top_p: options.top_p,
            seed: options.seed,
        },
    }
}

/// The chat format the run's turns are parsed with: the backend's, else hermes; wrapped for
/// a backend that takes tools natively.
pub(super) fn turn_format(
    info: &crate::llm::BackendInfo,
) -> Result<Box<dyn chat::ChatFormat>, StartError> {
    let format = chat::by_name(&info.chat_format)
        .or_else(|| chat::by_name("hermes"))
        .ok_or_else(|| StartError::Internal("no chat format".into()))?;
    Ok(if info.native_tools {
        Box::new(chat::native::NativeTools(format))
    } else {
        format
    })
}

/// The model's source for `run.json` and its sha256. A file is made absolute, so `--resume`
/// finds it from any directory; a server's model name is kept as it is.
pub(super) fn model_source(plan: &BackendPlan, cache: &Path) -> (PathBuf, Option<String>) {
    let absolute = |path: &PathBuf| path.canonicalize().unwrap_or_else(|_| path.clone());
    match plan {
        BackendPlan::Script(_, path) => (
            absolute(path),
            crate::llm::prefix_store::file_sha256(path).ok(),
        ),
        // Read from the record the prefix cache keeps (hashed once per file identity).
        BackendPlan::Llama(path) => (
            absolute(path),
            crate::llm::prefix_store::model_sha256(&crate::llm::prefix_store::dir_in(cache), path),
        ),
        BackendPlan::OpenAi { model, .. } => (PathBuf::from(model), None),
    }
}
