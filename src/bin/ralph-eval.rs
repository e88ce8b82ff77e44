//! `ralph-eval`: runs the eval tasks in four arms (a bounded Ralph run as the product runs it,
//! the same loop without the round context, and one ordinary session with the same token
//! budget, all through the real `ralph-tui` binary, and one answer of whole files without
//! tools) and writes the results.
//!
//! Parse the command line, hand off to `ralph_tui::eval`, print progress and the summary.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line program: progress goes to stderr, the summary to stdout"
)]

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use ralph_tui::eval::{self, Arm, BackendChoice, EvalOptions, Progress};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ArmArg {
    /// A bounded Ralph run (`-n ROUNDS`) with the observation and the task's check.
    Ralph,
    /// The same loop with `--observe off --check off`.
    RalphPlain,
    /// One ordinary session with the Ralph arm's generated tokens as its budget.
    Single,
    /// No agent: one generation, whole files in one answer, written by the harness.
    Oneshot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendArg {
    Llama,
    Script,
}

/// Runs the eval tasks in fresh repositories, in four arms, and judges each final tree with
/// the task's hidden verify script.
///
/// Per task and seed the Ralph arm runs first (ralph-tui `-n ROUNDS --observe on --check
/// CHECK`, CHECK being the task's check file, else auto), then ralph-plain (the same loop with
/// `--observe off --check off`), then the single arm: one ralph-tui session (`-n 1`, many
/// turns, the Ralph arm's observe and check) whose token budget is what the Ralph arm
/// generated, then the oneshot arm: no agent, no tools, no rounds. Turns per round and tokens
/// per turn are ralph-tui's own defaults unless given. The oneshot arm loads the
/// same backend with the same settings (model, seed, sampling, the arguments after `--`) and
/// makes one generation that sees the objective and the repository's files; it answers with
/// each file it changes written out whole (the path alone on a line, then the file in a
/// fenced block), and the harness writes those files (never outside the workspace, never
/// into .git) before the verify script runs. Its token cap is --oneshot-max-tokens, else the
/// Ralph arm's generated tokens, at least room for the task's files. With --backend script
/// its answer is the task's oneshot.txt. Results go to OUT/<date>-<model>.json and .md; a
/// summary line per arm is printed at the end.
#[derive(Debug, Parser)]
#[command(name = "ralph-eval", version, about, long_about)]
struct Args {
    /// Only tasks whose name contains one of these (comma-separated or repeated).
    #[arg(
        short = 't',
        long = "task",
        value_name = "FILTER",
        value_delimiter = ','
    )]
    tasks: Vec<String>,

    /// The tasks folder.
    #[arg(long, value_name = "DIR", default_value = "evals/tasks")]
    tasks_dir: PathBuf,

    /// GGUF model for the llama backend [default: the model `make model` fetches].
    #[arg(short, long, value_name = "PATH")]
    model: Option<PathBuf>,

    /// Rounds for the Ralph arms (ralph-tui's -n).
    #[arg(short = 'n', long, value_name = "N", default_value_t = 4)]
    rounds: u32,

    /// Sampling seeds, one run per task, arm and seed (comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1")]
    seeds: Vec<u32>,

    /// Arms to run (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "ralph,ralph-plain,single,oneshot"
    )]
    arms: Vec<ArmArg>,

    /// `llama` (the real model) or `script` (each task's script.json and oneshot.txt:
    /// deterministic).
    #[arg(long, value_enum, default_value = "llama")]
    backend: BackendArg,

    /// Where the results files go.
    #[arg(short, long, value_name = "DIR", default_value = "evals/results")]
    out: PathBuf,

    /// The ralph-tui binary [default: the one beside this program].
    #[arg(long, value_name = "PATH")]
    ralph_bin: Option<PathBuf>,

    /// Turns per round for the Ralph arms [default: ralph-tui's --max-turns].
    #[arg(long, value_name = "N")]
    max_turns: Option<u32>,

    /// Most tokens the model generates in one turn, in the agent arms (ralph-tui's
    /// --max-tokens); the oneshot arm's answer gets at least this beyond its files
    /// [default: ralph-tui's --max-tokens].
    #[arg(long, value_name = "N")]
    max_tokens: Option<u32>,

    /// Turns for the single arm's one session.
    #[arg(long, value_name = "N", default_value_t = 200)]
    single_max_turns: u32,

    /// The single arm's token budget [default: what the Ralph arm generated for that task and seed].
    #[arg(long, value_name = "N")]
    single_budget: Option<u64>,

    /// The oneshot arm's cap on its one answer [default: the Ralph arm's generated tokens for
    /// the task and seed, at least room for the task's files plus --max-tokens].
    #[arg(long, value_name = "N")]
    oneshot_max_tokens: Option<u32>,

    /// Longest a single run (a ralph-tui run, the oneshot answer) may take, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    run_timeout: u64,

    /// Names the results files instead of the model's file name.
    #[arg(long, value_name = "NAME")]
    label: Option<String>,

    /// Keep every run's workspace, run log and verify output under DIR.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,

    /// Extra arguments for every ralph-tui run, after `--` (e.g. `-- --ctx-size 8192`).
    #[arg(last = true, value_name = "RALPH_ARGS")]
    ralph_args: Vec<String>,
}

