//! Settings for one run: defaults, then `config.toml`, then the command line.
//!
//! `Settings` is the single resolved value the rest of the program reads; nothing else looks
//! at the CLI or the config file. Validation happens here, once, so bad input is a usage
//! error before anything touches the workspace.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cli::Cli;
use crate::error::UsageError;

pub const DEFAULT_MAX_ROUNDS: u32 = 8;
pub const MAX_ROUNDS_CEILING: u32 = 64;
/// The default model's file name inside the cache dir (see `make model`).
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The keys `config.toml` may hold; each mirrors the long option of the same name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ConfigFile {
    pub max_rounds: Option<u32>,
    pub model: Option<PathBuf>,
    pub backend: Option<String>,
    pub run_dir: Option<PathBuf>,
    pub verify: Option<String>,
    pub sandbox: Option<String>,
    pub approval: Option<String>,
    pub network: Option<bool>,
    pub command_timeout: Option<u64>,
    pub max_turns: Option<u32>,
    pub token_budget: Option<u64>,
    pub chat_format: Option<String>,
    pub ctx_size: Option<u32>,
    pub threads: Option<i32>,
    pub gpu_layers: Option<u32>,
    pub batch_size: Option<u32>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_k: Option<i32>,
    pub top_p: Option<f32>,
    pub min_p: Option<f32>,
    pub repeat_penalty: Option<f32>,
    pub seed: Option<u32>,
}

impl ConfigFile {
    /// Reads a config file; a missing default file is an empty config, a malformed one an error
    /// naming the file and line.
    pub fn load(path: &Path, must_exist: bool) -> Result<Self, UsageError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !must_exist => {
                return Ok(Self::default())
            }
            Err(e) => {
                return Err(UsageError::Config {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                })
            }
        };
        toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
            let message = e.message().trim().to_string();
            UsageError::Config {
                path: path.to_path_buf(),
                message: match line {
                    Some(line) => format!("line {line}: {message}"),
                    None => message,
                },
            }
        })
    }
}

/// Where ralph-tui keeps things, from the `directories` crate.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub config: PathBuf,
    pub data: PathBuf,
    pub cache: PathBuf,
}

impl Dirs {
    pub fn discover() -> Self {
        match directories::ProjectDirs::from("", "", "ralph-tui") {
            Some(p) => Self {
                config: p.config_dir().to_path_buf(),
                data: p.data_dir().to_path_buf(),
                cache: p.cache_dir().to_path_buf(),
            },
            None => Self {
                config: PathBuf::from(".ralph-tui"),
                data: PathBuf::from(".ralph-tui"),
                cache: PathBuf::from(".ralph-tui"),
            },
        }
    }

    pub fn default_model(&self) -> PathBuf {
        self.cache.join("models").join(DEFAULT_MODEL_FILE)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendKind {
    Llama,
    Script(PathBuf),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    WorkspaceWrite,
    ReadOnly,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    Auto,
    Ask,
    Deny,
}

/// Sampling and context options for the llama backend.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
    pub command_timeout_s: u64,
    pub max_turns: u32,
    pub token_budget: Option<u64>,
    pub chat_format: Option<String>,
    pub inference: InferenceSettings,
    pub log_file: Option<PathBuf>,
    pub dirs: Dirs,
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

/// Parses a round count: a whole number in 1..=64, never clamped.
pub fn parse_max_rounds(raw: &str) -> Result<u32, UsageError> {
    match raw.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_ROUNDS_CEILING).contains(&n) => Ok(n),
        _ => Err(UsageError::MaxRounds(raw.to_string())),
    }
}

fn parse_backend(raw: &str) -> Result<BackendKind, UsageError> {
    if raw == "llama" {
        return Ok(BackendKind::Llama);
    }
    match raw.strip_prefix("script:") {
        Some(path) if !path.is_empty() => Ok(BackendKind::Script(PathBuf::from(path))),
        _ => Err(UsageError::Backend(raw.to_string())),
    }
}

fn parse_sandbox(raw: &str) -> Result<SandboxMode, UsageError> {
    match raw {
        "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
        "read-only" => Ok(SandboxMode::ReadOnly),
        "off" => Ok(SandboxMode::Off),
        other => Err(UsageError::Invalid(format!(
            "unknown --sandbox '{other}': use workspace-write, read-only or off"
        ))),
    }
}

