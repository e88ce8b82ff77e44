//! What an eval found: one record per task × arm × seed, a summary per arm, and the two files
//! they are written to (`<date>-<model>.json` and a Markdown table beside it).
//!
//! Nothing machine-specific goes into these files (no absolute paths), so they can be
//! committed and compared.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::metrics::{ratio, Discovery, RoundContextFigures};
use super::{Arm, EvalError};
use crate::options::ObserveMode;

/// The verify script's verdict on one run's final tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyResult {
    pub passed: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The end of what it printed.
    pub output_tail: String,
    pub wall_ms: u64,
}

/// One task × arm × seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub task: String,
    pub arm: Arm,
    pub seed: u32,
    /// The independent verdict: the verify script passed on the final tree.
    pub completed: bool,
    /// The run's status as ralph-tui reported it (`complete`, `blocked`, `budget-limited`,
    /// `round-failed`, `cancelled`), or `no-result` when it printed no `run_finished`.
    pub status: String,
    /// The status of the worker's last valid report, if any.
    pub report_status: Option<String>,
    /// The worker reported the objective complete.
    pub claimed_complete: bool,
    /// The worker reported completion and the verify script failed.
    pub false_completion: bool,
    pub discovery: Discovery,
    pub tool_calls: u32,
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    pub rounds_used: u32,
    pub max_rounds: u32,
    /// Turns per round it ran with (results written before these were recorded may have
    /// `None`: ralph-tui's default).
    pub max_turns: Option<u32>,
    /// Tokens per turn it ran with (the oneshot arm: its answer's room beyond its files).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// `--observe` and `--check` as passed (the agent arms; `None` for the oneshot arm and in
    /// results written before the round context existed).
    #[serde(default)]
    pub observe: Option<ObserveMode>,
    #[serde(default)]
    pub check: Option<String>,
    /// What the check and the observation did.
    #[serde(default)]
    pub round_context: RoundContextFigures,
    /// The run-wide generated-token budget it ran under (the single arm's).
    pub token_budget: Option<u64>,
    /// Wall time of the ralph-tui process, model load included.
    pub wall_ms: u64,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// `run_finished.error`, or why there was no result.
    pub error: Option<String>,
    pub verify: VerifyResult,
    /// What the oneshot arm's answer held and what became of it (that arm only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oneshot: Option<OneshotRecord>,
    /// How the worker's turns went (the agent arms; zero for the oneshot arm and for
    /// results written before these were counted).
    #[serde(default)]
    pub worker: WorkerFigures,
}

/// How a worker's turns went: turns that called nothing, and calls the loop guard refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerFigures {
    pub turns: u32,
    pub turns_without_call: u32,
    /// Turns that wrote a call opening and yet made no call (lost to format).
    #[serde(default)]
    pub calls_lost: u32,
    /// Identical calls (no file changed since) that were not run again.
    pub repeats_refused: u32,
    /// Rounds whose wrap-up began because a call was repeated three times.
    pub repetition_wrap_ups: u32,
}

impl WorkerFigures {
    fn add(self, other: Self) -> Self {
        Self {
            turns: self.turns + other.turns,
            turns_without_call: self.turns_without_call + other.turns_without_call,
            calls_lost: self.calls_lost + other.calls_lost,
            repeats_refused: self.repeats_refused + other.repeats_refused,
            repetition_wrap_ups: self.repetition_wrap_ups + other.repetition_wrap_ups,
        }
    }
}

/// The oneshot arm's prompt and answer: which files it showed, which the answer wrote, and
/// why anything was left out. Paths are as the answer wrote them, cut and stripped of control
/// characters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OneshotRecord {
    /// Files of the repository shown whole in the prompt.
    pub files_shown: u32,
    /// Files named in the prompt but not shown, with why (binary, too large, no room).
    pub files_not_shown: Vec<String>,
    /// Files the answer wrote, in answer order.
    pub written: Vec<String>,
    /// Files the answer gave that were not written, with why (a path outside the
    /// repository, into `.git`, through a symlink).
    pub refused: Vec<String>,
    /// Blocks of the answer that were not files (no path line, a fence never closed).
    pub problems: Vec<String>,
}

