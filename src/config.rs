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
use crate::intake::normalize_objective;
use crate::model_file::ModelMeta;
pub use crate::options::BackendKind;
pub use crate::options::{Hooks, NotifyMode};
use crate::options::{OptionTable, Options, Resolved};
use crate::protocol::policy::ApprovalPolicy;

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
        let message = crate::error::in_plain_words(e.message());
        let message = message
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

pub use crate::model_defaults::Source;

/// Where each option's value came from, by config key (`ctx_size`, `temperature`, ...).
pub type Sources = std::collections::BTreeMap<String, Source>;

/// Everything one run needs, resolved and validated: the options (one record, [`Resolved`],
/// the same one `run.json` keeps) and what only the command line says.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `None` when the TUI should ask for it.
    pub objective: Option<String>,
    pub workspace: PathBuf,
    pub headless: bool,
    pub log_file: Option<PathBuf>,
    /// The file the run reads the person's notes from (`--notes FILE`), one a line.
    pub notes: Option<PathBuf>,
    pub dirs: Dirs,
    /// Every option, layered and resolved.
    pub options: Resolved,
    /// Where each option's value came from.
    pub sources: Sources,
}

/// What the command line says about a run beside its options: the objective, the workspace,
/// the mode and the log file. Plain data, so layers below the command line can build one.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    pub objective: Option<String>,
    pub objective_file: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub headless: bool,
    pub log_file: Option<PathBuf>,
    pub notes: Option<PathBuf>,
}

impl From<&Cli> for Launch {
    fn from(cli: &Cli) -> Self {
        Self {
            objective: cli.objective.clone(),
            objective_file: cli.objective_file.clone(),
            workspace: cli.workspace.clone(),
            headless: cli.headless,
            log_file: cli.log_file.clone(),
            notes: cli.notes.clone(),
        }
    }
}

/// Where each option comes from: the first of `layers` (highest first) that sets it, else
/// the built-in default.
pub fn sources<O: OptionTable>(layers: &[(&O, Source)]) -> Sources {
    O::KEYS
        .iter()
        .map(|key| {
            let source = layers
                .iter()
                .find(|(options, _)| options.is_set(key))
                .map_or(Source::Default, |(_, source)| *source);
            (key.to_string(), source)
        })
        .collect()
}

impl Settings {
    /// Lays the command line over the config file over the defaults, and validates the result.
    pub fn resolve(cli: Cli, dirs: Dirs) -> Result<Self, UsageError> {
        let config = match &cli.config {
            Some(path) => load_config(path, true)?,
            None => load_config(&dirs.config.join("config.toml"), false)?,
        };
        let sources = sources(&[
            (&cli.options, Source::CommandLine),
            (&config, Source::ConfigFile),
        ]);
        let options = cli.options.clone().over(config);
        Self::layered(Launch::from(&cli), options, sources, dirs)
    }

    /// Validates `options` (already layered, each value from where `sources` says) with what
    /// only the command line says; `--resume` layers the command line over the old run's
    /// options instead of over the config file.
    pub fn layered(
        launch: Launch,
        options: Options,
        sources: Sources,
        dirs: Dirs,
    ) -> Result<Self, UsageError> {
        let options = options.resolve();
        let objective = objective_of(&launch)?;
        let workspace = workspace_of(&launch)?;
        if launch.headless && options.approval == ApprovalPolicy::Ask {
            return Err(UsageError::Invalid(
                "--approval ask needs the TUI: use --approval auto or deny with --headless".into(),
            ));
        }
        check_numbers(&options)?;
        Ok(Self {
            objective,
            workspace,
            headless: launch.headless,
            log_file: launch.log_file,
            notes: launch.notes,
            dirs,
            options,
            sources,
        })
    }

    /// The model file this run will load: `--model`, the config's, else the default model.
    pub fn model_path(&self) -> PathBuf {
        self.options
            .model
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
            self.options.ctx_size = choice.ctx_size;
            self.sources.insert("ctx_size".into(), choice.source);
        }
        let hints = defaults::model_sampling(meta);
        let (sources, options) = (&mut self.sources, &mut self.options);
        fill(
            sources,
            "temperature",
            &mut options.temperature,
            hints.temperature,
        );
        fill(sources, "top_k", &mut options.top_k, hints.top_k);
        fill(sources, "top_p", &mut options.top_p, hints.top_p);
        fill(sources, "min_p", &mut options.min_p, hints.min_p);
        fill(
            sources,
            "repeat_penalty",
            &mut options.repeat_penalty,
            hints.repeat_penalty,
        );
    }
}

/// The objective the command line gives, itself or in a file, checked.
fn objective_of(launch: &Launch) -> Result<Option<String>, UsageError> {
    match (&launch.objective, &launch.objective_file) {
        (Some(text), _) => Ok(Some(normalize_objective(text)?)),
        (None, Some(path)) => {
            let text =
                std::fs::read_to_string(path).map_err(|source| UsageError::ObjectiveFile {
                    path: path.clone(),
                    source,
                })?;
            Ok(Some(normalize_objective(&text)?))
        }
        (None, None) => Ok(None),
    }
}

/// The workspace directory (the current one unless given), made absolute.
fn workspace_of(launch: &Launch) -> Result<PathBuf, UsageError> {
    let workspace = launch
        .workspace
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    if !workspace.is_dir() {
        return Err(UsageError::WorkspaceNotDir(workspace));
    }
    workspace
        .canonicalize()
        .map_err(|_| UsageError::WorkspaceNotDir(workspace.clone()))
}

/// Refuses numbers no run can work with: a context under 256 tokens, no threads, an empty
/// batch, no tokens or turns, a request timeout under a second.
fn check_numbers(options: &Resolved) -> Result<(), UsageError> {
    if options.ctx_size < 256 {
        return Err(UsageError::Invalid(format!(
            "--ctx-size {} is too small: use at least 256",
            options.ctx_size
        )));
    }
    if options.threads < 1 || options.batch_size < 1 || options.max_tokens < 1 {
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
    Ok(())
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
