//! Every option a run can take from both the command line and `config.toml`, written once.
//!
//! The `options!` table below declares each option one time: its key (`max_rounds` in the
//! file, `--max-rounds` on the command line), its type, its default and its help line. From it
//! come `Options`, the one struct that clap parses and serde reads (every field optional, so
//! one layer can lie over another), and `Resolved`, the options after layering, where an
//! option with a default (or a fallback) is always there. `Resolved` is the one settings
//! record: a run reads it, writes it into `run.json` as it is (`Resolved::to_options`), and
//! `--resume` reads it back as `Options` under its own command line, so an option added here
//! needs no other line to be recorded and resumed. Mode options are enums (the policy enums
//! themselves for the sandbox and approval) that clap and serde both read, so the two sides
//! accept the same spellings; values with rules of their own (round count, backend, chat
//! format) check themselves on the way in, whichever side they come from.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use clap::builder::PossibleValue;

use crate::model_defaults::CODING;
use crate::protocol::policy::{ApprovalPolicy, SandboxMode};

/// Declares the option table: `Options`, `Resolved`, layering and resolution.
///
/// Each entry is one help line (a `///` comment), clap's `#[arg]` attributes, then
/// `name: Type` and, where the option has one, `= default` (shown at the end of the help
/// line) or `=> fallback` (not shown: the help line says how the real default is found, and
/// the fallback is what is left when nothing finds one). An option with either is always
/// there once resolved. `@inference` before the name puts the option in the group a backend
/// is given ([`crate::llm::settings::InferenceSettings`]) and a run's record keeps apart.
macro_rules! options {
    (@shown) => { None };
    (@shown $default:expr) => { Some($crate::options::shown(&$default)) };
    (@resolved $ty:ty) => { Option<$ty> };
    (@resolved $ty:ty, $default:expr) => { $ty };
    (@pick $value:expr) => { $value };
    (@pick $value:expr, $default:expr) => { $value.unwrap_or_else(|| $default) };
    (@unpick $value:expr) => { $value };
    (@unpick $value:expr, $default:expr) => { Some($value) };
    // The one group an option can be in: `@inference`, how the model is loaded and sampled.
    (@member inference $name:ident) => { stringify!($name) };
    // The help: the doc comment's first line and every further one (a doc comment of several
    // lines is one sentence, never cut at the first line's end).
    (@help $help:expr;) => { $help };
    (@help $help:expr; [doc = $more:literal] $($rest:tt)*) => {
        $crate::options::options!(@help concat!($help, $more); $($rest)*)
    };
    (@help $help:expr; [$($other:tt)*] $($rest:tt)*) => {
        $crate::options::options!(@help $help; $($rest)*)
    };
    ($(
        #[doc = $help:literal]
        $(#[$($attr:tt)*])*
        $(@ $group:ident)?
        $name:ident : $ty:ty $(= $default:expr)? $(=> $fallback:expr)? ;
    )*) => {
        /// Every option both the command line and `config.toml` can set; a missing one is
        /// `None`, so the command line can lie over the file and the file over the defaults.
        /// Written out (a run's `run.json`), each option goes under its key.
        #[derive(
            Debug, Clone, Default, PartialEq, clap::Args, ::serde::Deserialize, ::serde::Serialize,
        )]
        #[serde(default, deny_unknown_fields)]
        pub struct Options {
            $(
                #[doc = $help]
                #[arg(help = $crate::options::help_line(
                    $crate::options::options!(@help $help; $([$($attr)*])*),
                    $crate::options::options!(@shown $($default)?),
                ))]
                $(#[$($attr)*])*
                pub $name: Option<$ty>,
            )*
            /// Commands run at points of a run (`[hooks]`); only `config.toml` sets them, and
            /// they are the person's, never written into a run's record.
            #[arg(skip)]
            #[serde(skip_serializing)]
            pub hooks: Option<$crate::options::Hooks>,
        }

        /// The options after layering: an option with a default is always there.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Resolved {
            $(
                #[doc = $help]
                pub $name: $crate::options::options!(@resolved $ty $(, $default)? $(, $fallback)?),
            )*
            /// Commands run at points of a run (`[hooks]`).
            pub hooks: $crate::options::Hooks,
        }

        impl Options {
            /// Each option from `self` where it is set, else from `under`.
            pub fn over(self, under: Self) -> Self {
                Self {
                    $( $name: self.$name.or(under.$name), )*
                    hooks: self.hooks.or(under.hooks),
                }
            }

            /// Fills every option still missing with its default (or fallback).
            pub fn resolve(self) -> Resolved {
                Resolved {
                    $( $name: $crate::options::options!(@pick self.$name $(, $default)? $(, $fallback)?), )*
                    hooks: self.hooks.unwrap_or_default(),
                }
            }

            /// Whether the option with config key `key` is set here.
            pub fn is_set(&self, key: &str) -> bool {
                match key {
                    $( stringify!($name) => self.$name.is_some(), )*
                    _ => false,
                }
            }

            /// The config keys, in table order (each is also `--` + the key in kebab case).
            pub const KEYS: &'static [&'static str] = &[$( stringify!($name), )*];

            /// The keys marked `@inference`, in table order: how the model is loaded and
            /// sampled (a run's record keeps them together).
            pub const INFERENCE: &'static [&'static str] =
                &[$( $( $crate::options::options!(@member $group $name), )? )*];
        }

        impl $crate::options::OptionTable for Options {
            const KEYS: &'static [&'static str] = Options::KEYS;
            const INFERENCE: &'static [&'static str] = Options::INFERENCE;

            fn is_set(&self, key: &str) -> bool {
                Options::is_set(self, key)
            }
        }

        impl Resolved {
            /// The resolved options as options again, every one that has a value set: what
            /// a run records, so a later run can lay them under its own. Hooks are the
            /// person's and stay out.
            pub fn to_options(&self) -> Options {
                let this = self.clone();
                Options {
                    $( $name: $crate::options::options!(@unpick this.$name $(, $default)? $(, $fallback)?), )*
                    hooks: None,
                }
            }
        }
    };
}

