//! Settings for one run: defaults, then `config.toml`, then the command line.
//!
//! `Settings` is the single resolved value the rest of the program reads; nothing else looks
//! at the CLI or the config file. The options themselves (names, types, defaults, help) are
//! declared once in `options`; this file reads the file, layers the three sources and checks
//! what spans options, once, so bad input is a usage error before anything touches the
//! workspace.

use std::path::{Path, PathBuf};

use crate::cli::Cli;
use crate::error::UsageError;
use crate::model_file::ModelMeta;
pub use crate::options::BackendKind;
use crate::options::{ApprovalPolicyArg, Options, SandboxModeArg};
pub use crate::options::{Hooks, NotifyMode};
use crate::protocol::policy::{ApprovalPolicy, SandboxMode};

/// The default model's file name inside the cache dir (see `make model`): Qwen2.5-Coder-1.5B
/// Instruct, Q4_K_M.
pub const DEFAULT_MODEL_FILE: &str = "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf";

/// The test suite's model inside the cache dir (`make model` fetches it too): SmolLM2-135M
/// Instruct, Q4_1, small enough for real-model tests to stay quick.
pub const TEST_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Reads a config file into the options it sets; a missing default file sets none, a
/// malformed one (bad syntax, unknown key, bad value) is an error naming the file and line.
pub fn load_config(path: &Path, must_exist: bool) -> Result<Options, UsageError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !must_exist => {
            return Ok(Options::default())
        }
        Err(e) => {
            return Err(UsageError::Config {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
    };
    toml::from_str(&text).map_err(|e| {
        // The line the problem starts on; one found at the very end is on the last line.
        let line = e.span().map(|span| {
            let before = &text.as_bytes()[..span.start.min(text.len())];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            line.min(text.lines().count().max(1))
        });
        let message = e
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(", ");
        UsageError::Config {
            path: path.to_path_buf(),
            message: match line {
                Some(line) => format!("line {line}: {message}"),
                None => message,
            },
        }
    })
}

/// Where ralph-tui keeps things, from the `directories` crate.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub config: PathBuf,
    pub data: PathBuf,
    pub cache: PathBuf,
}

/// Why a run without a home directory is refused, and the way out.
pub const NO_HOME: &str = "no home directory (HOME is unset, empty or relative, and this user has no passwd entry), so there is no safe place for the config and the run logs: set HOME, or pass both --run-dir DIR and --config FILE";

impl Dirs {
    /// The platform's directories (XDG on Linux), or `None` without a home directory, or
    /// when they would be relative (a relative `HOME`): never a directory beside the
    /// current one, which is usually the workspace the worker writes to.
    pub fn discover() -> Option<Self> {
        let p = directories::ProjectDirs::from("", "", "ralph-tui")?;
        let dirs = Self {
            config: p.config_dir().to_path_buf(),
            data: p.data_dir().to_path_buf(),
            cache: p.cache_dir().to_path_buf(),
        };
        [&dirs.config, &dirs.data, &dirs.cache]
            .iter()
            .all(|d| d.is_absolute())
            .then_some(dirs)
    }

    /// Without a home directory, what the command line names: the config file's directory,
    /// and the run directory's parent for the data (run locks, worktrees) and the cache.
    pub fn without_home(config_file: &Path, run_dir: &Path) -> Self {
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let parent = |p: &Path| {
            absolute(p)
                .parent()
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
        };
        let data = parent(run_dir);
        Self {
            config: parent(config_file),
            cache: data.clone(),
            data,
        }
    }

    pub fn default_model(&self) -> PathBuf {
        self.cache.join("models").join(DEFAULT_MODEL_FILE)
    }

    /// The test suite's model (see [`TEST_MODEL_FILE`]).
    pub fn test_model(&self) -> PathBuf {
        self.cache.join("models").join(TEST_MODEL_FILE)
    }
}

impl From<SandboxModeArg> for SandboxMode {
    fn from(arg: SandboxModeArg) -> Self {
        match arg {
            SandboxModeArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            SandboxModeArg::ReadOnly => SandboxMode::ReadOnly,
            SandboxModeArg::Off => SandboxMode::Off,
        }
    }
}

impl From<ApprovalPolicyArg> for ApprovalPolicy {
    fn from(arg: ApprovalPolicyArg) -> Self {
        match arg {
            ApprovalPolicyArg::Auto => ApprovalPolicy::Auto,
            ApprovalPolicyArg::Ask => ApprovalPolicy::Ask,
            ApprovalPolicyArg::Deny => ApprovalPolicy::Deny,
        }
    }
}

/// Sampling and context options for the llama backend.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InferenceSettings {
    pub ctx_size: u32,
    pub threads: i32,
    pub gpu_layers: Option<u32>,
    pub batch_size: u32,
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub seed: u32,
}

pub use crate::model_defaults::Source;

/// Where each inference setting came from, by option name (`ctx_size`, `temperature`, ...).
pub type Sources = std::collections::BTreeMap<String, Source>;

