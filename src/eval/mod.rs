//! Evals: does a bounded Ralph run finish repository tasks more often, and more honestly, than
//! one ordinary session with the same token budget, and more often than no agent at all (one
//! answer of whole files, the floor an agent loop must beat)? And what do the round context's
//! two parts (the check, the observation) add to the loop?
//!
//! The harness drives the real `ralph-tui` binary headless, exactly as a person runs it, on
//! fresh copies of small task repositories, and judges each final tree with the task's own
//! verify script, which the worker never sees. Per task × seed it runs the Ralph arm first
//! (`-n ROUNDS`, `--observe on`, `--check` the task's visible check or `auto`), then the same
//! loop without them (`ralph-plain`: `--observe off --check off`), then the single arm (`-n 1`,
//! many turns, the Ralph arm's observe and check, a token budget equal to what the Ralph arm
//! generated), then the oneshot arm (one generation through the same backend and settings, no
//! tools: the files it writes in full are written by the harness, see `oneshot`), and records
//! the independent verdict beside the worker's own claim. For the agent arms the engine's
//! events are the only thing measured; nothing here reaches into its internals.

pub mod metrics;
mod oneshot;
pub mod process;
pub mod results;
pub mod task;
mod trial;
pub mod whole_file;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::options::ObserveMode;

use results::{ArmSettings, ArmSummary, CheckChoice, EvalResults, ModelInfo, RunRecord, TaskCheck};
use trial::{Limits, Setup};

/// The ways of spending the same work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arm {
    /// A bounded Ralph run as the product runs it: up to N fresh rounds joined by one
    /// validated report, each round shown the workspace and the repository's check.
    Ralph,
    /// The same loop with neither the observation nor the check, so what they add is
    /// measured on the same tasks and seeds.
    RalphPlain,
    /// One ordinary session: one child, the same tools, observation and check as the Ralph
    /// arm, the Ralph arm's token total.
    Single,
    /// No agent: one generation that sees the objective and the repository's files and
    /// answers with whole files, which the harness writes. No tools, no rounds.
    Oneshot,
}

impl Arm {
    /// Every arm, in the order each task and seed runs them (the Ralph arm's generated tokens
    /// budget the single and oneshot arms after it).
    pub const ALL: [Self; 4] = [Self::Ralph, Self::RalphPlain, Self::Single, Self::Oneshot];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ralph => "ralph",
            Self::RalphPlain => "ralph-plain",
            Self::Single => "single",
            Self::Oneshot => "oneshot",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        Self::ALL.into_iter().find(|arm| arm.as_str() == text)
    }

    /// Whether the arm gets the round context (the observation and the check): the product's
    /// loop and the one ordinary session do, so they differ only in one long context against
    /// fresh rounds; `ralph-plain` and the oneshot arm do not.
    pub fn has_round_context(self) -> bool {
        matches!(self, Self::Ralph | Self::Single)
    }
}

/// Which backend the ralph-tui runs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// The real model (`--backend llama`).
    Llama,
    /// Each task's `script.json` (`--backend script:FILE`): fully deterministic.
    Script,
}

impl BackendChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Script => "script",
        }
    }
}

/// Why an eval could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Usage(String),
    #[error("task {task}: {message}")]
    Task { task: String, message: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("ralph-tui refused the {arm} run of {task}: {message}")]
    Refused {
        task: String,
        arm: &'static str,
        message: String,
    },
}

impl EvalError {
    /// Whether the person asked for something impossible (as opposed to a failure).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::Usage(_) | Self::Task { .. } | Self::Refused { .. }
        )
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub tasks_dir: PathBuf,
    /// Keep tasks whose name contains any of these (all when empty).
    pub filters: Vec<String>,
    pub backend: BackendChoice,
    /// The GGUF file for the llama backend (`None`: the default model `make model` fetches).
    pub model: Option<PathBuf>,
    /// `-n` for the Ralph arms.
    pub rounds: u32,
    pub seeds: Vec<u32>,
    pub arms: Vec<Arm>,
    pub ralph_bin: PathBuf,
    /// `--max-turns` per round for the Ralph arms (`None`: ralph-tui's default).
    pub max_turns: Option<u32>,
    /// `--max-tokens` (per turn) for the agent arms, and the oneshot answer's room beyond its
    /// files (`None`: ralph-tui's default).
    pub max_tokens: Option<u32>,
    /// `--max-turns` for the single arm's one long session.
    pub single_max_turns: u32,
    /// The single arm's token budget when there is no Ralph arm to take it from.
    pub single_budget: Option<u64>,
    /// The oneshot arm's cap on its one generation (`None`: the Ralph arm's generated tokens
    /// for the task and seed, but at least room for the task's files; see `oneshot`).
    pub oneshot_max_tokens: Option<u32>,
    pub run_timeout: Duration,
    pub verify_timeout: Duration,
    /// Passed to every ralph-tui run (e.g. `--ctx-size 8192`).
    pub extra_args: Vec<String>,
    /// Names the results files (default: the model file's stem, or `script`).
    pub label: Option<String>,
    /// Keep every run's workspace, run log and verify output under this folder (default: a
    /// temporary folder, deleted at the end).
    pub keep_in: Option<PathBuf>,
}

