//! The command line: what a person can ask of ralph-tui, with `--help` that explains it.
//!
//! The options `config.toml` can also set live in `options::Options`, flattened in here, so
//! each is written once; this file keeps what only the command line says (the objective, the
//! workspace, headless, which config file and log file). `config::Settings::resolve` lays the
//! command line over the file over the defaults.

use std::path::PathBuf;

use clap::Parser;

use crate::options::Options;

const AFTER_HELP: &str = "\
Exit codes: 0 complete · 3 blocked · 4 budget-limited · 5 round-failed · 130 cancelled ·
            2 usage, config or input error · 1 internal error.
Completion and blockers are the worker's own report, never an independent certification.
Config: config.toml in the user config directory (or --config FILE) may set every option
        from --max-rounds to --seed, its key the long name with underscores
        (max_rounds = 4, sandbox = \"read-only\", network = true); the command line wins.";

/// Run a supervised Ralph loop with a local model in a git repository.
///
/// Each round is a fresh child with a brand-new model context; the only thing that crosses
/// rounds is one validated, bounded report. The working tree is the long-term memory.
#[derive(Debug, Clone, Default, Parser)]
#[command(name = "ralph-tui", version, about, long_about, after_help = AFTER_HELP)]
pub struct Cli {
    /// The immutable objective for the whole run (else -f FILE, else the TUI asks); at most
    /// 64 KiB, with no control characters but newline and tab.
    pub objective: Option<String>,

    /// Read the objective from FILE.
    #[arg(short = 'f', long, value_name = "FILE", conflicts_with = "objective")]
    pub objective_file: Option<PathBuf>,

    /// Workspace directory; must be inside a git work tree [default: current directory].
    #[arg(short = 'C', long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// No TUI: JSON Lines events on stdout, human messages on stderr.
    #[arg(long)]
    pub headless: bool,

    /// Continue a cancelled, round-failed, budget-limited or killed run: a run id, an id
    /// prefix, `last`, or a run directory [default: last]. Its objective and workspace stay;
    /// its settings stay unless given here.
    #[arg(
        long,
        value_name = "RUN",
        num_args = 0..=1,
        default_missing_value = "last",
        conflicts_with_all = ["objective", "objective_file", "workspace", "config"]
    )]
    pub resume: Option<String>,

    /// The options `config.toml` can also set (see `options`).
    #[command(flatten)]
    pub options: Options,

    /// Config file to read instead of the default location.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Log file [default: the run directory's ralph-tui.log].
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}

/// A command-line error as the one line `main` prints: clap's first line, the allowed values
/// where there is a fixed set, and where to read more.
pub fn error_line(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let rendered = error.render().to_string();
    let first = rendered
        .lines()
        .next()
        .unwrap_or("bad arguments")
        .trim_start_matches("error: ");
    let allowed = match error.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            format!(": use one of {}", values.join(", "))
        }
        _ => String::new(),
    };
    format!("{first}{allowed} (see `ralph-tui --help`)")
}
