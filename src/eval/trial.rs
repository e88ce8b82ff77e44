//! One trial: a task × arm × seed, from a fresh workspace to the verify script's verdict.
//!
//! Builds the ralph-tui command line for the arm, runs it headless with its events going to a
//! file, reads what the events add up to, runs the task's verify script on the final tree, and
//! scrubs this machine's paths out of everything that goes into the results. The turn limits
//! an arm does not set are ralph-tui's own, read from its option table (`resolve_limits`) so
//! the results say which figures ran.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::process::{self, Stop};
use super::results::{RunRecord, VerifyResult, WorkerFigures};
use super::task::Task;
use super::{metrics, Arm, EvalError, EvalOptions};
use crate::options::{CheckSetting, ObserveMode};

/// How long an interrupted ralph-tui run gets to finish cleanly before it is killed.
const INTERRUPT_GRACE: Duration = Duration::from_secs(30);
/// The most of a verify script's output kept in the results.
const VERIFY_TAIL_BYTES: u64 = 1500;

/// What stays the same across one eval's runs.
pub(super) struct Setup<'a> {
    pub options: &'a EvalOptions,
    pub model: Option<PathBuf>,
    pub config: PathBuf,
    pub scratch: &'a Path,
    /// The turn limits as ralph-tui resolves them for these options.
    pub limits: Limits,
}

/// Turns per round and tokens per turn, as a ralph-tui run of this eval gets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Limits {
    /// The Ralph arms' turns per round.
    pub max_turns: u32,
    /// Tokens per turn, every agent arm.
    pub max_tokens: u32,
}

/// The limits ralph-tui runs with under `options`: `--max-turns` and `--max-tokens` where the
/// eval overrides them, else what the extra arguments say, else ralph-tui's own defaults. The
/// config file every run gets is empty, so the option table's defaults are the run's.
pub(super) fn resolve_limits(options: &EvalOptions) -> Result<Limits, EvalError> {
    let mut args: Vec<OsString> = vec!["ralph-tui".into()];
    args.extend(limit_args(options.max_turns, options.max_tokens));
    args.extend(options.extra_args.iter().map(OsString::from));
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(args).map_err(|e| {
        EvalError::Usage(format!(
            "ralph-tui would refuse these arguments: {}",
            crate::cli::error_line(&e)
        ))
    })?;
    let resolved = cli.options.resolve();
    Ok(Limits {
        max_turns: resolved.max_turns,
        max_tokens: resolved.max_tokens,
    })
}

/// `--max-turns N` and `--max-tokens N`, each where it is given.
fn limit_args(max_turns: Option<u32>, max_tokens: Option<u32>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    if let Some(turns) = max_turns {
        args.extend(["--max-turns".into(), turns.to_string().into()]);
    }
    if let Some(tokens) = max_tokens {
        args.extend(["--max-tokens".into(), tokens.to_string().into()]);
    }
    args
}

/// The round context an agent arm runs with on a task: `--observe` and `--check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RoundContext {
    pub observe: ObserveMode,
    pub check: CheckSetting,
}

impl RoundContext {
    /// The Ralph and single arms: the observation, and the task's check (else `auto`, which
    /// finds none in a repository without tests); `ralph-plain`: neither.
    pub(super) fn of(arm: Arm, task: &Task) -> Self {
        if arm.has_round_context() {
            Self {
                observe: ObserveMode::On,
                check: task
                    .check
                    .clone()
                    .map_or(CheckSetting::Auto, CheckSetting::Command),
            }
        } else {
            Self {
                observe: ObserveMode::Off,
                check: CheckSetting::Off,
            }
        }
    }

    fn args(&self) -> [OsString; 4] {
        let observe = match self.observe {
            ObserveMode::On => "on",
            ObserveMode::Off => "off",
        };
        [
            "--observe".into(),
            observe.into(),
            "--check".into(),
            self.check.to_string().into(),
        ]
    }
}

/// What differs between the ralph-tui runs of one eval.
pub(super) struct Invocation<'a> {
    pub workspace: &'a Path,
    pub run_dir: PathBuf,
    pub seed: u32,
    pub max_rounds: u32,
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u32>,
    pub token_budget: Option<u64>,
    /// `--observe` and `--check`, for the agent arms (`None`: ralph-tui's defaults).
    pub context: Option<&'a RoundContext>,
    /// The script for the script backend.
    pub script: Option<&'a Path>,
}