fn parse_approval(raw: &str) -> Result<ApprovalPolicy, UsageError> {
    match raw {
        "auto" => Ok(ApprovalPolicy::Auto),
        "ask" => Ok(ApprovalPolicy::Ask),
        "deny" => Ok(ApprovalPolicy::Deny),
        other => Err(UsageError::Invalid(format!(
            "unknown --approval '{other}': use auto, ask or deny"
        ))),
    }
}

fn default_threads() -> i32 {
    std::thread::available_parallelism()
        .map(|n| i32::try_from(n.get()).unwrap_or(4))
        .unwrap_or(4)
}

impl Settings {
    /// Merges defaults, the config file and the command line, and validates the result.
    pub fn resolve(cli: Cli, dirs: Dirs) -> Result<Self, UsageError> {
        let config = match &cli.config {
            Some(path) => ConfigFile::load(path, true)?,
            None => ConfigFile::load(&dirs.config.join("config.toml"), false)?,
        };

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

        let max_rounds = match (&cli.max_rounds, config.max_rounds) {
            (Some(raw), _) => parse_max_rounds(raw)?,
            (None, Some(n)) => parse_max_rounds(&n.to_string())?,
            (None, None) => DEFAULT_MAX_ROUNDS,
        };

        let workspace = cli.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        if !workspace.is_dir() {
            return Err(UsageError::WorkspaceNotDir(workspace));
        }
        let workspace = workspace
            .canonicalize()
            .map_err(|_| UsageError::WorkspaceNotDir(workspace.clone()))?;

        let backend = match cli.backend.as_deref().or(config.backend.as_deref()) {
            Some(raw) => parse_backend(raw)?,
            None => BackendKind::Llama,
        };
        let sandbox = match cli.sandbox.as_deref().or(config.sandbox.as_deref()) {
            Some(raw) => parse_sandbox(raw)?,
            None => SandboxMode::WorkspaceWrite,
        };
        let approval = match cli.approval.as_deref().or(config.approval.as_deref()) {
            Some(raw) => parse_approval(raw)?,
            None => ApprovalPolicy::Auto,
        };
        if cli.headless && approval == ApprovalPolicy::Ask {
            return Err(UsageError::Invalid(
                "--approval ask needs the TUI: use --approval auto or deny with --headless".into(),
            ));
        }

        let inference = InferenceSettings {
            ctx_size: cli.ctx_size.or(config.ctx_size).unwrap_or(4096),
            threads: cli
                .threads
                .or(config.threads)
                .unwrap_or_else(default_threads),
            gpu_layers: cli.gpu_layers.or(config.gpu_layers),
            batch_size: cli.batch_size.or(config.batch_size).unwrap_or(64),
            max_tokens: cli.max_tokens.or(config.max_tokens).unwrap_or(1024),
            temperature: cli.temperature.or(config.temperature).unwrap_or(0.7),
            top_k: cli.top_k.or(config.top_k).unwrap_or(40),
            top_p: cli.top_p.or(config.top_p).unwrap_or(0.95),
            min_p: cli.min_p.or(config.min_p).unwrap_or(0.05),
            repeat_penalty: cli.repeat_penalty.or(config.repeat_penalty).unwrap_or(1.1),
            seed: cli.seed.or(config.seed).unwrap_or(1234),
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
        let max_turns = cli.max_turns.or(config.max_turns).unwrap_or(24);
        if max_turns < 1 {
            return Err(UsageError::Invalid("--max-turns must be at least 1".into()));
        }

        Ok(Self {
            objective,
            workspace,
            max_rounds,
            model: cli.model.clone().or(config.model),
            backend,
            headless: cli.headless,
            run_dir: cli.run_dir.clone().or(config.run_dir),
            verify: cli.verify.clone().or(config.verify),
            sandbox,
            approval,
            network: cli.network || config.network.unwrap_or(false),
            command_timeout_s: cli
                .command_timeout
                .or(config.command_timeout)
                .unwrap_or(120),
            max_turns,
            token_budget: cli.token_budget.or(config.token_budget),
            chat_format: cli.chat_format.clone().or(config.chat_format),
            inference,
            log_file: cli.log_file.clone(),
            dirs,
        })
    }

    /// The model file this run will load: `--model`, the config's, else the default model.
    pub fn model_path(&self) -> PathBuf {
        self.model
            .clone()
            .unwrap_or_else(|| self.dirs.default_model())
    }
}