fn sibling_ralph_tui() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("ralph-tui")))
        .unwrap_or_else(|| PathBuf::from("ralph-tui"))
}

/// First Ctrl-C: stop after interrupting the run in progress, keeping what is done.
/// Second: leave at once.
fn cancel_on_ctrl_c(cancel: CancellationToken) {
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("ralph-eval: interrupting (Ctrl-C again to quit at once)");
                cancel.cancel();
            }
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        });
    });
}

fn describe(record: &eval::results::RunRecord) -> String {
    if let Some(oneshot) = &record.oneshot {
        return format!(
            "verify {} · answer {} · {} file(s) written, {} refused, {} block(s) unread · {}+{} tok · {:.1} s",
            if record.completed { "pass" } else { "fail" },
            record.status,
            oneshot.written.len(),
            oneshot.refused.len(),
            oneshot.problems.len(),
            record.prompt_tokens,
            record.generated_tokens,
            record.wall_ms as f64 / 1000.0
        );
    }
    let mut parts = vec![
        format!("verify {}", if record.completed { "pass" } else { "fail" }),
        format!("worker {}", record.status),
    ];
    if record.false_completion {
        parts.push("FALSE COMPLETION".into());
    }
    let refused = record.round_context.claims_refused;
    if refused > 0 {
        parts.push(format!("{refused} claim(s) refused by the check"));
    }
    parts.push(format!(
        "rounds {} · {}+{} tok · repeated discovery {}/{} · {:.1} s",
        record.rounds_used,
        record.prompt_tokens,
        record.generated_tokens,
        record.discovery.repeated,
        record.discovery.calls,
        record.wall_ms as f64 / 1000.0
    ));
    parts.join(" · ")
}

/// The eval's options from the command line; `out` and `keep` stay with the caller.
fn eval_options(args: &mut Args) -> EvalOptions {
    let mut options = EvalOptions::new(
        std::mem::take(&mut args.tasks_dir),
        args.ralph_bin.take().unwrap_or_else(sibling_ralph_tui),
    );
    options.filters = std::mem::take(&mut args.tasks);
    options.backend = match args.backend {
        BackendArg::Llama => BackendChoice::Llama,
        BackendArg::Script => BackendChoice::Script,
    };
    options.model = args.model.take();
    options.rounds = args.rounds;
    options.seeds = std::mem::take(&mut args.seeds);
    options.arms = args
        .arms
        .iter()
        .map(|a| match a {
            ArmArg::Ralph => Arm::Ralph,
            ArmArg::RalphPlain => Arm::RalphPlain,
            ArmArg::Single => Arm::Single,
            ArmArg::Oneshot => Arm::Oneshot,
        })
        .collect();
    options.max_turns = args.max_turns;
    options.max_tokens = args.max_tokens;
    options.single_max_turns = args.single_max_turns;
    options.single_budget = args.single_budget;
    options.oneshot_max_tokens = args.oneshot_max_tokens;
    options.run_timeout = Duration::from_secs(args.run_timeout);
    options.label = args.label.take();
    options.keep_in = args.keep.clone();
    options.extra_args = std::mem::take(&mut args.ralph_args);
    options
}

/// One progress line on stderr as each run starts and ends.
fn print_progress(p: Progress<'_>) {
    match p {
        Progress::Started {
            index,
            total,
            task,
            arm,
            seed,
        } => eprintln!(
            "[{index}/{total}] {task} · {} · seed {seed} …",
            arm.as_str()
        ),
        Progress::Finished {
            index,
            total,
            record,
        } => eprintln!(
            "[{index}/{total}] {} · {} · seed {}: {}",
            record.task,
            record.arm.as_str(),
            record.seed,
            describe(record)
        ),
    }
}

fn main() {
    let mut args = Args::parse();
    let options = eval_options(&mut args);
    let cancel = CancellationToken::new();
    cancel_on_ctrl_c(cancel.clone());
    let results = match eval::run(&options, &cancel, &mut print_progress) {
        Ok(results) => results,
        Err(e) => {
            eprintln!("ralph-eval: {e}");
            std::process::exit(if e.is_usage() { 2 } else { 1 });
        }
    };
    let (json, md) = match results.write(&args.out) {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("ralph-eval: {e}");
            std::process::exit(1);
        }
    };
    if let Some(model) = &results.model {
        println!("model {} (sha256 {})", model.file, model.sha256);
    }
    for summary in &results.summary {
        println!("{}", summary.line());
    }
    println!("results: {} and {}", json.display(), md.display());
    if let Some(dir) = &args.keep {
        println!("workspaces and run logs: under {}", dir.display());
    }
    if results.interrupted {
        eprintln!("ralph-eval: interrupted; the results hold the runs that finished");
        std::process::exit(130);
    }
}