pub(crate) use options;

/// What a table `options!` declares gives a run's record: its options written out under their
/// keys and read back, and the keys themselves.
pub trait OptionTable: Serialize + serde::de::DeserializeOwned {
    /// The config keys, in table order.
    const KEYS: &'static [&'static str];

    /// The keys of the options marked `@inference`, in table order.
    const INFERENCE: &'static [&'static str];

    /// Whether the option with config key `key` is set.
    fn is_set(&self, key: &str) -> bool;
}

options! {
    /// Most rounds to run, 1..=64.
    #[arg(short = 'n', long, value_name = "N", allow_hyphen_values = true)]
    #[arg(value_parser = RoundCount::parse)]
    max_rounds: RoundCount = RoundCount::DEFAULT;
    /// GGUF model file [default: the model fetched by `make model`]; with `openai:URL`, the
    /// server's model name [default: the first the server lists].
    #[arg(short = 'm', long, value_name = "PATH")]
    model: PathBuf;
    /// `llama`, `openai:URL` (an OpenAI-compatible server) or `script:FILE` (a stand-in).
    #[arg(long, value_name = "KIND", value_parser = BackendKind::parse)]
    backend: BackendKind = BackendKind::Llama;
    /// Where this run's log goes [default: <data dir>/runs/<run id>].
    #[arg(long, value_name = "DIR")]
    run_dir: PathBuf;
    /// Command run in the workspace after a worker-reported completion; shown beside the claim.
    #[arg(long, value_name = "CMD")]
    verify: String;
    /// The repository's own test or build command: run in the worker's sandbox at each
    /// round's start (its result is shown to the worker) and on a `complete` claim (a failing
    /// check refuses it); `auto` picks one from the repository, `off` runs none.
    #[arg(long, value_name = "CMD|auto|off", value_parser = CheckSetting::parse)]
    check: CheckSetting = CheckSetting::DEFAULT;
    /// Also run the check after each of the worker's calls that changes files, and add its
    /// result to the call's result (`--check-on-change=false` runs it only at the round's
    /// start and on a claim).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true)]
    #[arg(default_missing_value = "true")]
    check_on_change: bool = true;
    /// Give each round an observation of the workspace after the fixed prompt (its files, the
    /// check's result, the texts that matter most): `on` or `off`.
    #[arg(long, value_name = "MODE")]
    observe: ObserveMode = ObserveMode::DEFAULT;
    /// Sandbox for the commands the child runs; `off` runs them unconfined.
    #[arg(long, value_name = "MODE")]
    sandbox: SandboxMode = SandboxMode::WorkspaceWrite;
    /// Approval for the commands the child runs; `ask` needs the TUI.
    #[arg(long, value_name = "POLICY")]
    approval: ApprovalPolicy = ApprovalPolicy::Auto;
    /// Let the commands the child runs use the network (`--network=false` turns it off).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true)]
    #[arg(default_missing_value = "true")]
    network: bool = false;
    /// Run in a new git worktree on branch `ralph/<run id>`, leaving your checkout alone.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true)]
    #[arg(default_missing_value = "true")]
    worktree: bool = false;
    /// Default timeout for one of the child's commands, in seconds.
    #[arg(long, value_name = "SECS")]
    command_timeout: u64 = 120;
    /// Most model generations (turns) in one round.
    #[arg(long, value_name = "N")]
    max_turns: u32 = 24;
    /// Rounds in a row that change no file and whose reports give the same next steps before
    /// the run ends `stalled` (0: never).
    #[arg(long, value_name = "N")]
    stall_rounds: u32 = 3;
    /// A round's wall-clock limit in seconds: a round still going past it ends the run
    /// `stalled` [default: none].
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    round_timeout: u64;
    /// Most tokens generated over the whole run; reaching it ends the run budget-limited.
    #[arg(long, value_name = "N")]
    token_budget: u64;
    /// Tool-call format: a family or alias, or auto from the model's template [default: auto].
    #[arg(long, value_name = "FORMAT", value_parser = ChatFormatName::parse)]
    chat_format: ChatFormatName;
    /// Context size in tokens, at least 256 [default: the model's trained context, at most
    /// 16384 and what free memory holds; 4096 without a model file].
    #[arg(long, value_name = "N")]
    @inference ctx_size: u32 => crate::model_defaults::FALLBACK_CTX;
    /// CPU threads [default: the machine's cores less those busy with other work at the start].
    #[arg(long, value_name = "N")]
    @inference threads: i32 => machine_threads();
    /// Layers to offload to the GPU [default: all with a GPU build, else 0].
    #[arg(long, value_name = "N")]
    @inference gpu_layers: u32;
    /// Prompt-processing batch size (tokens per decode), at most 128 on the CPU so that
    /// prompt progress moves every second or two; a cancel stops a batch mid-way.
    #[arg(long, value_name = "N")]
    @inference batch_size: u32 = 512;
    /// Evaluate the whole prompt every round instead of restoring the fixed system prefix.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true)]
    #[arg(default_missing_value = "true")]
    no_prefix_cache: bool = false;
    /// Most MiB the fixed prefix's states kept on disk between runs may take (under the
    /// cache dir, least recently used removed first); 0 keeps them in memory only.
    #[arg(long, value_name = "MIB")]
    prefix_cache_max_mib: u64 = 2048;
    /// Most tokens generated in one turn.
    #[arg(long, value_name = "N")]
    @inference max_tokens: u32 = 1024;
    /// Sampling temperature; 0 is greedy [default: the model's, else 0.2].
    #[arg(long, value_name = "T")]
    @inference temperature: f32 => CODING.temperature;
    /// Top-k sampling [default: the model's, else 40].
    #[arg(long, value_name = "K")]
    @inference top_k: i32 => CODING.top_k;
    /// Top-p sampling [default: the model's, else 0.95].
    #[arg(long, value_name = "P")]
    @inference top_p: f32 => CODING.top_p;
    /// Min-p sampling [default: the model's, else 0.05].
    #[arg(long, value_name = "P")]
    @inference min_p: f32 => CODING.min_p;
    /// Repeat penalty; 1 is none [default: the model's, else 1.0].
    #[arg(long, value_name = "X")]
    @inference repeat_penalty: f32 => CODING.repeat_penalty;
    /// Sampling seed; fixes a run's randomness.
    #[arg(long, value_name = "N")]
    @inference seed: u32 = 1234;
    /// With `openai:URL`: the environment variable holding the server's API key.
    #[arg(long, value_name = "VAR")]
    api_key_env: String = String::from("OPENAI_API_KEY");
    /// With `openai:URL`: seconds a request may wait for the server's next byte.
    #[arg(long, value_name = "SECS")]
    request_timeout: u64 = 120;
    /// Notify when the run ends, an approval waits or a round fails, while the terminal is
    /// not focused: `auto` (bell and desktop notification), `bell`, or `off`.
    #[arg(long, value_name = "MODE")]
    notify: NotifyMode = NotifyMode::Auto;
}