/// Totals for one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    pub arm: Arm,
    pub runs: u32,
    pub completed: u32,
    pub completion_rate: Option<f64>,
    /// Runs whose worker reported completion.
    pub claims: u32,
    pub false_completions: u32,
    /// False completions as a share of completion claims.
    pub false_completion_rate: Option<f64>,
    pub discovery: Discovery,
    pub repeated_discovery_share: Option<f64>,
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    pub rounds_used: u32,
    pub wall_ms: u64,
    #[serde(default)]
    pub worker: WorkerFigures,
    /// Rounds given the observation, check runs, and `complete` claims the check refused.
    #[serde(default)]
    pub observed_rounds: u32,
    #[serde(default)]
    pub check_runs: u32,
    #[serde(default)]
    pub claims_refused: u32,
}

impl ArmSummary {
    pub fn of(arm: Arm, runs: &[RunRecord]) -> Self {
        let runs: Vec<&RunRecord> = runs.iter().filter(|r| r.arm == arm).collect();
        let count = |f: &dyn Fn(&RunRecord) -> bool| {
            u32::try_from(runs.iter().filter(|r| f(r)).count()).unwrap_or(u32::MAX)
        };
        let total = count(&|_| true);
        let completed = count(&|r| r.completed);
        let claims = count(&|r| r.claimed_complete);
        let false_completions = count(&|r| r.false_completion);
        let discovery = Discovery {
            calls: runs.iter().map(|r| r.discovery.calls).sum(),
            repeated: runs.iter().map(|r| r.discovery.repeated).sum(),
        };
        Self {
            arm,
            runs: total,
            completed,
            completion_rate: ratio(completed, total),
            claims,
            false_completions,
            false_completion_rate: ratio(false_completions, claims),
            discovery,
            repeated_discovery_share: discovery.share(),
            prompt_tokens: runs.iter().map(|r| r.prompt_tokens).sum(),
            generated_tokens: runs.iter().map(|r| r.generated_tokens).sum(),
            rounds_used: runs.iter().map(|r| r.rounds_used).sum(),
            wall_ms: runs.iter().map(|r| r.wall_ms).sum(),
            worker: runs
                .iter()
                .map(|r| r.worker)
                .fold(WorkerFigures::default(), WorkerFigures::add),
            observed_rounds: runs.iter().map(|r| r.round_context.observed_rounds).sum(),
            check_runs: runs.iter().map(|r| r.round_context.check_runs).sum(),
            claims_refused: runs.iter().map(|r| r.round_context.claims_refused).sum(),
        }
    }

    /// One line a person reads at the end of an eval.
    pub fn line(&self) -> String {
        format!(
            "{:<11} completed {}/{} ({}) · false completions {}/{} claims ({}) · claims the check refused {} · repeated discovery {}/{} ({}) · turns without a call {}/{} · repeats refused {} · tokens {} prompt + {} generated · {} rounds · wall {:.1} s",
            self.arm.as_str(),
            self.completed,
            self.runs,
            percent(self.completion_rate),
            self.false_completions,
            self.claims,
            percent(self.false_completion_rate),
            self.claims_refused,
            self.discovery.repeated,
            self.discovery.calls,
            percent(self.repeated_discovery_share),
            self.worker.turns_without_call,
            self.worker.turns,
            self.worker.repeats_refused,
            self.prompt_tokens,
            self.generated_tokens,
            self.rounds_used,
            seconds(self.wall_ms),
        )
    }
}

/// Which check an arm passes as ralph-tui's `--check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckChoice {
    /// The task's `check` file, else `auto` (which finds none where there are no tests).
    TaskElseAuto,
    Off,
}

/// What one arm ran with: the figures ralph-tui resolved, so the results say which ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmSettings {
    pub arm: Arm,
    /// `-n`: rounds at most (0 for the oneshot arm: no rounds).
    pub rounds: u32,
    /// Turns per round (the oneshot arm: its one generation).
    pub max_turns: u32,
    /// Tokens per turn (the oneshot arm: its answer's room beyond the files).
    pub max_tokens: u32,
    /// `--observe` (`None`: the oneshot arm, which has no rounds).
    pub observe: Option<ObserveMode>,
    /// `--check` (`None`: the oneshot arm).
    pub check: Option<CheckChoice>,
    /// The run's generated-token budget, in words.
    pub budget: String,
}