/// Everything one run needs, resolved and validated.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `None` when the TUI should ask for it.
    pub objective: Option<String>,
    pub workspace: PathBuf,
    pub max_rounds: u32,
    pub model: Option<PathBuf>,
    pub backend: BackendKind,
    pub headless: bool,
    pub run_dir: Option<PathBuf>,
    pub verify: Option<String>,
    pub sandbox: SandboxMode,
    pub approval: ApprovalPolicy,
    pub network: bool,
    /// Run in a new git worktree (`--worktree`), not in the user's checkout.
    pub worktree: bool,
    pub command_timeout_s: u64,
    pub max_turns: u32,
    pub token_budget: Option<u64>,
    pub chat_format: Option<String>,
    pub inference: InferenceSettings,
    /// Where each of `inference`'s values came from.
    pub sources: Sources,
    /// With `openai:URL`: the variable holding the API key (never the key itself).
    pub api_key_env: String,
    /// With `openai:URL`: how long a request may wait for the server, in seconds.
    pub request_timeout_s: u64,
    /// Restore the run's fixed prompt prefix into each round's context (`--no-prefix-cache`
    /// turns it off).
    pub prefix_cache: bool,
    /// Most bytes the prefix states kept on disk may take (0: none kept on disk).
    pub prefix_cache_max_bytes: u64,
    pub log_file: Option<PathBuf>,
    pub dirs: Dirs,
    /// How the TUI notifies while its terminal is not focused.
    pub notify: NotifyMode,
    /// Commands run at points of the run (`[hooks]` in `config.toml`).
    pub hooks: Hooks,
}

/// Validates an objective: trimmed, non-empty.
pub fn normalize_objective(raw: &str) -> Result<String, UsageError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(UsageError::EmptyObjective);
    }
    crate::intake::check_objective(trimmed)?;
    Ok(trimmed.to_string())
}

fn default_threads() -> i32 {
    std::thread::available_parallelism()
        .map(|n| i32::try_from(n.get()).unwrap_or(4))
        .unwrap_or(4)
}

impl Settings {
    /// Lays the command line over the config file over the defaults, and validates the result.
    pub fn resolve(cli: Cli, dirs: Dirs) -> Result<Self, UsageError> {
        let config = match &cli.config {
            Some(path) => load_config(path, true)?,
            None => load_config(&dirs.config.join("config.toml"), false)?,
        };
        let options = cli.options.clone().over(config);
        Self::layered(cli, options, dirs)
    }