/// How the TUI gets the person's attention while its terminal is not focused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotifyMode {
    /// A bell and a desktop notification (OSC 9 or OSC 777) where the terminal has them.
    #[default]
    Auto,
    /// The terminal bell only.
    Bell,
    /// Nothing.
    Off,
}

/// The `[hooks]` table of `config.toml`: shell commands run as the user, with the event's JSON
/// line on stdin, in the run's sandbox unless a hook says `sandbox = "off"` (see `hooks`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Hooks {
    /// After each round (`round_finished`).
    pub on_round_end: Option<Hook>,
    /// When the run ends (`run_finished`).
    pub on_finish: Option<Hook>,
    /// When a command waits for the person's approval (`approval_requested`).
    pub on_approval: Option<Hook>,
    /// Most seconds one hook may take before it is killed [default: 30].
    pub timeout_s: Option<u64>,
}

/// One hook: a command (run in the run's sandbox), or `{ command = "...", sandbox = "off" }`
/// to give it a sandbox of its own (`off`: unconfined).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Hook {
    Command(String),
    Table(HookTable),
}

/// A hook written as a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookTable {
    pub command: String,
    /// The hook's sandbox [default: the run's `sandbox`].
    pub sandbox: Option<SandboxMode>,
}

impl Hook {
    pub fn command(&self) -> &str {
        match self {
            Self::Command(command) | Self::Table(HookTable { command, .. }) => command,
        }
    }

