//! `ralph-tui runs`, `show` and the reading half of `replay`: past runs listed, summarised
//! and their events read back.
//!
//! Everything here reads run directories through [`PastRun`] and `events.jsonl`, so a run
//! that was killed (no end in `run.json`, no `run_finished`) lists and shows like any other,
//! as `killed`; one whose process still holds its workspace lock is `running` and is never
//! pruned. Output is text built here and written by `commands`, the subcommands' entry.
//! The listing names the worktrees and branches (`--worktree`) that runs not running left
//! behind; pruning (`prune`) removes a run with its worktree and branch.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::{runs_dir, FindError, PastRun};
use crate::config::Dirs;
use crate::protocol::event::{ChangedFile, Event, RoundOutcome, Stamped, Verification};
use crate::protocol::report::Report;
use crate::workspace::WorktreeInfo;

/// One past run as `ralph-tui runs` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub id: String,
    pub started_at: String,
    /// The person's workspace: where the run worked, or for a worktree run (`--worktree`)
    /// the repository whose worktree it worked in.
    pub repository: String,
    /// A worktree run's branch, `ralph/<run id>`.
    pub branch: Option<String>,
    /// The objective's first line.
    pub objective: String,
    /// `complete`, `blocked`, `budget-limited`, `cancelled`, `round-failed`, `killed` (no
    /// end was written) or `running`.
    pub outcome: String,
    pub rounds: u32,
    pub dir: PathBuf,
}