impl EvalOptions {
    /// The model server the extra arguments name (`-- --backend openai:URL -m NAME`): the
    /// runs use it instead of `backend`, and the extra arguments carry the model name.
    pub fn server_backend(&self) -> Option<&str> {
        let args = &self.extra_args;
        args.iter().enumerate().find_map(|(i, a)| {
            let value = match a.strip_prefix("--backend=") {
                Some(value) => value,
                None if a == "--backend" => args.get(i + 1)?.as_str(),
                None => return None,
            };
            value.starts_with("openai:").then_some(value)
        })
    }

    /// The defaults, for the given tasks folder and ralph-tui binary.
    pub fn new(tasks_dir: PathBuf, ralph_bin: PathBuf) -> Self {
        Self {
            tasks_dir,
            filters: Vec::new(),
            backend: BackendChoice::Llama,
            model: None,
            rounds: 4,
            seeds: vec![1],
            arms: Arm::ALL.to_vec(),
            ralph_bin,
            max_turns: None,
            max_tokens: None,
            single_max_turns: 200,
            single_budget: None,
            oneshot_max_tokens: None,
            run_timeout: Duration::from_secs(900),
            verify_timeout: Duration::from_secs(300),
            extra_args: Vec::new(),
            label: None,
            keep_in: None,
        }
    }

    fn check(&self) -> Result<(), EvalError> {
        let usage = |m: &str| Err(EvalError::Usage(m.to_string()));
        if !(1..=64).contains(&self.rounds) {
            return usage("--rounds must be from 1 to 64");
        }
        if self.seeds.is_empty() {
            return usage("give at least one seed");
        }
        if self.arms.is_empty() {
            return usage("give at least one arm: ralph, ralph-plain, single, oneshot");
        }
        if self.single_max_turns == 0 || self.max_turns == Some(0) {
            return usage("turn limits must be at least 1");
        }
        if self.max_tokens == Some(0) || self.oneshot_max_tokens == Some(0) {
            return usage("--max-tokens and --oneshot-max-tokens must be at least 1");
        }
        if self.arms.contains(&Arm::Single)
            && !self.arms.contains(&Arm::Ralph)
            && self.single_budget.is_none()
        {
            return usage(
                "the single arm's token budget comes from the Ralph arm: run the Ralph arm too, or give --single-budget N",
            );
        }
        if !self.ralph_bin.is_file() {
            return Err(EvalError::Usage(format!(
                "no ralph-tui binary at {}: build it with `cargo build`, or pass --ralph-bin PATH",
                self.ralph_bin.display()
            )));
        }
        Ok(())
    }
}

/// What the harness tells its caller as it goes.
#[derive(Debug)]
pub enum Progress<'a> {
    Started {
        index: usize,
        total: usize,
        task: &'a str,
        arm: Arm,
        seed: u32,
    },
    Finished {
        index: usize,
        total: usize,
        record: &'a RunRecord,
    },
}

/// A folder for workspaces and run logs, removed when dropped unless kept.
struct Scratch {
    dir: PathBuf,
    keep: bool,
}