    /// The sandbox the hook asks for, if it names one.
    pub fn sandbox(&self) -> Option<SandboxMode> {
        match self {
            Self::Command(_) => None,
            Self::Table(table) => table.sandbox,
        }
    }
}

impl From<&str> for Hook {
    fn from(command: &str) -> Self {
        Self::Command(command.to_string())
    }
}

/// The threads a run uses unless told: the cores this process may use, less those another
/// program keeps busy when it starts (at least one; 4 where the cores cannot be read), read
/// once. llama.cpp's threads wait for each other at every step, so one thread sharing its core
/// with a busy program holds up the rest. Measured by `make bench` (the busy-machine pair, the
/// 135M model on 2 cores beside one busy process): 2 threads read a prompt at 0.34x and
/// generate at 0.19x their idle speed, 1 thread at 1.05x and 0.99x its own; idle, 1 thread is
/// about half as fast as 2, so an idle machine keeps every core.
fn machine_threads() -> i32 {
    static THREADS: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        let Ok(cores) = std::thread::available_parallelism() else {
            return 4;
        };
        let busy = busy_cores(std::time::Duration::from_millis(BUSY_WINDOW_MS)).unwrap_or(0);
        i32::try_from(cores.get().saturating_sub(busy).max(1)).unwrap_or(4)
    })
}

