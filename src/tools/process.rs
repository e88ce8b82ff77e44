//! Bounded child processes: the one place a child is spawned, polled against a time limit
//! and a cancel token, and stopped; and the process groups and sandbox supervisors a round's
//! commands started, so nothing outlives the round.
//!
//! A child through the sandbox helper (see [`super::supervisor`]) reports its shell's end on a
//! status pipe and is stopped with SIGTERM (it then kills every descendant, even those that
//! left its process group), and SIGKILL only after a grace period. Any other child runs in its
//! own process group, which is signalled as a whole.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;

use super::sandbox;
use super::supervisor::{parse_status, ShellEnd};

/// How often a running child is checked.
const POLL: Duration = Duration::from_millis(5);
/// How long a supervisor gets to sweep its descendants after SIGTERM.
const SUPERVISOR_GRACE: Duration = Duration::from_secs(3);

/// Remembers the process groups and supervisors a round started; `kill_all` ends them all.
#[derive(Debug, Default)]
pub struct ProcessTracker {
    groups: Mutex<Vec<i32>>,
    supervisors: Mutex<Vec<Child>>,
}

impl ProcessTracker {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn track(&self, pgid: i32) {
        if let Ok(mut groups) = self.groups.lock() {
            groups.push(pgid);
        }
    }

    /// Keeps a sandbox supervisor whose shell has ended (its background jobs live on).
    pub fn supervise(&self, child: Child) {
        match self.supervisors.lock() {
            Ok(mut supervisors) => supervisors.push(child),
            Err(_) => stop_supervisors(vec![child]),
        }
    }

    /// Sends SIGKILL to every tracked group (already-gone groups are fine), stops every
    /// supervisor (SIGTERM, then SIGKILL after a grace period) and forgets them.
    pub fn kill_all(&self) {
        let groups = match self.groups.lock() {
            Ok(mut groups) => std::mem::take(&mut *groups),
            Err(_) => Vec::new(),
        };
        for pgid in groups {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        let supervisors = match self.supervisors.lock() {
            Ok(mut supervisors) => std::mem::take(&mut *supervisors),
            Err(_) => Vec::new(),
        };
        stop_supervisors(supervisors);
    }
}

impl Drop for ProcessTracker {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn pid_of(child: &Child) -> Pid {
    Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX))
}

/// SIGTERM to each supervisor, then waits for them (SIGKILL to those past the grace period).
fn stop_supervisors(mut children: Vec<Child>) {
    for child in &children {
        let _ = kill(pid_of(child), Signal::SIGTERM);
    }
    let deadline = Instant::now() + SUPERVISOR_GRACE;
    for child in &mut children {
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How a child should be stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT (SIGTERM for a sandbox supervisor), then SIGKILL after this grace period.
    Interrupt(Duration),
    /// SIGKILL at once (a sandbox supervisor gets SIGTERM and a short grace to sweep).
    Kill,
}

/// The bounds of one child.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    pub timeout: Duration,
    pub stop: Stop,
    pub cancel: &'a CancellationToken,
}

/// How a bounded child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// `None` when it died by a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub wall: Duration,
}

/// Runs `command` (stdout and stderr already set by the caller; stdin is /dev/null or the
/// supervisor's status pipe) until it ends, `limits.timeout` passes or `limits.cancel` fires.
/// With a `tracker`, what the child leaves running in the background lives until the
/// tracker's `kill_all`; without one, it is killed before this returns.
pub fn run_bounded(
    mut command: Command,
    limits: &Limits<'_>,
    tracker: Option<&ProcessTracker>,
) -> std::io::Result<Finished> {
    let supervised = sandbox::is_supervised(&command);
    let status_rx = wire_stdin(&mut command, supervised)?;
    let started = Instant::now();
    let mut child = command.spawn()?;
    let pid = pid_of(&child);
    if supervised {
        super::survivors::started_session(pid.as_raw(), command.get_current_dir());
    }
    // Drop our copies of the pipes' write ends (held inside `command`), or EOF never comes.
    drop(command);
    if let (false, Some(tracker)) = (supervised, tracker) {
        tracker.track(pid.as_raw());
    }
    let (first, grace) = first_signal(supervised, limits.stop);
    let signal = |signal: Signal| {
        if supervised {
            let _ = kill(pid, signal);
        } else {
            let _ = killpg(pid, signal);
        }
    };
    let mut stopping: Option<Instant> = None;
    let mut timed_out = false;
    let mut cancelled = false;
    let mut exited = false;
    let exit_code = loop {
        if let Some(end) = status_rx.as_ref().and_then(|rx| rx.try_recv().ok()) {
            break shell_code(end);
        }
        if let Some(status) = child.try_wait()? {
            exited = true;
            // A status line written just before the supervisor exited wins.
            let end = status_rx
                .as_ref()
                .and_then(|rx| rx.recv_timeout(Duration::from_millis(50)).ok());
            break end.map_or(status.code(), shell_code);
        }
        let now = Instant::now();
        match stopping {
            None => {
                timed_out = now.duration_since(started) >= limits.timeout;
                cancelled = !timed_out && limits.cancel.is_cancelled();
                if timed_out || cancelled {
                    stopping = Some(now);
                    signal(first);
                }
            }
            Some(since) if now.duration_since(since) >= grace => signal(Signal::SIGKILL),
            Some(_) => {}
        }
        std::thread::sleep(POLL);
    };
    if supervised && !exited {
        match (stopping, tracker) {
            (None, Some(tracker)) => tracker.supervise(child),
            _ => stop_supervisors(vec![child]),
        }
    } else if !supervised && tracker.is_none() {
        // Whatever the child left running in its group goes too.
        let _ = killpg(pid, Signal::SIGKILL);
    }
    Ok(Finished {
        exit_code,
        timed_out,
        cancelled,
        wall: started.elapsed(),
    })
}

