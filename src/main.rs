//! The `ralph-tui` binary: parse the command line, set up logging, hand off.

use std::io::Write;

use clap::Parser;
use ralph_tui::cli::Cli;
use ralph_tui::config::{Dirs, NO_HOME};
use ralph_tui::error::{say, ExitCode, UsageError};
use ralph_tui::{app, headless, logging, runlock, runs, signals};

fn fail(message: &str, code: ExitCode) -> ! {
    say(message);
    std::process::exit(code.code());
}

fn main() {
    // The sandbox helper runs before anything else, while the process is single-threaded.
    let helper = std::ffi::OsStr::new(ralph_tui::tools::sandbox::EXEC_ARG);
    if std::env::args_os().nth(1).as_deref() == Some(helper) {
        let args: Vec<String> = std::env::args_os()
            .skip(2)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        ralph_tui::tools::sandbox::exec_main(&args);
    }
    // Next, SIGINT and SIGTERM: from here on a signal is a request to cancel, never a kill.
    if let Err(e) = signals::install() {
        fail(&format!("cannot catch signals: {e}"), ExitCode::Internal);
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if ralph_tui::cli::is_subcommand(&args) {
        let history = match ralph_tui::cli::HistoryCli::try_parse_from(&args) {
            Ok(history) => history,
            Err(e) => {
                use clap::error::ErrorKind;
                if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                    let _ = e.print();
                    std::process::exit(0);
                }
                fail(&ralph_tui::cli::error_line(&e), ExitCode::Usage);
            }
        };
        let replay = ralph_tui::tui::replay::run;
        let Some(dirs) = Dirs::discover() else {
            fail(NO_HOME, ExitCode::Usage);
        };
        let code = runs::history::run(history.command, dirs, &replay);
        std::process::exit(code.code());
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                std::process::exit(0);
            }
            fail(&ralph_tui::cli::error_line(&e), ExitCode::Usage);
        }
    };
    // Without a home, nothing falls back to the current directory (usually the workspace,
    // which the worker writes): the command line must name both places.
    let dirs = match (Dirs::discover(), &cli.options.run_dir, &cli.config) {
        (Some(dirs), _, _) => dirs,
        (None, Some(run_dir), Some(config)) => Dirs::without_home(config, run_dir),
        (None, _, _) => fail(NO_HOME, ExitCode::Usage),
    };
    let (settings, resume) = match runs::resume::resolve(cli, dirs) {
        Ok(resolved) => resolved,
        Err(e) => fail(&e.to_string(), ExitCode::Usage),
    };
    if settings.headless && settings.objective.is_none() {
        fail(&UsageError::EmptyObjective.to_string(), ExitCode::Usage);
    }
    let prepared = match app::prepare(&settings) {
        Ok(p) => p.resuming(resume),
        Err(e) => fail(&e.to_string(), ExitCode::Usage),
    };
    // Held until the process exits; the kernel releases it however the process ends.
    let lock = match runlock::acquire(&settings.workspace, &settings.dirs.data, &prepared.run_id) {
        Ok(lock) => lock,
        Err(e) => fail(&e.to_string(), ExitCode::Usage),
    };
    // A worktree run works in its own worktree, locked too (so it is never listed as
    // abandoned while it runs); a resumed one already holds that lock above.
    let prepared = match app::isolate(prepared) {
        Ok(p) => p,
        Err(e) => {
            lock.forget_holder();
            fail(&e.to_string(), ExitCode::Usage)
        }
    };
    let worktree_lock = match &prepared.worktree {
        Some(_) if prepared.resume.is_none() => match runlock::acquire(
            &prepared.settings.workspace,
            &settings.dirs.data,
            &prepared.run_id,
        ) {
            Ok(lock) => Some(lock),
            Err(e) => {
                lock.forget_holder();
                fail(&e.to_string(), ExitCode::Usage)
            }
        },
        _ => None,
    };
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
    let code = if settings.headless {
        match settings.objective.clone() {
            Some(objective) => headless::run(prepared, objective),
            None => fail(&UsageError::EmptyObjective.to_string(), ExitCode::Usage),
        }
    } else {
        ralph_tui::tui::run(prepared, settings.objective.clone(), &log_file)
    };
    lock.forget_holder();
    if let Some(lock) = worktree_lock {
        lock.forget_holder();
    }
    std::process::exit(code.code());
}