impl Scratch {
    fn create(keep_in: Option<&Path>) -> Result<Self, EvalError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!("ralph-eval-{}-{nanos:x}", std::process::id());
        let (dir, keep) = match keep_in {
            Some(dir) => (dir.join(name), true),
            None => (std::env::temp_dir().join(name), false),
        };
        std::fs::create_dir_all(&dir).map_err(|source| EvalError::Io {
            what: format!("cannot create the scratch folder {}", dir.display()),
            source,
        })?;
        Ok(Self { dir, keep })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Runs every selected task × seed × arm and returns the results (not yet written).
/// Cancelling stops the run in progress (it is left out) and returns what was done, marked
/// `interrupted`.
pub fn run(
    options: &EvalOptions,
    cancel: &CancellationToken,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<EvalResults, EvalError> {
    options.check()?;
    let tasks = task::discover(&options.tasks_dir, &options.filters)?;
    let server = options.server_backend();
    if server.is_none() && options.backend == BackendChoice::Script {
        check_script_tasks(options, &tasks)?;
    }
    let model = match options.backend {
        _ if server.is_some() => None,
        BackendChoice::Llama => Some(model_path(options)?),
        BackendChoice::Script => None,
    };
    let model_info = model.as_deref().map(model_info).transpose()?;
    let limits = trial::resolve_limits(options)?;
    let label = results_label(options.label.as_deref(), model.as_deref(), server.is_some());
    let ralph_version = ralph_version(&options.ralph_bin)?;
    let scratch = Scratch::create(options.keep_in.as_deref())?;
    let config = scratch.dir.join("config.toml");
    std::fs::write(&config, "").map_err(|source| EvalError::Io {
        what: "cannot write the empty config file".into(),
        source,
    })?;
    let setup = Setup {
        options,
        model,
        config,
        scratch: &scratch.dir,
        limits,
    };

    let started = chrono::Utc::now();
    let arms: Vec<Arm> = Arm::ALL
        .into_iter()
        .filter(|a| options.arms.contains(a))
        .collect();
    let (runs, interrupted) = run_all(&setup, &tasks, &arms, cancel, progress)?;
    let summary = arms.iter().map(|&arm| ArmSummary::of(arm, &runs)).collect();
    let arm_settings = arms
        .iter()
        .map(|&arm| arm_settings(options, limits, arm))
        .collect();
    Ok(EvalResults {
        date: started.format("%Y-%m-%d").to_string(),
        started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        finished_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        backend: match server {
            Some(_) => "openai".into(),
            None => options.backend.as_str().into(),
        },
        label,
        model: model_info,
        ralph_version,
        cpus: std::thread::available_parallelism().map_or(1, usize::from),
        rounds: options.rounds,
        seeds: options.seeds.clone(),
        arms,
        max_turns: options.max_turns,
        max_tokens: options.max_tokens,
        single_max_turns: options.single_max_turns,
        oneshot_max_tokens: options.oneshot_max_tokens,
        arm_settings,
        task_checks: tasks
            .iter()
            .map(|t| TaskCheck {
                task: t.name.clone(),
                check: t.check.clone(),
            })
            .collect(),
        extra_args: options.extra_args.clone(),
        tasks: tasks.iter().map(|t| t.name.clone()).collect(),
        interrupted,
        runs,
        summary,
    })
}

/// What `arm` runs with under `options`, the turn limits as ralph-tui resolves them.
fn arm_settings(options: &EvalOptions, limits: Limits, arm: Arm) -> ArmSettings {
    let check = if arm.has_round_context() {
        CheckChoice::TaskElseAuto
    } else {
        CheckChoice::Off
    };
    let ralph = |observe| ArmSettings {
        arm,
        rounds: options.rounds,
        max_turns: limits.max_turns,
        max_tokens: limits.max_tokens,
        observe: Some(observe),
        check: Some(check),
        budget: "none".into(),
    };
    match arm {
        Arm::Ralph => ralph(ObserveMode::On),
        Arm::RalphPlain => ralph(ObserveMode::Off),
        Arm::Single => ArmSettings {
            rounds: 1,
            max_turns: options.single_max_turns,
            budget: match options.single_budget {
                Some(n) => n.to_string(),
                None => "the ralph arm's generated tokens".into(),
            },
            ..ralph(ObserveMode::On)
        },
        Arm::Oneshot => ArmSettings {
            arm,
            rounds: 0,
            max_turns: 1,
            max_tokens: limits.max_tokens,
            observe: None,
            check: None,
            budget: match options.oneshot_max_tokens {
                Some(n) => n.to_string(),
                None if options.arms.contains(&Arm::Ralph) => {
                    "the ralph arm's generated tokens, at least room for the files".into()
                }
                None => "room for the files".into(),
            },
        },
    }
}

/// The model file's name and checksum, for the results.
fn model_info(path: &Path) -> Result<ModelInfo, EvalError> {
    Ok(ModelInfo {
        file: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sha256: sha256_file(path)?,
    })
}

/// The results' label: `--label`, else the model file's stem, else the backend's kind.
fn results_label(label: Option<&str>, model: Option<&Path>, server: bool) -> String {
    sanitize_label(&match (label, model) {
        (Some(label), _) => label.to_string(),
        (None, Some(path)) => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into()),
        (None, None) if server => "server".into(),
        (None, None) => "script".into(),
    })
}

/// The script backend needs each task's script (for the agent arms) and canned answer (for
/// the oneshot arm): the first task that lacks one it needs is an error.
fn check_script_tasks(options: &EvalOptions, tasks: &[task::Task]) -> Result<(), EvalError> {
    let agents = options.arms.iter().any(|&a| a != Arm::Oneshot);
    if let Some(task) = tasks.iter().find(|t| agents && t.script.is_none()) {
        return Err(EvalError::Task {
            task: task.name.clone(),
            message: "it has no script.json, which the script backend needs".into(),
        });
    }
    let oneshot = options.arms.contains(&Arm::Oneshot);
    if let Some(task) = tasks.iter().find(|t| oneshot && t.oneshot.is_none()) {
        return Err(EvalError::Task {
            task: task.name.clone(),
            message: "it has no oneshot.txt, which the oneshot arm needs with the script backend"
                .into(),
        });
    }
    Ok(())
}

/// Runs every task × seed × arm in order (the Ralph arm's generated tokens budget the arms
/// after it): the records, and whether a cancel or an interrupted run cut it short.
fn run_all(
    setup: &Setup<'_>,
    tasks: &[task::Task],
    arms: &[Arm],
    cancel: &CancellationToken,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(Vec<RunRecord>, bool), EvalError> {
    let options = setup.options;
    let total = tasks.len() * options.seeds.len() * arms.len();
    let mut runs = Vec::new();
    let mut index = 0;
    let mut interrupted = false;
    'all: for task in tasks {
        for &seed in &options.seeds {
            let mut ralph_generated = None;
            for &arm in arms {
                if cancel.is_cancelled() {
                    interrupted = true;
                    break 'all;
                }
                index += 1;
                progress(Progress::Started {
                    index,
                    total,
                    task: &task.name,
                    arm,
                    seed,
                });
                let outcome = match arm {
                    Arm::Ralph | Arm::RalphPlain => {
                        trial::run_one(setup, task, arm, seed, None, cancel)?
                    }
                    Arm::Single => {
                        let budget = options.single_budget.or(ralph_generated);
                        trial::run_one(setup, task, arm, seed, budget, cancel)?
                    }
                    Arm::Oneshot => oneshot::run_one(setup, task, seed, ralph_generated, cancel)?,
                };
                let Some(record) = outcome else {
                    interrupted = true;
                    break 'all;
                };
                if arm == Arm::Ralph {
                    ralph_generated = Some(record.generated_tokens);
                }
                progress(Progress::Finished {
                    index,
                    total,
                    record: &record,
                });
                runs.push(record);
            }
        }
    }
    Ok((runs, interrupted))
}

/// `--model`, else the default model `make model` fetches; it must exist.
fn model_path(options: &EvalOptions) -> Result<PathBuf, EvalError> {
    let path = options
        .model
        .clone()
        .or_else(|| crate::config::Dirs::discover().map(|d| d.default_model()))
        .ok_or_else(|| EvalError::Usage(crate::config::NO_HOME.to_string()))?;
    if path.is_file() {
        Ok(path)
    } else {
        Err(EvalError::Usage(format!(
            "no model at {}: run `ralph-tui model fetch`, or pass --model PATH to a GGUF file",
            path.display()
        )))
    }
}

fn sha256_file(path: &Path) -> Result<String, EvalError> {
    let io = |source| EvalError::Io {
        what: format!("cannot read the model {}", path.display()),
        source,
    };
    crate::llm::prefix_store::file_sha256(path).map_err(io)
}

/// `ralph-tui --version`, e.g. `ralph-tui 0.1.0`.
fn ralph_version(bin: &Path) -> Result<String, EvalError> {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .map_err(|source| EvalError::Io {
            what: format!("cannot run {}", bin.display()),
            source,
        })?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !text.is_empty() {
        Ok(text)
    } else {
        Err(EvalError::Usage(format!(
            "{} --version failed: is it a ralph-tui binary?",
            bin.display()
        )))
    }
}

/// Keeps letters, digits, `.`, `_` and `-`, so a label is a safe file name.
fn sanitize_label(label: &str) -> String {
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if clean.is_empty() {
        "eval".into()
    } else {
        clean
    }
}