/// A task's visible check (its `check` file), as the Ralph and single arms pass it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCheck {
    pub task: String,
    /// `None`: no `check` file; those arms pass `--check auto`.
    pub check: Option<String>,
}

/// The model an eval ran, as recorded (file name, not path).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub file: String,
    pub sha256: String,
}

/// Everything one eval produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalResults {
    /// The UTC date the eval started, `YYYY-MM-DD`.
    pub date: String,
    pub started_at: String,
    pub finished_at: String,
    /// `llama` or `script`.
    pub backend: String,
    /// Names the results files: the model file's stem, or `script`.
    pub label: String,
    pub model: Option<ModelInfo>,
    /// `ralph-tui --version` of the binary that ran.
    pub ralph_version: String,
    pub cpus: usize,
    pub rounds: u32,
    pub seeds: Vec<u32>,
    pub arms: Vec<Arm>,
    /// `--max-turns` given for the Ralph arms (`None`: ralph-tui's default; `arm_settings`
    /// has the figure that ran).
    pub max_turns: Option<u32>,
    /// `--max-tokens` given for the agent arms (`None`: ralph-tui's default).
    pub max_tokens: Option<u32>,
    pub single_max_turns: u32,
    /// `--oneshot-max-tokens` (`None`: the Ralph arm's generated tokens, at least room for the
    /// task's files).
    #[serde(default)]
    pub oneshot_max_tokens: Option<u32>,
    /// What each arm ran with (empty in results written before it was recorded).
    #[serde(default)]
    pub arm_settings: Vec<ArmSettings>,
    /// Each task's visible check.
    #[serde(default)]
    pub task_checks: Vec<TaskCheck>,
    /// Extra arguments every ralph-tui run got.
    pub extra_args: Vec<String>,
    pub tasks: Vec<String>,
    /// True when the eval was interrupted before every run was done.
    pub interrupted: bool,
    pub runs: Vec<RunRecord>,
    pub summary: Vec<ArmSummary>,
}

impl EvalResults {
    /// The stem both results files share: `<date>-<label>`.
    pub fn file_stem(&self) -> String {
        format!("{}-{}", self.date, self.label)
    }

    /// Writes `<out>/<date>-<label>.json` and `.md`, replacing an earlier eval of that day.
    pub fn write(&self, out_dir: &Path) -> Result<(PathBuf, PathBuf), EvalError> {
        let io = |what: String| move |source| EvalError::Io { what, source };
        std::fs::create_dir_all(out_dir)
            .map_err(io(format!("cannot create {}", out_dir.display())))?;
        let json_path = out_dir.join(format!("{}.json", self.file_stem()));
        let md_path = out_dir.join(format!("{}.md", self.file_stem()));
        let mut json = serde_json::to_string_pretty(self).map_err(|e| EvalError::Io {
            what: "cannot serialize the results".into(),
            source: std::io::Error::other(e),
        })?;
        json.push('\n');
        std::fs::write(&json_path, json)
            .map_err(io(format!("cannot write {}", json_path.display())))?;
        std::fs::write(&md_path, self.markdown())
            .map_err(io(format!("cannot write {}", md_path.display())))?;
        Ok((json_path, md_path))
    }

    /// The results as Markdown: settings, a table per arm, a table per run.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        self.settings_lines(&mut md);
        self.arms_table(&mut md);
        self.worker_table(&mut md);
        self.round_context_table(&mut md);
        self.arms_side_by_side(&mut md);
        self.runs_table(&mut md);
        md
    }
}

