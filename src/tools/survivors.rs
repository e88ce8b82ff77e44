//! What of a run's commands is still running once its rounds are over: the review refuses to
//! write while anything is, since a process left behind could race its writes.
//!
//! Every command runs under a supervisor that leads a session of its own (see
//! [`super::supervisor`]); each supervisor's pid (its session id) is remembered here with
//! the directory its command ran in. A process of the run is then a live process in one of
//! those sessions, or a descendant of one (a `setsid` under a live parent). A process that
//! left its session *and* lost its parent (its supervisor killed) is no longer anyone's:
//! for that, the binary makes ralph-tui a child subreaper ([`adopt_orphans`]), so such a
//! process becomes ralph-tui's own child and is found as a child in a session ralph-tui did
//! not start. Zombies are not counted: they cannot run.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The sessions commands were started in: the supervisor's pid and the command's directory.
static SESSIONS: Mutex<Vec<(i32, PathBuf)>> = Mutex::new(Vec::new());

/// Whether this process adopts orphans ([`adopt_orphans`] succeeded).
static ADOPTING: AtomicBool = AtomicBool::new(false);

/// A process of a run that is still running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Survivor {
    pub pid: i32,
    /// Its command name, as `/proc/<pid>/comm` has it.
    pub name: String,
}

/// Makes this process a child subreaper, so that a process whose supervisor died is
/// re-parented to ralph-tui rather than to init and can still be found. For the binary:
/// call it once at start.
pub fn adopt_orphans() {
    if nix::sys::prctl::set_child_subreaper(true).is_ok() {
        ADOPTING.store(true, Ordering::Relaxed);
    }
}

/// Remembers a supervisor just started (`pid`, which leads its own session) for a command
/// that runs in `dir`.
pub(super) fn started_session(pid: i32, dir: Option<&Path>) {
    let dir = dir
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.to_path_buf()))
        .unwrap_or_default();
    if let Ok(mut sessions) = SESSIONS.lock() {
        sessions.push((pid, dir));
    }
}

/// One line of `/proc/<pid>/stat`, the fields we need.
struct Stat {
    pid: i32,
    live: bool,
    ppid: i32,
    session: i32,
}

fn processes() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after "(comm)": state ppid pgrp session ...
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(state), Some(ppid), Some(session)) = (
            fields.first(),
            fields.get(1).and_then(|p| p.parse().ok()),
            fields.get(3).and_then(|s| s.parse().ok()),
        ) else {
            continue;
        };
        out.push(Stat {
            pid,
            live: !matches!(*state, "Z" | "X" | "x"),
            ppid,
            session,
        });
    }
    out
}

/// The live processes of commands that ran in `dir` (or beneath it, or above it), and any
/// orphan ralph-tui adopted, with what they descend into. Forgets sessions no process is in
/// any more.
pub fn left_running(dir: &Path) -> Vec<Survivor> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let all = processes();
    let occupied: HashSet<i32> = all.iter().map(|p| p.session).collect();
    let (ours, known): (HashSet<i32>, HashSet<i32>) = match SESSIONS.lock() {
        Ok(mut sessions) => {
            sessions.retain(|(sid, _)| occupied.contains(sid));
            let ours = sessions
                .iter()
                .filter(|(_, d)| d.starts_with(&dir) || dir.starts_with(d))
                .map(|(sid, _)| *sid)
                .collect();
            (ours, sessions.iter().map(|(sid, _)| *sid).collect())
        }
        Err(_) => (HashSet::new(), HashSet::new()),
    };
    let me = std::process::id() as i32;
    let my_session = nix::unistd::getsid(None).map_or(-1, |s| s.as_raw());
    let adopting = ADOPTING.load(Ordering::Relaxed);
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in &all {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut queue: Vec<i32> = all
        .iter()
        .filter(|p| {
            ours.contains(&p.session)
                || (adopting
                    && p.ppid == me
                    && p.session != my_session
                    && !known.contains(&p.session))
        })
        .map(|p| p.pid)
        .collect();
    let mut seen: HashSet<i32> = HashSet::new();
    while let Some(pid) = queue.pop() {
        if seen.insert(pid) {
            queue.extend(children.get(&pid).into_iter().flatten());
        }
    }
    if adopting {
        reap_adopted(&all, me, my_session, &known);
    }
    let live: HashSet<i32> = all.iter().filter(|p| p.live).map(|p| p.pid).collect();
    let mut out: Vec<Survivor> = seen
        .into_iter()
        .filter(|pid| live.contains(pid))
        .map(|pid| Survivor {
            pid,
            name: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|n| n.trim().to_string())
                .unwrap_or_default(),
        })
        .collect();
    out.sort_by_key(|s| s.pid);
    out
}

/// Collects the exit status of adopted orphans that have ended (zombies whose parent is
/// ralph-tui only because it is a subreaper), so they do not pile up in the process table.
/// Never one of ralph-tui's own children: those are in its session or a known one.
fn reap_adopted(all: &[Stat], me: i32, my_session: i32, known: &HashSet<i32>) {
    use nix::sys::wait::{waitpid, WaitPidFlag};
    for p in all {
        if !p.live && p.ppid == me && p.session != my_session && !known.contains(&p.session) {
            let _ = waitpid(
                nix::unistd::Pid::from_raw(p.pid),
                Some(WaitPidFlag::WNOHANG),
            );
        }
    }
}

/// The review's refusal while `survivors` run, as one sentence naming them; `None` when none
/// does.
pub fn refusal(survivors: &[Survivor], nothing: &str) -> Option<String> {
    const NAMED: usize = 5;
    if survivors.is_empty() {
        return None;
    }
    let mut named: Vec<String> = survivors
        .iter()
        .take(NAMED)
        .map(|s| format!("{} ({})", s.pid, s.name))
        .collect();
    if survivors.len() > NAMED {
        named.push(format!("{} more", survivors.len() - NAMED));
    }
    let pids: Vec<String> = survivors.iter().map(|s| s.pid.to_string()).collect();
    Some(format!(
        "a process of the run still runs: {}; end it (`kill {}`) and try again. It could \
         change the files while the review writes them, so {nothing}",
        named.join(", "),
        pids.join(" ")
    ))
}