    /// Validates `options` (already layered) with what only the command line says; `--resume`
    /// layers the command line over the old run's settings instead of over the config file.
    pub fn layered(cli: Cli, options: Options, dirs: Dirs) -> Result<Self, UsageError> {
        let sources = inference_sources(&cli.options, &options);
        let options = options.resolve();

        let objective = match (&cli.objective, &cli.objective_file) {
            (Some(text), _) => Some(normalize_objective(text)?),
            (None, Some(path)) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| UsageError::ObjectiveFile {
                        path: path.clone(),
                        source,
                    })?;
                Some(normalize_objective(&text)?)
            }
            (None, None) => None,
        };

        let workspace = cli.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        if !workspace.is_dir() {
            return Err(UsageError::WorkspaceNotDir(workspace));
        }
        let workspace = workspace
            .canonicalize()
            .map_err(|_| UsageError::WorkspaceNotDir(workspace.clone()))?;

        let approval = ApprovalPolicy::from(options.approval);
        if cli.headless && approval == ApprovalPolicy::Ask {
            return Err(UsageError::Invalid(
                "--approval ask needs the TUI: use --approval auto or deny with --headless".into(),
            ));
        }

        let builtin = crate::model_defaults::CODING;
        let inference = InferenceSettings {
            ctx_size: options
                .ctx_size
                .unwrap_or(crate::model_defaults::FALLBACK_CTX),
            threads: options.threads.unwrap_or_else(default_threads),
            gpu_layers: options.gpu_layers,
            batch_size: options.batch_size,
            max_tokens: options.max_tokens,
            temperature: options.temperature.unwrap_or(builtin.temperature),
            top_k: options.top_k.unwrap_or(builtin.top_k),
            top_p: options.top_p.unwrap_or(builtin.top_p),
            min_p: options.min_p.unwrap_or(builtin.min_p),
            repeat_penalty: options.repeat_penalty.unwrap_or(builtin.repeat_penalty),
            seed: options.seed,
        };
        if inference.ctx_size < 256 {
            return Err(UsageError::Invalid(format!(
                "--ctx-size {} is too small: use at least 256",
                inference.ctx_size
            )));
        }
        if inference.threads < 1 || inference.batch_size < 1 || inference.max_tokens < 1 {
            return Err(UsageError::Invalid(
                "--threads, --batch-size and --max-tokens must be at least 1".into(),
            ));
        }
        if options.request_timeout < 1 {
            return Err(UsageError::Invalid(
                "--request-timeout must be at least 1 second".into(),
            ));
        }
        if options.max_turns < 1 {
            return Err(UsageError::Invalid("--max-turns must be at least 1".into()));
        }

        Ok(Self {
            objective,
            workspace,
            max_rounds: options.max_rounds.get(),
            model: options.model,
            backend: options.backend,
            headless: cli.headless,
            run_dir: options.run_dir,
            verify: options.verify,
            sandbox: options.sandbox.into(),
            approval,
            network: options.network,
            worktree: options.worktree,
            command_timeout_s: options.command_timeout,
            max_turns: options.max_turns,
            token_budget: options.token_budget,
            chat_format: options.chat_format.map(String::from),
            inference,
            sources,
            api_key_env: options.api_key_env,
            request_timeout_s: options.request_timeout,
            prefix_cache: !options.no_prefix_cache,
            prefix_cache_max_bytes: options.prefix_cache_max_mib.saturating_mul(1 << 20),
            log_file: cli.log_file,
            dirs,
            notify: options.notify,
            hooks: options.hooks,
        })
    }

    /// The model file this run will load: `--model`, the config's, else the default model.
    pub fn model_path(&self) -> PathBuf {
        self.model
            .clone()
            .unwrap_or_else(|| self.dirs.default_model())
    }

    /// Fills the settings nobody set (source [`Source::Default`]) from the model's metadata:
    /// the context size from its trained context, capped by `available` memory (bytes, where
    /// known) less the model's `model_bytes`; sampling from its `general.sampling.*` keys.
    /// Values set on the command line, in the config file or by a resumed run stay as set.
    pub fn take_model_defaults(
        &mut self,
        meta: &ModelMeta,
        model_bytes: u64,
        available: Option<u64>,
    ) {
        use crate::model_defaults as defaults;
        if self.sources.get("ctx_size") == Some(&Source::Default) {
            let choice = defaults::context_size(
                meta.trained_context(),
                meta.kv_bytes_per_token(defaults::KV_BYTES_PER_VALUE),
                available.map(|a| defaults::kv_budget(a, model_bytes)),
            );
            self.inference.ctx_size = choice.ctx_size;
            self.sources.insert("ctx_size".into(), choice.source);
        }
        let hints = defaults::model_sampling(meta);
        let (sources, inference) = (&mut self.sources, &mut self.inference);
        fill(
            sources,
            "temperature",
            &mut inference.temperature,
            hints.temperature,
        );
        fill(sources, "top_k", &mut inference.top_k, hints.top_k);
        fill(sources, "top_p", &mut inference.top_p, hints.top_p);
        fill(sources, "min_p", &mut inference.min_p, hints.min_p);
        fill(
            sources,
            "repeat_penalty",
            &mut inference.repeat_penalty,
            hints.repeat_penalty,
        );
    }
}

/// Sets `value` to the model's `hint` when nobody set it (its source is the default).
fn fill<T>(sources: &mut Sources, key: &str, value: &mut T, hint: Option<T>) {
    if let Some(hint) = hint {
        if sources.get(key) == Some(&Source::Default) {
            *value = hint;
            sources.insert(key.to_string(), Source::Model);
        }
    }
}

/// Where each inference option comes from: the command line where `cli` sets it, else the
/// config file where `layered` (the layers together) does, else the built-in default.
fn inference_sources(cli: &Options, layered: &Options) -> Sources {
    let pick = |on_cli: bool, set: bool| match (on_cli, set) {
        (true, _) => Source::CommandLine,
        (false, true) => Source::ConfigFile,
        (false, false) => Source::Default,
    };
    [
        (
            "ctx_size",
            cli.ctx_size.is_some(),
            layered.ctx_size.is_some(),
        ),
        ("threads", cli.threads.is_some(), layered.threads.is_some()),
        (
            "gpu_layers",
            cli.gpu_layers.is_some(),
            layered.gpu_layers.is_some(),
        ),
        (
            "batch_size",
            cli.batch_size.is_some(),
            layered.batch_size.is_some(),
        ),
        (
            "max_tokens",
            cli.max_tokens.is_some(),
            layered.max_tokens.is_some(),
        ),
        (
            "temperature",
            cli.temperature.is_some(),
            layered.temperature.is_some(),
        ),
        ("top_k", cli.top_k.is_some(), layered.top_k.is_some()),
        ("top_p", cli.top_p.is_some(), layered.top_p.is_some()),
        ("min_p", cli.min_p.is_some(), layered.min_p.is_some()),
        (
            "repeat_penalty",
            cli.repeat_penalty.is_some(),
            layered.repeat_penalty.is_some(),
        ),
        ("seed", cli.seed.is_some(), layered.seed.is_some()),
    ]
    .into_iter()
    .map(|(key, on_cli, set)| (key.to_string(), pick(on_cli, set)))
    .collect()
}