/// How long the CPUs are watched for other work before the default threads are chosen.
const BUSY_WINDOW_MS: u64 = 100;

/// Per CPU of `/proc/stat`'s text: its number, its busy ticks and all its ticks so far
/// (idle and I/O wait count as not busy).
fn cpu_ticks(stat: &str) -> Vec<(usize, u64, u64)> {
    stat.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
            let ticks: Vec<u64> = fields.take(8).map(|f| f.parse().unwrap_or(0)).collect();
            let total: u64 = ticks.iter().sum();
            let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
            Some((cpu, total.saturating_sub(idle), total))
        })
        .collect()
}

/// The CPUs `allowed` keeps that were busy more than half the time between two readings.
fn busy_between(
    before: &[(usize, u64, u64)],
    after: &[(usize, u64, u64)],
    allowed: impl Fn(usize) -> bool,
) -> usize {
    after
        .iter()
        .filter(|(cpu, _, _)| allowed(*cpu))
        .filter(|(cpu, busy, total)| {
            before
                .iter()
                .find(|(c, _, _)| c == cpu)
                .is_some_and(|(_, busy0, total0)| {
                    let spent = total.saturating_sub(*total0);
                    spent > 0 && 2 * busy.saturating_sub(*busy0) > spent
                })
        })
        .count()
}

/// How many of the CPUs this process may run on were kept busy by other programs during
/// `window` (this process sleeps through it); `None` where `/proc/stat` cannot be read.
fn busy_cores(window: std::time::Duration) -> Option<usize> {
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    let before = cpu_ticks(&std::fs::read_to_string("/proc/stat").ok()?);
    std::thread::sleep(window);
    let after = cpu_ticks(&std::fs::read_to_string("/proc/stat").ok()?);
    Some(busy_between(&before, &after, |cpu| {
        allowed.is_set(cpu).unwrap_or(false)
    }))
}

/// A help line with its default, if it has one.
pub(crate) fn help_line(help: &str, default: Option<String>) -> String {
    let help = help.trim().trim_end_matches('.');
    match default {
        Some(default) => format!("{help} [default: {default}]"),
        None => help.to_string(),
    }
}

/// A default as a person would write it: `0.7`, `workspace-write`, `llama`.
pub(crate) fn shown<T: Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    serde_json::from_str::<String>(&text).unwrap_or(text)
}

/// How many rounds a run may take: a whole number in 1..=64, never clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub struct RoundCount(u32);

impl RoundCount {
    pub const CEILING: u32 = 64;
    pub const DEFAULT: Self = Self(8);

    /// Parses a count as given on the command line.
    pub fn parse(raw: &str) -> Result<Self, String> {
        raw.trim()
            .parse::<u32>()
            .map_err(|_| Self::problem(raw))
            .and_then(Self::try_from)
    }

    pub fn get(self) -> u32 {
        self.0
    }

    fn problem(raw: impl fmt::Display) -> String {
        format!(
            "the round count must be a whole number from 1 to {}, got '{raw}'",
            Self::CEILING
        )
    }
}

impl TryFrom<u32> for RoundCount {
    type Error = String;

    fn try_from(n: u32) -> Result<Self, String> {
        if (1..=Self::CEILING).contains(&n) {
            Ok(Self(n))
        } else {
            Err(Self::problem(n))
        }
    }
}

impl From<RoundCount> for u32 {
    fn from(n: RoundCount) -> u32 {
        n.0
    }
}

/// `--check`: the repository's check command, `auto` (found in the repository) or `off`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum CheckSetting {
    Off,
    Auto,
    Command(String),
}

impl CheckSetting {
    /// The default (chosen from the evals: see `evals/README.md`).
    pub const DEFAULT: Self = Self::Auto;

