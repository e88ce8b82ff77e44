//! The command line: what a person can ask of ralph-tui, with `--help` that explains it.
//!
//! Every option is optional here so that the config file can fill what the command line
//! leaves out (`config::Settings::resolve` merges them, the command line winning).

use std::path::PathBuf;

use clap::Parser;

const AFTER_HELP: &str = "\
Exit codes: 0 complete · 3 blocked · 4 budget-limited · 5 round-failed · 130 cancelled ·
            2 usage, config or input error · 1 internal error.
Completion and blockers are the worker's own report, never an independent certification.
Config: config.toml in the user config directory (see README); the command line wins.";

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

    /// Most rounds to run, 1..=64 [default: 8].
    #[arg(short = 'n', long, value_name = "N", allow_hyphen_values = true)]
    pub max_rounds: Option<String>,

    /// GGUF model file [default: config, else the model fetched by `make model`].
    #[arg(short = 'm', long, value_name = "PATH")]
    pub model: Option<PathBuf>,

    /// `llama` (default) or `script:FILE` (deterministic stand-in for tests and demos).
    #[arg(long, value_name = "KIND")]
    pub backend: Option<String>,

    /// No TUI: JSON Lines events on stdout, human messages on stderr.
    #[arg(long)]
    pub headless: bool,

    /// Where this run's log goes [default: <data dir>/runs/<run id>].
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,

    /// Command run in the workspace after a worker-reported completion; shown beside the claim.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,

    /// Sandbox for commands the child runs: workspace-write, read-only or off.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,

    /// Approval for commands the child runs: auto, ask (TUI only) or deny.
    #[arg(long, value_name = "POLICY")]
    pub approval: Option<String>,

    /// Let commands the child runs use the network (off by default).
    #[arg(long)]
    pub network: bool,

    /// Default timeout for a child's command, in seconds [default: 120].
    #[arg(long, value_name = "SECS")]
    pub command_timeout: Option<u64>,

    /// Most model generations (turns) in one round [default: 24].
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,

    /// Most tokens generated over the whole run; reaching it ends the run budget-limited.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u64>,

    /// Tool-call format: auto, hermes, llama3, mistral, deepseek, dsml, glm, generic.
    #[arg(long, value_name = "FORMAT")]
    pub chat_format: Option<String>,

    /// Context size in tokens [default: 4096].
    #[arg(long, value_name = "N")]
    pub ctx_size: Option<u32>,

    /// CPU threads [default: the machine's cores].
    #[arg(long, value_name = "N")]
    pub threads: Option<i32>,

    /// Layers to offload to the GPU [default: all with a GPU build, else 0].
    #[arg(long, value_name = "N")]
    pub gpu_layers: Option<u32>,

    /// Prompt-processing batch size; smaller cancels faster [default: 64].
    #[arg(long, value_name = "N")]
    pub batch_size: Option<u32>,

    /// Most tokens generated in one turn [default: 1024].
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,

    /// Sampling temperature; 0 is greedy [default: 0.7].
    #[arg(long, value_name = "T")]
    pub temperature: Option<f32>,

    /// Top-k sampling [default: 40].
    #[arg(long, value_name = "K")]
    pub top_k: Option<i32>,

    /// Top-p sampling [default: 0.95].
    #[arg(long, value_name = "P")]
    pub top_p: Option<f32>,

    /// Min-p sampling [default: 0.05].
    #[arg(long, value_name = "P")]
    pub min_p: Option<f32>,

    /// Repeat penalty [default: 1.1].
    #[arg(long, value_name = "X")]
    pub repeat_penalty: Option<f32>,

    /// Sampling seed; fixes a run's randomness [default: 1234].
    #[arg(long, value_name = "N")]
    pub seed: Option<u32>,

    /// Config file to read instead of the default location.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Log file [default: the run directory's ralph-tui.log].
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}