impl EvalResults {
    /// The title and what the eval ran with: model, machine, arms' settings, times.
    fn settings_lines(&self, md: &mut String) {
        let _ = writeln!(md, "# Eval {} — {}\n", self.date, self.label);
        match &self.model {
            Some(model) => {
                let _ = writeln!(md, "- model: `{}`, sha256 `{}`", model.file, model.sha256);
            }
            None => {
                let _ = writeln!(md, "- model: none (`{}` backend)", self.backend);
            }
        }
        let seeds: Vec<String> = self.seeds.iter().map(u32::to_string).collect();
        let _ = writeln!(
            md,
            "- {} · {} CPU(s) · backend `{}` · seeds {}",
            self.ralph_version,
            self.cpus,
            self.backend,
            seeds.join(", ")
        );
        let _ = writeln!(md, "- ran {} → {}", self.started_at, self.finished_at);
        if !self.extra_args.is_empty() {
            let _ = writeln!(
                md,
                "- extra ralph-tui arguments: `{}`",
                self.extra_args.join(" ")
            );
        }
        if self.interrupted {
            let _ = writeln!(md, "- **interrupted**: not every run was done");
        }
        self.arm_settings_table(md);
        self.task_checks_line(md);
    }

    /// One row per arm: the rounds, turns, tokens, observation, check and budget it ran with.
    fn arm_settings_table(&self, md: &mut String) {
        if self.arm_settings.is_empty() {
            return;
        }
        let _ = writeln!(
            md,
            "\n| arm | rounds | turns per round | tokens per turn | observe | check | token budget |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---|---|---|");
        for a in &self.arm_settings {
            let observe = match a.observe {
                Some(ObserveMode::On) => "on",
                Some(ObserveMode::Off) => "off",
                None => "–",
            };
            let check = match a.check {
                Some(CheckChoice::TaskElseAuto) => "the task's, else `auto`",
                Some(CheckChoice::Off) => "off",
                None => "–",
            };
            let (rounds, turns, tokens) = if a.arm == Arm::Oneshot {
                (
                    "–".to_string(),
                    "1 generation".to_string(),
                    format!("{} beyond the files", a.max_tokens),
                )
            } else {
                (
                    a.rounds.to_string(),
                    a.max_turns.to_string(),
                    a.max_tokens.to_string(),
                )
            };
            let _ = writeln!(
                md,
                "| {} | {rounds} | {turns} | {tokens} | {observe} | {check} | {} |",
                a.arm.as_str(),
                a.budget,
            );
        }
    }

    /// The tasks' visible checks, when an arm passes them.
    fn task_checks_line(&self, md: &mut String) {
        let uses = self
            .arm_settings
            .iter()
            .any(|a| a.check == Some(CheckChoice::TaskElseAuto));
        if !uses || self.task_checks.is_empty() {
            return;
        }
        let checks: Vec<String> = self
            .task_checks
            .iter()
            .map(|t| match &t.check {
                Some(check) => format!("{} `{check}`", t.task),
                None => format!("{} none (`auto`)", t.task),
            })
            .collect();
        let _ = writeln!(md, "\nTask checks: {}.", checks.join(" · "));
    }