impl Setup<'_> {
    /// The ralph-tui arguments of one run (after the program's name), so every arm runs under
    /// the same settings: the backend, the model, the seed, the extra arguments.
    pub(super) fn ralph_args(
        &self,
        task: &Task,
        run: &Invocation<'_>,
    ) -> Result<Vec<OsString>, EvalError> {
        let options = self.options;
        let mut args: Vec<OsString> = vec![
            "--headless".into(),
            "-C".into(),
            run.workspace.into(),
            "--run-dir".into(),
            run.run_dir.clone().into(),
            "--config".into(),
            self.config.clone().into(),
            "--seed".into(),
            run.seed.to_string().into(),
            "-n".into(),
            run.max_rounds.to_string().into(),
        ];
        match (&self.model, run.script) {
            // A model server named in the extra arguments, which carry `--backend` and `-m`.
            _ if options.server_backend().is_some() => {}
            (Some(model), _) => {
                args.extend(["--backend".into(), "llama".into(), "--model".into()]);
                args.push(model.into());
            }
            (None, Some(script)) => {
                args.push("--backend".into());
                let mut value = OsString::from("script:");
                value.push(script);
                args.push(value);
            }
            (None, None) => {
                return Err(EvalError::Task {
                    task: task.name.clone(),
                    message: "it has no script.json, which the script backend needs".into(),
                })
            }
        }
        args.extend(limit_args(run.max_turns, run.max_tokens));
        if let Some(context) = run.context {
            args.extend(context.args());
        }
        if let Some(budget) = run.token_budget {
            args.extend(["--token-budget".into(), budget.to_string().into()]);
        }
        args.extend(options.extra_args.iter().map(OsString::from));
        args.push("--objective-file".into());
        args.push(task.objective_file.clone().into());
        Ok(args)
    }
}

/// One task × arm × seed. `None` when the eval was cancelled during it.
pub(super) fn run_one(
    setup: &Setup<'_>,
    task: &Task,
    arm: Arm,
    seed: u32,
    token_budget: Option<u64>,
    cancel: &CancellationToken,
) -> Result<Option<RunRecord>, EvalError> {
    let options = setup.options;
    let dir = setup
        .scratch
        .join(format!("{}-{}-s{seed}", task.name, arm.as_str()));
    let workspace = dir.join("workspace");
    task.prepare_workspace(&workspace)?;
    let (max_rounds, max_turns) = match arm {
        Arm::Ralph | Arm::RalphPlain => (options.rounds, options.max_turns),
        Arm::Single => (1, Some(options.single_max_turns)),
        // The oneshot arm has its own trial (`oneshot`); as an agent run it would be one turn.
        Arm::Oneshot => (1, Some(1)),
    };
    let context = RoundContext::of(arm, task);
    let invocation = Invocation {
        workspace: &workspace,
        run_dir: dir.join("run"),
        seed,
        max_rounds,
        max_turns,
        max_tokens: options.max_tokens,
        token_budget,
        context: Some(&context),
        script: task.script.as_deref(),
    };
    let Some(ran) = run_ralph(setup, task, arm, &invocation, &dir, cancel)? else {
        return Ok(None);
    };
    let Some(mut verify) = verify(task, &workspace, &dir, options.verify_timeout, cancel)? else {
        return Ok(None);
    };
    let scrub = |text: &str| scrub_run(text, setup, task, &dir);
    verify.output_tail = scrub(&verify.output_tail);
    let (metrics, finished) = (ran.metrics, ran.finished);
    let claimed_complete = metrics.status.as_deref() == Some("complete");
    let error = ran.error.map(|e| scrub(&e));
    Ok(Some(RunRecord {
        task: task.name.clone(),
        arm,
        seed,
        completed: verify.passed,
        status: metrics.status.unwrap_or_else(|| "no-result".into()),
        report_status: metrics.report_status,
        claimed_complete,
        false_completion: claimed_complete && !verify.passed,
        discovery: metrics.discovery,
        tool_calls: metrics.tool_calls,
        prompt_tokens: metrics.prompt_tokens,
        generated_tokens: metrics.generated_tokens,
        rounds_used: metrics.rounds_used,
        max_rounds,
        max_turns: Some(max_turns.unwrap_or(setup.limits.max_turns)),
        max_tokens: Some(setup.limits.max_tokens),
        observe: Some(context.observe),
        check: Some(context.check.to_string()),
        round_context: metrics.round_context,
        token_budget,
        wall_ms: millis(finished.wall),
        exit_code: finished.exit_code,
        timed_out: finished.timed_out,
        error,
        verify,
        oneshot: None,
        worker: WorkerFigures {
            turns: metrics.turns,
            turns_without_call: metrics.turns_without_call,
            calls_lost: metrics.calls_lost,
            repeats_refused: metrics.repeats_refused,
            repetition_wrap_ups: metrics.repetition_wrap_ups,
        },
    }))
}