/// Reads `events.jsonl`: every line that parses, in order; tokens only when asked for.
pub fn read_events(path: &Path, tokens: bool) -> Vec<Stamped> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter(|line| tokens || !line.contains(r#""type":"token""#))
        .filter_map(|line| serde_json::from_str::<Stamped>(&line).ok())
        .collect()
}

/// The run ids whose process is alive and holds a workspace lock (holder files, in the
/// runtime directory or `<data>/locks`, name the holder as `run ID, pid PID, …`).
pub(super) fn running_ids(data: &Path) -> HashSet<String> {
    crate::runlock::all_holder_dirs(data)
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .filter_map(|text| {
            let pid = crate::runlock::holder_pid(&text)?;
            let (id, _) = text.trim().strip_prefix("run ")?.split_once(", pid ")?;
            let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
            alive.then(|| id.to_string())
        })
        .collect()
}

fn entry(past: &PastRun, running: &HashSet<String>) -> Entry {
    let outcome = match past.status {
        Some(status) => status.as_str().to_string(),
        None if running.contains(past.id()) => "running".into(),
        None => "killed".into(),
    };
    Entry {
        id: past.id().to_string(),
        started_at: past.record.started_at.clone(),
        repository: repository_of(past).display().to_string(),
        branch: past.record.info.worktree.as_ref().map(|w| w.branch.clone()),
        objective: past
            .record
            .objective
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
        outcome,
        rounds: past.last_round,
        dir: past.dir.clone(),
    }
}

/// The person's workspace for a run: a worktree run's is inside the repository the worktree
/// was made from, not the worktree.
fn repository_of(past: &PastRun) -> PathBuf {
    match &past.record.info.worktree {
        Some(info) if info.prefix.is_empty() => info.user_repo.clone(),
        Some(info) => info.user_repo.join(&info.prefix),
        None => past.record.workspace.clone(),
    }
}

/// Every readable run under the data dir, newest first.
pub fn list(dirs: &Dirs) -> Vec<Entry> {
    let running = running_ids(&dirs.data);
    let mut entries: Vec<Entry> = super::run_dirs(&runs_dir(dirs))
        .into_iter()
        .filter_map(|(_, dir)| PastRun::load(&dir).ok())
        .map(|past| entry(&past, &running))
        .collect();
    entries.sort_by(|a, b| {
        let time = |e: &Entry| chrono::DateTime::parse_from_rfc3339(&e.started_at).ok();
        time(b).cmp(&time(a)).then_with(|| b.id.cmp(&a.id))
    });
    entries
}

/// The listing as a table, one run a line; the repository column is as wide as its widest
/// cell (a worktree run's names its branch too), so the objectives stay in line.
pub fn table(entries: &[Entry]) -> String {
    let repos: Vec<String> = entries.iter().map(repository_cell).collect();
    let width = repos
        .iter()
        .map(|r| r.chars().count())
        .chain(std::iter::once("REPOSITORY".len()))
        .max()
        .unwrap_or(0);
    let pad = |text: &str| {
        let fill = width.saturating_sub(text.chars().count());
        format!("{text}{}", " ".repeat(fill))
    };
    let mut out = String::new();
    out.push_str(&format!(
        "{:<22} {:<20} {:<14} {:>6}  {} {}\n",
        "ID",
        "STARTED",
        "OUTCOME",
        "ROUNDS",
        pad("REPOSITORY"),
        "OBJECTIVE"
    ));
    for (e, repo) in entries.iter().zip(&repos) {
        let started = chrono::DateTime::parse_from_rfc3339(&e.started_at)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_else(|_| e.started_at.clone());
        out.push_str(&format!(
            "{:<22} {:<20} {:<14} {:>6}  {} {}\n",
            e.id,
            started,
            e.outcome,
            e.rounds,
            pad(repo),
            crate::text::cut_at_char_boundary(&e.objective, 60)
        ));
    }
    out
}

/// The repository column of a run: the repository's name, and a worktree run's branch.
fn repository_cell(e: &Entry) -> String {
    let mut repo = Path::new(&e.repository).file_name().map_or_else(
        || e.repository.clone(),
        |n| n.to_string_lossy().into_owned(),
    );
    if let Some(branch) = &e.branch {
        repo.push_str(&format!(" ⎇ {branch}"));
    }
    crate::text::sanitize_line(&repo)
}

/// What `show` tells about one round.
#[derive(Debug, Default)]
struct RoundFacts {
    outcome: Option<RoundOutcome>,
    error: Option<String>,
    wall_ms: u64,
    files: Vec<ChangedFile>,
    report: Option<Report>,
    rejected: usize,
    /// The person's notes the round was given: when written, and the text.
    notes: Vec<(String, String)>,
}

fn report_lines(out: &mut String, report: &Report, indent: &str) {
    out.push_str(&format!(
        "{indent}report: {} — {}\n",
        report.status.as_str(),
        report.summary
    ));
    for evidence in &report.evidence {
        out.push_str(&format!("{indent}  evidence: {evidence}\n"));
    }
    for step in &report.next_steps {
        out.push_str(&format!("{indent}  next: {step}\n"));
    }
    if !report.blocker.is_empty() {
        out.push_str(&format!("{indent}  blocker: {}\n", report.blocker));
    }
}

fn outcome_word(outcome: Option<RoundOutcome>) -> String {
    outcome
        .and_then(|o| serde_json::to_value(o).ok())
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_else(|| "never finished".into())
}

fn verification_line(v: &Verification) -> String {
    let code = v
        .exit_code
        .map_or_else(|| "no exit code".to_string(), |c| format!("exit code {c}"));
    format!(
        "verification: `{}` {} ({code})\n",
        v.command,
        if v.passed { "passed" } else { "FAILED" }
    )
}

/// A run's summary: outcome, each round's report, files changed, verification.
pub fn show(dir: &Path, dirs: &Dirs) -> Result<String, FindError> {
    let past = PastRun::load(dir)?;
    let running = running_ids(&dirs.data);
    let listed = entry(&past, &running);
    let mut out = head_lines(&past, &listed);
    let told = Told::read(dir);
    for (round, facts) in &told.rounds {
        round_lines(&mut out, *round, facts);
    }
    out.push('\n');
    if let Some(error) = told.error {
        out.push_str(&format!("error: {error}\n"));
    }
    for warning in told.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    match &told.verification {
        Some(v) => out.push_str(&verification_line(v)),
        None => out.push_str("verification: none\n"),
    }
    out.push_str(&review_lines(&past));
    out.push_str(&format!("run log: {}\n", past.dir.display()));
    Ok(out)
}

/// `show`'s first lines: the run, its objective, workspace, backend, times and outcome.
fn head_lines(past: &PastRun, listed: &Entry) -> String {
    let record = &past.record;
    let mut out = String::new();
    out.push_str(&format!("run {}\n", record.run_id));
    out.push_str(&format!("objective: {}\n", record.objective.trim()));
    match &record.info.worktree {
        Some(info) => out.push_str(&format!(
            "workspace: {} (worked in its own worktree on branch {}: {})\n",
            repository_of(past).display(),
            info.branch,
            info.path.display()
        )),
        None => out.push_str(&format!("workspace: {}\n", record.workspace.display())),
    }
    out.push_str(&format!("backend: {}\n", record.info.backend));
    let part_field = |part: &serde_json::Value, key: &str| -> Option<String> {
        part.get(key)?.as_str().map(String::from)
    };
    let first_start = record
        .info
        .parts
        .first()
        .and_then(|part| part_field(part, "started_at"))
        .unwrap_or_else(|| record.started_at.clone());
    out.push_str(&format!(
        "started: {first_start}{}\n",
        record
            .finished_at
            .as_ref()
            .map(|t| format!(", finished: {t}"))
            .unwrap_or_default()
    ));
    let starts = record
        .info
        .parts
        .iter()
        .skip(1)
        .filter_map(|part| part_field(part, "started_at"))
        .chain([record.started_at.clone()]);
    for (part, resumed_at) in record.info.parts.iter().zip(starts) {
        let ending = part_field(part, "status").unwrap_or_else(|| "killed".into());
        let rounds = part
            .get("rounds_started")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        out.push_str(&format!(
            "resumed: {resumed_at}, after the part before ended {ending} at round {rounds}\n"
        ));
    }
    if let Some(from) = &record.info.resumed_from {
        out.push_str(&format!("resumed from: {from}\n"));
    }
    let how = match past.status {
        Some(status) => status.describe().to_string(),
        None if listed.outcome == "running" => "the run is still going".to_string(),
        None => "no end was recorded: the process was killed".to_string(),
    };
    out.push_str(&format!(
        "outcome: {} after {} — {how}\n",
        listed.outcome,
        crate::text::count(past.last_round as usize, "round", "rounds")
    ));
    out
}

/// What `show` reads from a run's `events.jsonl`: each round's facts and how the run ended.
#[derive(Default)]
struct Told {
    rounds: BTreeMap<u32, RoundFacts>,
    verification: Option<Verification>,
    error: Option<String>,
    warnings: Vec<String>,
}

impl Told {
    fn read(dir: &Path) -> Self {
        let mut told = Self::default();
        let rounds = &mut told.rounds;
        for stamped in read_events(&dir.join("events.jsonl"), false) {
            match stamped.event {
                // A resumed part: how the part before ended is not how the run ended.
                Event::RunStarted { .. } => {
                    told.verification = None;
                    told.error = None;
                }
                Event::RoundStarted { round, .. } => {
                    rounds.entry(round).or_default();
                }
                Event::ReportRejected { round, .. } => {
                    rounds.entry(round).or_default().rejected += 1
                }
                Event::ReportAccepted { round, report } => {
                    rounds.entry(round).or_default().report = Some(report);
                }
                Event::Note {
                    round,
                    text,
                    written_at,
                    ..
                } => rounds
                    .entry(round)
                    .or_default()
                    .notes
                    .push((written_at, text)),
                Event::WorkspaceChanged { round, files } => {
                    rounds.entry(round).or_default().files = files
                }
                Event::RoundFinished {
                    round,
                    outcome,
                    wall_ms,
                    error,
                    ..
                } => {
                    let facts = rounds.entry(round).or_default();
                    facts.outcome = Some(outcome);
                    facts.wall_ms = wall_ms;
                    facts.error = error;
                }
                Event::Warning { message } => told.warnings.push(message),
                Event::RunFinished {
                    verification,
                    error,
                    ..
                } => {
                    told.verification = verification;
                    told.error = error;
                }
                _ => {}
            }
        }
        told
    }
}

/// One round's lines in `show`: its outcome and time, error, rejected reports, report, files.
fn round_lines(out: &mut String, round: u32, facts: &RoundFacts) {
    let (ins, del) = facts
        .files
        .iter()
        .fold((0, 0), |(i, d), f| (i + f.insertions, d + f.deletions));
    out.push_str(&format!(
        "\nround {round}: {}, {:.1} s, {} changed +{ins} −{del}\n",
        outcome_word(facts.outcome),
        Duration::from_millis(facts.wall_ms).as_secs_f64(),
        crate::text::count(facts.files.len(), "file", "files")
    ));
    for (written_at, text) in &facts.notes {
        // The person's words, never the worker's report.
        out.push_str(&format!("  your note ({written_at}): {text}\n"));
    }
    if let Some(error) = &facts.error {
        out.push_str(&format!("  error: {error}\n"));
    }
    if facts.rejected > 0 {
        out.push_str(&format!("  {} report(s) rejected\n", facts.rejected));
    }
    match &facts.report {
        Some(report) => report_lines(out, report, "  "),
        None => out.push_str("  no report\n"),
    }
    for file in &facts.files {
        out.push_str(&format!(
            "  {} {} +{} −{}{}\n",
            file.status.letter(),
            file.path,
            file.insertions,
            file.deletions,
            if file.outside_run {
                " (changed outside the run)"
            } else {
                ""
            }
        ));
    }
}

/// What happened at the review (`review.jsonl`): each action, then where a worktree run's
/// branch is now.
fn review_lines(past: &PastRun) -> String {
    let actions = super::review::read(&past.dir);
    let mut out = String::new();
    if actions.is_empty() {
        out.push_str("review: nothing recorded (no review, or it was left without acting)\n");
    }
    for action in actions {
        out.push_str(&format!("review: {} {}\n", action.action, action.detail));
    }
    if let Some(info) = &past.record.info.worktree {
        if info.is_left() {
            out.push_str(&format!("branch: {} is still there\n", info.branch));
        } else {
            out.push_str(&format!("branch: {} is gone\n", info.branch));
        }
    }
    out
}

/// The subcommands' one stdout sink: sanitized, since runs, reports, warnings and file names
/// come from the worker and the repository.
pub(super) fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(crate::text::sanitize(text).as_bytes());
    let _ = stdout.flush();
}

/// The worktrees and branches (`--worktree`) that runs not running left behind, one per
/// branch, with the newest run that worked there.
fn worktrees_left(entries: &[Entry]) -> Vec<(String, WorktreeInfo)> {
    let mut seen = HashSet::new();
    entries
        .iter()
        .filter(|e| e.outcome != "running")
        .filter_map(|e| {
            Some((
                e.id.clone(),
                PastRun::load(&e.dir).ok()?.record.info.worktree?,
            ))
        })
        .filter(|(_, info)| info.is_left() && seen.insert(info.branch.clone()))
        .collect()
}

/// The listing's note on worktrees left behind, empty when there are none.
pub(super) fn worktrees_note(entries: &[Entry]) -> String {
    let left = worktrees_left(entries);
    if left.is_empty() {
        return String::new();
    }
    let mut note = String::from(
        "\nworktrees and branches of runs that are not running (`ralph-tui runs --prune RUN` removes them with the run):\n",
    );
    for (id, info) in left {
        note.push_str(&format!(
            "  {id}  {}  {}\n",
            info.branch,
            info.path.display()
        ));
    }
    note
}
