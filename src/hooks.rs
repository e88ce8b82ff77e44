//! Hooks: the person's own commands, run at points of a run (`[hooks]` in `config.toml`).
//!
//! A hook is a shell command run as the user in the workspace, with the event that triggered
//! it as one JSON line on stdin: `on_round_end` on `round_finished`, `on_finish` on
//! `run_finished`, `on_approval` on `approval_requested`. A hook often runs what the worker
//! wrote (`cargo test` compiles and runs it), so it runs like the worker's commands: through
//! the sandbox helper, in the run's sandbox (a hook written as a table may name its own,
//! `sandbox = "off"` for one that must reach the desktop or the network), with no secret in
//! its environment, and everything it started is killed when it ends.
//! Hooks run one at a time on their own thread, in event order, so a slow hook never holds up
//! the engine; each is bounded in time (the one bounded-child helper, `tools::process`), and
//! the run waits for the queued ones before it returns. A hook that fails, cannot start or
//! runs past its bound becomes a warning and nothing more: a hook never changes a run's
//! outcome. Its output goes to `hooks.log` in the run directory.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::engine::EventSink;
use crate::options::{Hook, Hooks};
use crate::protocol::event::{Event, Stamped};
use crate::protocol::policy::SandboxMode;
use crate::tools::process::{run_bounded, Limits, Stop};
use crate::tools::run_command::scratch_dir;
use crate::tools::{sandbox, ToolPolicy};

/// How long a hook may run when `timeout_s` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The hook an event triggers, by its config key, and the hook (its command is not blank).
pub fn hook_for<'a>(hooks: &'a Hooks, event: &Event) -> Option<(&'static str, &'a Hook)> {
    let (name, hook) = match event {
        Event::RoundFinished { .. } => ("on_round_end", &hooks.on_round_end),
        Event::RunFinished { .. } => ("on_finish", &hooks.on_finish),
        Event::ApprovalRequested { .. } => ("on_approval", &hooks.on_approval),
        _ => return None,
    };
    let hook = hook.as_ref().filter(|h| !h.command().trim().is_empty())?;
    Some((name, hook))
}

/// Where hooks run, under which sandbox, and where their traces go.
#[derive(Debug, Clone)]
pub struct Place {
    /// The working directory: the workspace.
    pub cwd: PathBuf,
    /// The run directory: `hooks.log` and each hook's stdin file go here.
    pub run_dir: PathBuf,
    /// The run's command policy: its sandbox (unless a hook names its own), network and
    /// secrets.
    pub policy: ToolPolicy,
}

enum Job {
    Run {
        name: &'static str,
        command: String,
        sandbox: SandboxMode,
        line: String,
    },
    Stop,
}