/// What one headless ralph-tui run left: how it ended, what its events add up to, and why it
/// failed when it wrote no `run_finished` (not yet scrubbed).
struct RalphRun {
    finished: process::Finished,
    metrics: metrics::RunMetrics,
    error: Option<String>,
}

/// Runs ralph-tui headless for `run`, its events to `dir/events.jsonl` and its stderr to
/// `dir/stderr.txt`, and reads the events. `None` when cancelled; a refused command line
/// (exit code 2) is an error.
fn run_ralph(
    setup: &Setup<'_>,
    task: &Task,
    arm: Arm,
    run: &Invocation<'_>,
    dir: &Path,
    cancel: &CancellationToken,
) -> Result<Option<RalphRun>, EvalError> {
    let options = setup.options;
    let mut command = Command::new(&options.ralph_bin);
    command.args(setup.ralph_args(task, run)?);
    let events_path = dir.join("events.jsonl");
    let stderr_path = dir.join("stderr.txt");
    let io = |what: String| move |source| EvalError::Io { what, source };
    let finished = process::run(
        command,
        &events_path,
        &stderr_path,
        options.run_timeout,
        Stop::Interrupt(INTERRUPT_GRACE),
        cancel,
    )
    .map_err(io(format!("cannot run {}", options.ralph_bin.display())))?;
    if finished.cancelled {
        return Ok(None);
    }
    if finished.exit_code == Some(2) {
        return Err(EvalError::Refused {
            task: task.name.clone(),
            arm: arm.as_str(),
            message: process::tail(&stderr_path, 600),
        });
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&events_path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(io(format!("cannot read {}", events_path.display())))?;
    let metrics = metrics::parse_events(&String::from_utf8_lossy(&bytes));
    let error = metrics.error.clone().or_else(|| {
        metrics.status.is_none().then(|| {
            let why = if finished.timed_out {
                format!("timed out after {} s", options.run_timeout.as_secs())
            } else {
                format!("exit code {:?}", finished.exit_code)
            };
            format!(
                "no run_finished event ({why}): {}",
                process::tail(&stderr_path, 400)
            )
        })
    });
    Ok(Some(RalphRun {
        finished,
        metrics,
        error,
    }))
}

/// Runs the task's verify script on the final tree. `None` when cancelled.
pub(super) fn verify(
    task: &Task,
    workspace: &Path,
    dir: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Option<VerifyResult>, EvalError> {
    let log = dir.join("verify.txt");
    let mut command = Command::new("sh");
    command
        .arg(&task.verify)
        .current_dir(workspace)
        .env("TASK_DIR", &task.dir)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let finished =
        process::run(command, &log, &log, timeout, Stop::Kill, cancel).map_err(|source| {
            EvalError::Io {
                what: format!("cannot run {}", task.verify.display()),
                source,
            }
        })?;
    if finished.cancelled {
        return Ok(None);
    }
    Ok(Some(VerifyResult {
        passed: finished.exit_code == Some(0) && !finished.timed_out,
        exit_code: finished.exit_code,
        timed_out: finished.timed_out,
        output_tail: process::tail(&log, VERIFY_TAIL_BYTES),
        wall_ms: millis(finished.wall),
    }))
}

/// A run's text with this machine's paths replaced by placeholders: the results are meant
/// to be committed.
pub(super) fn scrub_run(text: &str, setup: &Setup<'_>, task: &Task, dir: &Path) -> String {
    let workspace = dir.join("workspace");
    let places = [
        (workspace.as_path(), "<workspace>"),
        (dir, "<run>"),
        (setup.scratch, "<scratch>"),
        (task.dir.as_path(), "<task>"),
    ];
    scrub_paths(text, &places)
}

/// Replaces each path (as given and canonical) with its placeholder, in the order given.
pub fn scrub_paths(text: &str, places: &[(&Path, &str)]) -> String {
    let mut out = text.to_string();
    for (path, placeholder) in places {
        let canonical = path.canonicalize().ok();
        for form in std::iter::once(path.to_path_buf()).chain(canonical) {
            let form = form.to_string_lossy().into_owned();
            if !form.is_empty() && form != "/" {
                out = out.replace(&form, placeholder);
            }
        }
    }
    out
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(check: Option<&str>) -> Task {
        let dir = PathBuf::from("/tasks/t");
        Task {
            name: "t".into(),
            objective_file: dir.join("objective.txt"),
            repo: dir.join("repo"),
            verify: dir.join("verify"),
            script: Some(dir.join("script.json")),
            oneshot: None,
            check: check.map(String::from),
            dir,
        }
    }

    /// The ralph-tui arguments of `arm` on `task`, as `run_one` builds them.
    fn args_of(options: &EvalOptions, arm: Arm, task: &Task) -> Vec<String> {
        let setup = Setup {
            options,
            model: None,
            config: PathBuf::from("/scratch/config.toml"),
            scratch: Path::new("/scratch"),
            limits: Limits {
                max_turns: 24,
                max_tokens: 1024,
            },
        };
        let context = RoundContext::of(arm, task);
        let max_turns = (arm == Arm::Single).then_some(options.single_max_turns);
        let invocation = Invocation {
            workspace: Path::new("/scratch/w"),
            run_dir: PathBuf::from("/scratch/run"),
            seed: 1,
            max_rounds: 4,
            max_turns: max_turns.or(options.max_turns),
            max_tokens: options.max_tokens,
            token_budget: None,
            context: Some(&context),
            script: task.script.as_deref(),
        };
        let args = setup.ralph_args(task, &invocation).unwrap();
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The value after `flag`, if `flag` is there.
    fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
        let i = args.iter().position(|a| a == flag)?;
        args.get(i + 1).map(String::as_str)
    }

    #[test]
    fn each_arm_passes_its_round_context_and_only_the_limits_given() {
        let options = EvalOptions::new(PathBuf::from("/tasks"), PathBuf::from("/bin/ralph-tui"));
        let checked = task(Some("python3 -m unittest discover -s tests"));
        let ralph = args_of(&options, Arm::Ralph, &checked);
        assert_eq!(value(&ralph, "--observe"), Some("on"));
        assert_eq!(
            value(&ralph, "--check"),
            Some("python3 -m unittest discover -s tests")
        );
        // ralph-tui decides the turn limits when the eval gives none.
        assert_eq!(value(&ralph, "--max-turns"), None);
        assert_eq!(value(&ralph, "--max-tokens"), None);
        assert_eq!(value(&ralph, "-n"), Some("4"));

        let plain = args_of(&options, Arm::RalphPlain, &checked);
        assert_eq!(value(&plain, "--observe"), Some("off"));
        assert_eq!(value(&plain, "--check"), Some("off"));

        let single = args_of(&options, Arm::Single, &checked);
        assert_eq!(value(&single, "--observe"), Some("on"));
        assert_eq!(
            value(&single, "--check"),
            Some("python3 -m unittest discover -s tests")
        );
        assert_eq!(value(&single, "--max-turns"), Some("200"));

        let unchecked = args_of(&options, Arm::Ralph, &task(None));
        assert_eq!(value(&unchecked, "--check"), Some("auto"));

        let mut overridden = options.clone();
        overridden.max_turns = Some(8);
        overridden.max_tokens = Some(384);
        let ralph = args_of(&overridden, Arm::Ralph, &checked);
        assert_eq!(value(&ralph, "--max-turns"), Some("8"));
        assert_eq!(value(&ralph, "--max-tokens"), Some("384"));
    }

    #[test]
    fn the_limits_are_ralph_tuis_own_unless_given() {
        let mut options =
            EvalOptions::new(PathBuf::from("/tasks"), PathBuf::from("/bin/ralph-tui"));
        let defaults = crate::options::Options::default().resolve();
        assert_eq!(
            resolve_limits(&options).unwrap(),
            Limits {
                max_turns: defaults.max_turns,
                max_tokens: defaults.max_tokens,
            }
        );
        options.max_turns = Some(8);
        options.extra_args = vec!["--max-tokens".into(), "512".into()];
        assert_eq!(
            resolve_limits(&options).unwrap(),
            Limits {
                max_turns: 8,
                max_tokens: 512,
            }
        );
        options.extra_args = vec!["--no-such-option".into()];
        assert!(resolve_limits(&options).unwrap_err().is_usage());
    }
}