    /// Parses `off`, `auto` or a command line (not empty).
    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "off" => Ok(Self::Off),
            "auto" => Ok(Self::Auto),
            "" => Err("the check is empty: give a command, `auto` or `off`".into()),
            _ => Ok(Self::Command(raw.to_string())),
        }
    }
}

impl TryFrom<String> for CheckSetting {
    type Error = String;

    fn try_from(raw: String) -> Result<Self, String> {
        Self::parse(&raw)
    }
}

impl fmt::Display for CheckSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::Auto => f.write_str("auto"),
            Self::Command(command) => f.write_str(command),
        }
    }
}

impl Serialize for CheckSetting {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `--observe`: whether each round gets the workspace observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObserveMode {
    On,
    Off,
}

impl ObserveMode {
    /// The default (chosen from the evals: see `evals/README.md`).
    pub const DEFAULT: Self = Self::On;
}

/// Which backend generates the child's turns: `llama`, `openai:URL` or `script:FILE`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum BackendKind {
    Llama,
    /// An OpenAI-compatible server's base URL, up to and including `/v1`.
    OpenAi(String),
    Script(PathBuf),
}

impl BackendKind {
    /// Parses `llama`, `openai:URL` (an `http://` or `https://` URL) or `script:FILE`.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw == "llama" {
            return Ok(Self::Llama);
        }
        if let Some(url) = raw.strip_prefix("openai:") {
            let url = url.trim_end_matches('/');
            let host = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"));
            return match host {
                Some(host) if !host.is_empty() && !host.starts_with('/') => {
                    Ok(Self::OpenAi(url.to_string()))
                }
                _ => Err(format!(
                    "bad backend '{raw}': use `openai:http://HOST:PORT/v1` (or https://)"
                )),
            };
        }
        match raw.strip_prefix("script:") {
            Some(path) if !path.is_empty() => Ok(Self::Script(PathBuf::from(path))),
            _ => Err(format!(
                "unknown backend '{raw}': use `llama`, `openai:URL` or `script:FILE`"
            )),
        }
    }
}

impl TryFrom<String> for BackendKind {
    type Error = String;

    fn try_from(raw: String) -> Result<Self, String> {
        Self::parse(&raw)
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Llama => f.write_str("llama"),
            Self::OpenAi(url) => write!(f, "openai:{url}"),
            Self::Script(path) => write!(f, "script:{}", path.display()),
        }
    }
}

impl Serialize for BackendKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A `--chat-format` the program knows: `auto` or a family name or alias.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ChatFormatName(String);

impl ChatFormatName {
    /// Accepts `auto` and every name `chat::by_name` knows.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw == "auto" || crate::chat::by_name(raw).is_some() {
            Ok(Self(raw.to_string()))
        } else {
            Err(format!(
                "unknown chat format '{raw}': use auto or one of {}",
                crate::chat::FORMAT_NAMES.join(", ")
            ))
        }
    }
}

impl ChatFormatName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ChatFormatName {
    type Error = String;

    fn try_from(raw: String) -> Result<Self, String> {
        Self::parse(&raw)
    }
}

impl From<ChatFormatName> for String {
    fn from(name: ChatFormatName) -> String {
        name.0
    }
}

/// The sandbox the command line takes: the policy itself (its serde spelling is the config
/// file's and `run.json`'s; a test holds the two spellings together).
impl clap::ValueEnum for SandboxMode {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::WorkspaceWrite, Self::ReadOnly, Self::Off]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::WorkspaceWrite => PossibleValue::new("workspace-write")
                .help("Commands may write only inside the workspace"),
            Self::ReadOnly => PossibleValue::new("read-only").help("Commands may write nowhere"),
            Self::Off => PossibleValue::new("off").help("No sandbox: commands run unconfined"),
        })
    }
}