/// Runs hooks on their own thread, in the order their events came.
pub struct HookRunner {
    hooks: Hooks,
    /// The run's sandbox, for hooks that name none.
    sandbox: SandboxMode,
    jobs: mpsc::Sender<Job>,
    thread: Option<JoinHandle<()>>,
    /// Failures after `run_finished`, for `finish` to hand back.
    late: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunner")
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl HookRunner {
    /// Starts the hook thread; `None` when no hook is set. `warn` hears each failed hook and
    /// puts those after `run_finished` in `late`, which [`HookRunner::finish`] hands back.
    pub fn start(
        hooks: Hooks,
        place: Place,
        late: Arc<Mutex<Vec<String>>>,
        mut warn: Box<dyn FnMut(String) + Send>,
    ) -> Option<Self> {
        if hooks.on_round_end.is_none() && hooks.on_finish.is_none() && hooks.on_approval.is_none()
        {
            return None;
        }
        let timeout = hooks.timeout_s.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
        let sandbox = place.policy.sandbox;
        let (jobs, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("ralph-hooks".into())
            .spawn(move || {
                let mut seq = 0u32;
                while let Ok(Job::Run {
                    name,
                    command,
                    sandbox,
                    line,
                }) = rx.recv()
                {
                    seq += 1;
                    let hook = HookRun {
                        seq,
                        name,
                        command: &command,
                        sandbox,
                        timeout,
                    };
                    if let Err(problem) = run_hook(&place, &hook, &line) {
                        tracing::warn!("{problem}");
                        warn(problem);
                    }
                }
            });
        let thread = match thread {
            Ok(thread) => Some(thread),
            Err(e) => {
                tracing::warn!("hooks are off: cannot start their thread: {e}");
                None
            }
        };
        Some(Self {
            hooks,
            sandbox,
            jobs,
            thread,
            late,
        })
    }

    /// Waits for every queued hook (each within its bound) and ends the thread; returns the
    /// hooks that failed after `run_finished` (the TUI shows them in its review).
    pub fn finish(mut self) -> Vec<String> {
        let _ = self.jobs.send(Job::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.late
            .lock()
            .map(|late| late.clone())
            .unwrap_or_default()
    }
}

/// One queued hook, as it is run.
struct HookRun<'a> {
    seq: u32,
    name: &'static str,
    command: &'a str,
    sandbox: SandboxMode,
    timeout: Duration,
}

/// Runs one hook: the event line on stdin, output appended to `hooks.log`.
fn run_hook(place: &Place, hook: &HookRun<'_>, line: &str) -> Result<(), String> {
    let (name, command, timeout) = (hook.name, hook.command, hook.timeout);
    let failed = |why: String| format!("hook {name} ({command}) {why}; the run goes on");
    let input = place
        .run_dir
        .join(format!("hook-{:03}-{name}.json", hook.seq));
    std::fs::write(&input, format!("{line}\n"))
        .map_err(|e| failed(format!("could not be given its input: {e}")))?;
    let result = spawn_hook(place, hook, &input);
    let _ = std::fs::remove_file(&input);
    let finished = result.map_err(|e| failed(format!("could not start: {e}")))?;
    let log = place.run_dir.join("hooks.log");
    if finished.timed_out {
        return Err(failed(format!(
            "ran past {} s and was stopped",
            timeout.as_secs_f64()
        )));
    }
    match finished.exit_code {
        Some(0) => Ok(()),
        Some(sandbox::SETUP_FAILED) if setup_failed(&log) => Err(failed(format!(
            "could not be sandboxed (the reason is in {}); write it as {{ command = \"...\", sandbox = \"off\" }} to run it unconfined",
            log.display()
        ))),
        Some(code) => Err(failed(format!(
            "failed with exit code {code}; its output is in {}",
            log.display()
        ))),
        None => Err(failed("was killed by a signal".into())),
    }
}

/// Whether the last line of `hooks.log` is the sandbox helper's refusal.
fn setup_failed(log: &Path) -> bool {
    std::fs::read_to_string(log).is_ok_and(|text| {
        text.lines()
            .next_back()
            .is_some_and(|l| l.starts_with(sandbox::FAILURE_PREFIX))
    })
}

fn spawn_hook(
    place: &Place,
    hook: &HookRun<'_>,
    input: &Path,
) -> std::io::Result<crate::tools::process::Finished> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(place.run_dir.join("hooks.log"));
    let (out, err) = match log.and_then(|file| Ok((file.try_clone()?, file))) {
        Ok((out, err)) => (Stdio::from(out), Stdio::from(err)),
        Err(_) => (Stdio::null(), Stdio::null()),
    };
    let mut policy = place.policy.clone();
    policy.sandbox = hook.sandbox;
    if hook.sandbox == SandboxMode::Off {
        policy.secrets = policy.secrets.keys_only();
    }
    let run_name = place.run_dir.file_name().unwrap_or_default();
    let tmp = scratch_dir(&run_name.to_string_lossy(), "hooks");
    std::fs::create_dir_all(&tmp)?;
    // The sandbox helper gives the shell /dev/null for stdin, so an outer shell points stdin
    // at the event's file before it becomes the hook.
    let mut cmd = sandbox::command(&policy, &place.cwd, &tmp, r#"exec /bin/sh -c "$1" < "$2""#);
    cmd.arg("sh")
        .arg(hook.command)
        .arg(input)
        .env("RALPH_TUI_HOOK", hook.name)
        .env("RALPH_TUI_RUN_DIR", &place.run_dir)
        .stdout(out)
        .stderr(err);
    let never = CancellationToken::new();
    let limits = Limits {
        timeout: hook.timeout,
        stop: Stop::Kill,
        cancel: &never,
    };
    // No tracker: whatever the hook leaves running is killed before this returns.
    let finished = run_bounded(cmd, &limits, None);
    let _ = std::fs::remove_dir_all(&tmp);
    finished
}

/// Puts hooks between the engine and `sink`: every event goes to `sink` first, then to its
/// hook. A hook's failure reaches `sink` as a `warning` event while the run is still going,
/// and stderr after `run_finished` (which stays the last event a consumer sees). Returns the
/// sink the engine gets and the runner to `finish` when the run is over.
pub fn attach(hooks: Hooks, place: Place, sink: EventSink) -> (EventSink, Option<HookRunner>) {
    let shared = Arc::new(Mutex::new(sink));
    let finished = Arc::new(AtomicBool::new(false));
    let warn_sink = Arc::clone(&shared);
    let warn_finished = Arc::clone(&finished);
    let late: Arc<Mutex<Vec<String>>> = Arc::default();
    let warn_late = Arc::clone(&late);
    let warn = Box::new(move |message: String| {
        if warn_finished.load(Ordering::SeqCst) {
            say_warning(&message);
            if let Ok(mut late) = warn_late.lock() {
                late.push(message);
            }
            return;
        }
        let ts = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        match warn_sink.lock() {
            Ok(mut sink) => sink(&Stamped::new(ts, Event::Warning { message })),
            Err(_) => say_warning(&message),
        }
    });
    let Some(runner) = HookRunner::start(hooks, place, late, warn) else {
        let sink = Box::new(move |event: &Stamped| {
            if let Ok(mut sink) = shared.lock() {
                sink(event);
            }
        });
        return (sink, None);
    };
    let jobs = runner.jobs.clone();
    let hooks = runner.hooks.clone();
    let run_sandbox = runner.sandbox;
    let wrapped = Box::new(move |event: &Stamped| {
        if let Ok(mut sink) = shared.lock() {
            sink(event);
        }
        if matches!(event.event, Event::RunFinished { .. }) {
            finished.store(true, Ordering::SeqCst);
        }
        if let Some((name, hook)) = hook_for(&hooks, &event.event) {
            let _ = jobs.send(Job::Run {
                name,
                command: hook.command().trim().to_string(),
                sandbox: hook.sandbox().map_or(run_sandbox, SandboxMode::from),
                line: event.to_line(),
            });
        }
    });
    (wrapped, Some(runner))
}

fn say_warning(message: &str) {
    crate::error::say(&format!("warning: {message}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished() -> Event {
        Event::RunFinished {
            status: crate::protocol::event::RunStatus::Complete,
            rounds_started: 1,
            report: None,
            last_valid_report: None,
            error: None,
            worker_reported: true,
            verification: None,
        }
    }

    #[test]
    fn a_hook_the_sandbox_refuses_names_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        // A stand-in for the sandbox helper on a kernel that cannot confine.
        let helper = dir.path().join("helper");
        std::fs::write(
            &helper,
            "#!/bin/sh\necho 'ralph-tui sandbox: cannot confine this command' >&2\nexit 125\n",
        )
        .unwrap();
        std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let mut policy = ToolPolicy::new(
            SandboxMode::WorkspaceWrite,
            crate::protocol::policy::ApprovalPolicy::Auto,
            false,
        );
        policy.sandbox_exe = helper;
        let place = Place {
            cwd: dir.path().to_path_buf(),
            run_dir: dir.path().to_path_buf(),
            policy,
        };
        let hook = HookRun {
            seq: 1,
            name: "on_finish",
            command: "true",
            sandbox: SandboxMode::WorkspaceWrite,
            timeout: Duration::from_secs(10),
        };
        // A fork elsewhere in this process may briefly hold the script open for writing.
        let mut err = run_hook(&place, &hook, "{}").unwrap_err();
        for _ in 0..20 {
            if !err.contains("Text file busy") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            err = run_hook(&place, &hook, "{}").unwrap_err();
        }
        assert!(
            err.contains("could not be sandboxed") && err.contains("sandbox = \"off\""),
            "{err}"
        );
    }

    #[test]
    fn each_hook_answers_its_own_event_and_blank_commands_are_none() {
        let hooks = Hooks {
            on_finish: Some("notify-send done".into()),
            on_round_end: Some("  ".into()),
            ..Hooks::default()
        };
        assert_eq!(
            hook_for(&hooks, &finished()),
            Some(("on_finish", &Hook::from("notify-send done")))
        );
        let warning = Event::Warning {
            message: "x".into(),
        };
        assert_eq!(hook_for(&hooks, &warning), None);
        let asked = Event::ApprovalRequested {
            id: 1,
            round: 1,
            command: "make".into(),
            cwd: ".".into(),
        };
        assert_eq!(hook_for(&hooks, &asked), None);
        let approving = Hooks {
            on_approval: Some("say asked".into()),
            ..Hooks::default()
        };
        assert_eq!(
            hook_for(&approving, &asked),
            Some(("on_approval", &Hook::from("say asked")))
        );
        assert!(HookRunner::start(
            Hooks::default(),
            Place {
                cwd: ".".into(),
                run_dir: ".".into(),
                policy: ToolPolicy::new(
                    SandboxMode::WorkspaceWrite,
                    crate::protocol::policy::ApprovalPolicy::Auto,
                    false
                ),
            },
            Arc::default(),
            Box::new(|_| {})
        )
        .is_none());
    }
}