    /// One row per arm: completions, false completions, repeated discovery, tokens, time.
    fn arms_table(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "\n| arm | runs | completed | false completions (of claims) | repeated discovery | prompt tokens | generated tokens | rounds | wall |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for s in &self.summary {
            let _ = writeln!(
                md,
                "| {} | {} | {} ({}) | {}/{} ({}) | {}/{} ({}) | {} | {} | {} | {:.1} s |",
                s.arm.as_str(),
                s.runs,
                s.completed,
                percent(s.completion_rate),
                s.false_completions,
                s.claims,
                percent(s.false_completion_rate),
                s.discovery.repeated,
                s.discovery.calls,
                percent(s.repeated_discovery_share),
                s.prompt_tokens,
                s.generated_tokens,
                s.rounds_used,
                seconds(s.wall_ms),
            );
        }
    }

    /// One row per agent arm: how the worker's turns went (calls missing, lost, refused).
    fn worker_table(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "\n| arm | turns | turns without a call | calls lost to format | identical calls refused | repetition wrap-ups |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
        for s in self.summary.iter().filter(|s| s.arm != Arm::Oneshot) {
            let w = s.worker;
            let _ = writeln!(
                md,
                "| {} | {} | {} ({}) | {} | {} | {} |",
                s.arm.as_str(),
                w.turns,
                w.turns_without_call,
                percent(ratio(w.turns_without_call, w.turns)),
                w.calls_lost,
                w.repeats_refused,
                w.repetition_wrap_ups,
            );
        }
    }

    /// One row per agent arm: what the observation and the check did.
    fn round_context_table(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "\n| arm | rounds observed | check runs | claims the check refused |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|");
        for s in self.summary.iter().filter(|s| s.arm != Arm::Oneshot) {
            let _ = writeln!(
                md,
                "| {} | {}/{} | {} | {} |",
                s.arm.as_str(),
                s.observed_rounds,
                s.rounds_used,
                s.check_runs,
                s.claims_refused,
            );
        }
    }

    /// One row per run.
    fn runs_table(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "\n| task | arm | seed | verify | worker status | false completion | repeated discovery | rounds | prompt tok | gen tok | budget | wall | check (first → last, refused) |"
        );
        let _ = writeln!(
            md,
            "|---|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|"
        );
        for r in &self.runs {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {}/{} | {} | {} | {} | {} | {:.1} s | {} |",
                r.task,
                r.arm.as_str(),
                r.seed,
                if r.completed { "pass" } else { "fail" },
                r.status,
                if r.false_completion { "**yes**" } else { "no" },
                r.discovery.repeated,
                r.discovery.calls,
                r.rounds_used,
                r.prompt_tokens,
                r.generated_tokens,
                r.token_budget
                    .map_or_else(|| "–".to_string(), |b| b.to_string()),
                seconds(r.wall_ms),
                check_cell(&r.round_context),
            );
        }
    }

    /// One row per task and seed, one column per arm: the verify verdict, and for the agent
    /// arms the worker's claim, so the arms compare at a glance.
    fn arms_side_by_side(&self, md: &mut String) {
        let mut header = String::from("\n| task | seed |");
        let mut rule = String::from("|---|---:|");
        for arm in &self.arms {
            header.push_str(&format!(" {} |", arm.as_str()));
            rule.push_str("---|");
        }
        let _ = writeln!(md, "{header}\n{rule}");
        let mut rows: Vec<(&str, u32)> = Vec::new();
        for r in &self.runs {
            if !rows.contains(&(r.task.as_str(), r.seed)) {
                rows.push((r.task.as_str(), r.seed));
            }
        }
        for (task, seed) in rows {
            let mut line = format!("| {task} | {seed} |");
            for &arm in &self.arms {
                let run = self
                    .runs
                    .iter()
                    .find(|r| r.task == task && r.seed == seed && r.arm == arm);
                let cell = match run {
                    None => "–".to_string(),
                    Some(r) => cell(r),
                };
                line.push_str(&format!(" {cell} |"));
            }
            let _ = writeln!(md, "{line}");
        }
    }
}

/// A run in the side-by-side table: `pass`/`fail`, then what the worker said (its status,
/// or for the oneshot arm the files its answer wrote).
fn cell(r: &RunRecord) -> String {
    let verdict = if r.completed { "pass" } else { "fail" };
    match &r.oneshot {
        Some(o) => format!(
            "{verdict} · {} written{}",
            o.written.len(),
            if o.refused.is_empty() {
                String::new()
            } else {
                format!(", {} refused", o.refused.len())
            }
        ),
        None if r.false_completion => format!("{verdict} · {} (**false**)", r.status),
        None => format!("{verdict} · {}", r.status),
    }
}

/// A run's check in the runs table: the verdict on the starting tree, the last one, and the
/// claims it refused; `–` when no check ran.
fn check_cell(c: &RoundContextFigures) -> String {
    match (&c.first_verdict, &c.last_verdict) {
        (Some(first), Some(last)) => {
            let mut cell = format!("{first} → {last}");
            if c.claims_refused > 0 {
                let _ = write!(cell, ", {} refused", c.claims_refused);
            }
            cell
        }
        _ => "–".to_string(),
    }
}

/// `0.5` → `50%`; `None` → `n/a`.
pub fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "n/a".to_string(), |s| format!("{:.0}%", s * 100.0))
}

fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}