/// The approval policy the command line takes, as [`SandboxMode`]'s.
impl clap::ValueEnum for ApprovalPolicy {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Auto, Self::Ask, Self::Deny]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::Auto => PossibleValue::new("auto").help("Run every command without asking"),
            Self::Ask => {
                PossibleValue::new("ask").help("Ask a person before each command (TUI only)")
            }
            Self::Deny => PossibleValue::new("deny").help("Refuse every command"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cores_busy_with_other_work_are_read_from_two_readings() {
        let before = cpu_ticks(
            "cpu  300 0 100 900 0 0 0 0 0 0\ncpu0 100 0 50 450 0 0 0 0 0 0\ncpu1 200 0 50 450 0 0 0 0 0 0\nintr 1 2\n",
        );
        assert_eq!(
            before,
            [(0, 150, 600), (1, 250, 700)],
            "the total line is not a CPU"
        );
        // cpu0 idle (2 busy of 10 ticks), cpu1 busy (9 of 10, one of them I/O wait is idle).
        let after = cpu_ticks("cpu0 101 0 51 458 0 0 0 0 0 0\ncpu1 208 0 51 450 1 0 0 0 0 0\n");
        assert_eq!(busy_between(&before, &after, |_| true), 1);
        assert_eq!(
            busy_between(&before, &after, |cpu| cpu == 0),
            0,
            "cpu1 is not ours"
        );
        assert_eq!(
            busy_between(&before, &before, |_| true),
            0,
            "no time passed"
        );
        assert!(machine_threads() >= 1);
    }

    #[test]
    fn defaults_read_as_a_person_writes_them() {
        assert_eq!(shown(&0.7f32), "0.7");
        assert_eq!(shown(&SandboxMode::WorkspaceWrite), "workspace-write");
        assert_eq!(shown(&BackendKind::Llama), "llama");
        assert_eq!(shown(&RoundCount::DEFAULT), "8");
    }

    #[test]
    fn the_command_line_spells_the_policies_as_the_config_file_does() {
        use clap::ValueEnum;
        let names = |values: Vec<(String, String)>| {
            for (clap, serde) in values {
                assert_eq!(clap, serde);
            }
        };
        names(
            SandboxMode::value_variants()
                .iter()
                .map(|v| (v.to_possible_value().unwrap().get_name().into(), shown(v)))
                .collect(),
        );
        names(
            ApprovalPolicy::value_variants()
                .iter()
                .map(|v| (v.to_possible_value().unwrap().get_name().into(), shown(v)))
                .collect(),
        );
    }

    #[test]
    fn round_counts_are_checked_never_clamped() {
        assert_eq!(RoundCount::parse("64").map(RoundCount::get), Ok(64));
        for bad in ["0", "65", "abc", "-1", "2.5", ""] {
            assert!(RoundCount::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backends_parse_llama_and_script_files_only() {
        assert_eq!(BackendKind::parse("llama"), Ok(BackendKind::Llama));
        assert_eq!(
            BackendKind::parse("script:a.json"),
            Ok(BackendKind::Script(PathBuf::from("a.json")))
        );
        for bad in ["gpt", "script:", "Llama"] {
            let err = BackendKind::parse(bad).unwrap_err();
            assert!(err.starts_with("unknown backend"), "{err}");
        }
    }

    #[test]
    fn openai_backends_take_an_http_url() {
        assert_eq!(
            BackendKind::parse("openai:http://127.0.0.1:8080/v1/"),
            Ok(BackendKind::OpenAi("http://127.0.0.1:8080/v1".into()))
        );
        assert_eq!(
            BackendKind::parse("openai:https://gpu.example/v1")
                .map(|b| b.to_string())
                .as_deref(),
            Ok("openai:https://gpu.example/v1")
        );
        for bad in [
            "openai:",
            "openai:localhost:8080",
            "openai:http://",
            "openai:ftp://x",
        ] {
            let err = BackendKind::parse(bad).unwrap_err();
            assert!(err.starts_with("bad backend"), "{err}");
        }
    }
}
