//! Process groups started by a round's commands, so nothing outlives the round.

use std::sync::Mutex;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Remembers the process groups a round started; `kill_all` ends every one of them.
#[derive(Debug, Default)]
pub struct ProcessTracker {
    groups: Mutex<Vec<i32>>,
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

    /// Sends SIGKILL to every tracked group (already-gone groups are fine) and forgets them.
    pub fn kill_all(&self) {
        let groups = match self.groups.lock() {
            Ok(mut groups) => std::mem::take(&mut *groups),
            Err(_) => return,
        };
        for pgid in groups {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

impl Drop for ProcessTracker {
    fn drop(&mut self) {
        self.kill_all();
    }
}

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

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

/// Runs `command` in its own process group with stdout+stderr captured into one bounded
/// buffer, killing the group on timeout or cancel. The group is also tracked, so anything it
/// leaves in the background dies with the round.
pub fn run_captured(
    mut command: Command,
    timeout: Duration,
    cancel: &CancellationToken,
    output_cap: usize,
    tracker: Option<&ProcessTracker>,
) -> std::io::Result<Captured> {
    let (mut reader, writer) = std::io::pipe()?;
    command
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0);
    let mut child = command.spawn()?;
    // Drop our copies of the write end (held inside `command`), or EOF never comes.
    drop(command);
    let pgid = i32::try_from(child.id()).unwrap_or(0);
    if let Some(tracker) = tracker {
        tracker.track(pgid);
    }

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

    let started = Instant::now();
    let mut timed_out = false;
    let mut cancelled = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if cancel.is_cancelled() {
            cancelled = true;
        } else if started.elapsed() >= timeout {
            timed_out = true;
        }
        if cancelled || timed_out {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Background children may hold the pipe open; take what arrived shortly after exit.
    let _ = done_rx.recv_timeout(Duration::from_millis(200));
    let output = buffer.lock().map(|b| b.text()).unwrap_or_default();
    Ok(Captured {
        exit_code: status.and_then(|s| s.code()),
        output,
        timed_out,
        cancelled,
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