/// Sets the child's stdin: a supervised command's is the pipe its supervisor writes the
/// shell's end to (read by the returned receiver); any other reads /dev/null and leads a
/// process group of its own.
fn wire_stdin(
    command: &mut Command,
    supervised: bool,
) -> std::io::Result<Option<mpsc::Receiver<ShellEnd>>> {
    if supervised {
        let (reader, writer) = std::io::pipe()?;
        command.stdin(Stdio::from(writer));
        Ok(Some(read_status(reader)))
    } else {
        command.stdin(Stdio::null()).process_group(0);
        Ok(None)
    }
}

/// The signal a stop starts with, and the grace before SIGKILL follows: a supervisor gets
/// SIGTERM (and a short grace to sweep even on `Kill`), a process group SIGINT or SIGKILL.
fn first_signal(supervised: bool, stop: Stop) -> (Signal, Duration) {
    match (supervised, stop) {
        (true, Stop::Interrupt(grace)) => (Signal::SIGTERM, grace),
        (true, Stop::Kill) => (Signal::SIGTERM, SUPERVISOR_GRACE),
        (false, Stop::Interrupt(grace)) => (Signal::SIGINT, grace),
        (false, Stop::Kill) => (Signal::SIGKILL, Duration::ZERO),
    }
}

fn shell_code(end: ShellEnd) -> Option<i32> {
    match end {
        ShellEnd::Exited(code) => Some(code),
        ShellEnd::Signalled(_) => None,
    }
}

/// Reads the supervisor's status line on a thread; the channel gets it once, if ever.
fn read_status(mut reader: std::io::PipeReader) -> mpsc::Receiver<ShellEnd> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = reader.read_to_string(&mut text);
        if let Some(end) = parse_status(&text) {
            let _ = tx.send(end);
        }
    });
    rx
}

/// What a finished command left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// `None` when it was killed (timeout, cancel) or died by a signal.
    pub exit_code: Option<i32>,
    /// stdout and stderr interleaved, bounded (head and tail kept, the middle elided).
    pub output: String,
    pub timed_out: bool,
    pub cancelled: bool,
}

/// Keeps the first and last `half` bytes of a stream.
#[derive(Debug, Default)]
struct Bounded {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: usize,
    half: usize,
}

impl Bounded {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.head.len() < self.half {
                self.head.push(b);
            } else {
                self.tail.push_back(b);
                if self.tail.len() > self.half {
                    self.tail.pop_front();
                    self.dropped += 1;
                }
            }
        }
    }

    fn text(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            out.push_str(&format!("\n[… {} bytes elided …]\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// Runs `command` bounded (see [`run_bounded`]) with stdout+stderr captured into one bounded
/// buffer, killing it and everything it started on timeout or cancel. With a tracker, what it
/// leaves in the background dies with the round.
pub fn run_captured(
    mut command: Command,
    timeout: Duration,
    cancel: &CancellationToken,
    output_cap: usize,
    tracker: Option<&ProcessTracker>,
) -> std::io::Result<Captured> {
    let (mut reader, writer) = std::io::pipe()?;
    command.stdout(writer.try_clone()?).stderr(writer);

    let buffer = Arc::new(Mutex::new(Bounded {
        half: output_cap / 2,
        ..Bounded::default()
    }));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let sink = Arc::clone(&buffer);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match reader.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Ok(mut b) = sink.lock() {
                        b.push(&chunk[..n]);
                    }
                }
            }
        }
        let _ = done_tx.send(());
    });

    let limits = Limits {
        timeout,
        stop: Stop::Kill,
        cancel,
    };
    let finished = run_bounded(command, &limits, tracker)?;
    // Background children may hold the pipe open; take what arrived shortly after exit.
    let _ = done_rx.recv_timeout(Duration::from_millis(200));
    let output = buffer.lock().map(|b| b.text()).unwrap_or_default();
    let stopped = finished.timed_out || finished.cancelled;
    Ok(Captured {
        exit_code: finished.exit_code.filter(|_| !stopped),
        output,
        timed_out: finished.timed_out,
        cancelled: finished.cancelled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn captures_both_streams_and_the_exit_code() {
        let cancel = CancellationToken::new();
        let out = run_captured(
            sh("echo out; echo err >&2; exit 3"),
            Duration::from_secs(10),
            &cancel,
            1024,
            None,
        )
        .unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert!(out.output.contains("out") && out.output.contains("err"));
    }

    #[test]
    fn bounds_output_keeping_head_and_tail() {
        let cancel = CancellationToken::new();
        let out = run_captured(
            sh("echo START; seq 1 100000; echo END"),
            Duration::from_secs(10),
            &cancel,
            200,
            None,
        )
        .unwrap();
        assert!(out.output.starts_with("START"));
        assert!(out.output.trim_end().ends_with("END"));
        assert!(out.output.contains("bytes elided"));
    }

    #[test]
    fn timeout_kills_the_group() {
        let cancel = CancellationToken::new();
        let out = run_captured(
            sh("sleep 30"),
            Duration::from_millis(100),
            &cancel,
            1024,
            None,
        )
        .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
    }
}
