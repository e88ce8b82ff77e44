//! The sandbox helper's supervisor: the one process that outlives a command's shell and ends
//! everything the command started, wherever it went.
//!
//! The supervisor starts a new session (so the command has no controlling terminal), asks the
//! kernel for SIGTERM when ralph-tui dies (`PR_SET_PDEATHSIG`), and becomes a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`): a process that leaves its process group or session (`setsid`,
//! a double fork) is still its descendant, and an orphan is re-parented to it rather than to
//! init. When the shell exits it writes `exit N` or `signal N` to its stdin (a pipe ralph-tui
//! reads), then stays while background processes live, so they keep running until the round
//! ends. On SIGTERM, SIGINT or SIGHUP (the round ended, the command was cancelled, ralph-tui
//! died) it sweeps: SIGKILL to every process whose parent chain in `/proc` reaches it, reaping
//! as it goes, until it has no child left.
//!
//! The sweep needs descriptors to read `/proc`, so it must not be the command that decides the
//! supervisor's limits: a confined command cannot change another process's limits at all
//! (`prlimit64` only on itself, see [`super::privileges`]), nor signal the supervisor (Landlock
//! scoping). Should `/proc` still be unreadable, the sweep kills the shell's process group.
//!
//! What it cannot do: a process that is SIGKILLed from outside the sandbox leaves its
//! descendants to init (a cgroup would not); ralph-tui only ever sends SIGTERM first.

use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{kill, killpg, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{dup2, getpid, getppid, setsid, Pid};

use super::setup_failure::fail;

/// The environment variable naming the ralph-tui process that started the helper.
pub const PARENT_ENV: &str = "RALPH_TUI_SANDBOX_PARENT";
/// The supervisor's exit code when it was told to stop before the shell ended.
const STOPPED: i32 = 137;

/// What the shell's end looked like, as read from the supervisor's status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellEnd {
    Exited(i32),
    Signalled(i32),
}

/// Parses one status line written by the supervisor.
pub fn parse_status(text: &str) -> Option<ShellEnd> {
    let line = text.lines().next()?;
    if let Some(code) = line.strip_prefix("exit ") {
        return code.trim().parse().ok().map(ShellEnd::Exited);
    }
    line.strip_prefix("signal ")
        .and_then(|s| s.trim().parse().ok())
        .map(ShellEnd::Signalled)
}

/// New session, death signal and subreaper for this (single-threaded) process.
pub fn detach() -> Result<(), String> {
    setsid().map_err(|e| format!("new session: {e}"))?;
    prctl::set_pdeathsig(Signal::SIGTERM).map_err(|e| format!("death signal: {e}"))?;
    prctl::set_child_subreaper(true).map_err(|e| format!("child subreaper: {e}"))?;
    // ralph-tui may have died before the death signal was armed.
    if let Some(parent) = std::env::var(PARENT_ENV)
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
    {
        if getppid().as_raw() != parent {
            return Err("ralph-tui is gone".into());
        }
    }
    Ok(())
}

/// Starts `inner`, reports the shell's end on stdin, and supervises until no descendant is
/// left or a stop signal arrives. Never returns.
pub fn run(mut inner: Command) -> ! {
    let mut signals = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        signals.add(signal);
    }
    // Blocked here and taken with sigwait; the child starts with an empty mask.
    if let Err(e) = signals.thread_block() {
        fail(&format!("cannot block signals: {e}"));
    }
    let shell = match inner.spawn() {
        Ok(child) => Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)),
        Err(e) => fail(&format!("cannot start the command: {e}")),
    };
    // The command's output pipe must close when the command's processes close it.
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        let _ = dup2(null.as_raw_fd(), 1);
        let _ = dup2(null.as_raw_fd(), 2);
    }
    let mut code: Option<i32> = None;
    loop {
        match signals.wait() {
            Ok(Signal::SIGCHLD) | Err(_) => {}
            Ok(_) => {
                sweep(shell);
                std::process::exit(code.unwrap_or(STOPPED));
            }
        }
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, c)) if pid == shell => {
                    code = Some(c);
                    report(&format!("exit {c}\n"));
                }
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == shell => {
                    code = Some(128 + signal as i32);
                    report(&format!("signal {}\n", signal as i32));
                }
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => std::process::exit(code.unwrap_or(STOPPED)),
            }
        }
    }
}

/// Writes the status line to stdin (ralph-tui's pipe) and closes it.
fn report(line: &str) {
    let _ = nix::unistd::write(std::io::stdin(), line.as_bytes());
    if let Ok(null) = std::fs::File::open("/dev/null") {
        use std::os::fd::AsRawFd;
        let _ = dup2(null.as_raw_fd(), 0);
    }
}

/// SIGKILL to every descendant (and the shell's process group, should `/proc` be unreadable),
/// reaping, until this process has no child left.
fn sweep(shell: Pid) {
    let me = getpid();
    let procfs = std::path::Path::new("/proc/self/stat").exists();
    loop {
        let found = if procfs { descendants(me) } else { None };
        match found {
            Some(pids) => {
                for pid in pids {
                    let _ = kill(pid, Signal::SIGKILL);
                }
            }
            None => {
                let _ = killpg(shell, Signal::SIGKILL);
            }
        }
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => return,
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Every live process whose parent chain reaches `root` (read from `/proc`); `None` when
/// `/proc` cannot be listed.
pub fn descendants(root: Pid) -> Option<Vec<Pid>> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after "(comm)": state ppid ...
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        children.entry(ppid).or_default().push(pid);
    }
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut queue = vec![root.as_raw()];
    while let Some(parent) = queue.pop() {
        for &child in children.get(&parent).into_iter().flatten() {
            if seen.insert(child) {
                found.push(Pid::from_raw(child));
                queue.push(child);
            }
        }
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_lines() {
        assert_eq!(parse_status("exit 3\n"), Some(ShellEnd::Exited(3)));
        assert_eq!(parse_status("signal 9\n"), Some(ShellEnd::Signalled(9)));
        assert_eq!(parse_status(""), None);
        assert_eq!(parse_status("exit x"), None);
    }

    #[test]
    fn finds_grandchildren() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let shell = Pid::from_raw(i32::try_from(child.id()).unwrap());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut found = descendants(shell).unwrap();
        while found.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            found = descendants(shell).unwrap();
        }
        for pid in &found {
            let _ = kill(*pid, Signal::SIGKILL);
        }
        let _ = child.wait();
        assert_eq!(found.len(), 1, "{found:?}");
    }
}
