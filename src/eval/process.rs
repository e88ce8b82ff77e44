//! Running `ralph-tui` and the verify scripts as child processes, bounded in time.
//!
//! Each child gets its own process group, its stdout and stderr go to files (a run's event
//! stream can be large), and the harness polls it so a timeout or a cancel can stop it: a
//! `ralph-tui` run is interrupted first (SIGINT, so it cancels cleanly and still prints
//! `run_finished`), then killed with its group after a grace period.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;

/// How often a running child is checked.
const POLL: Duration = Duration::from_millis(20);

/// How a child should be stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT, then SIGKILL to the group after this grace period.
    Interrupt(Duration),
    /// SIGKILL to the group at once.
    Kill,
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// `None` when it died by a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub wall: Duration,
}

/// Runs `command` with stdout and stderr written to the given files (the same file for both is
/// fine) until it exits, `timeout` passes or `cancel` fires.
pub fn run(
    mut command: Command,
    stdout: &Path,
    stderr: &Path,
    timeout: Duration,
    stop: Stop,
    cancel: &CancellationToken,
) -> std::io::Result<Finished> {
    let out = File::create(stdout)?;
    let err = if stderr == stdout {
        out.try_clone()?
    } else {
        File::create(stderr)?
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let mut stopping: Option<Instant> = None;
    let mut timed_out = false;
    let mut cancelled = false;
    let status: ExitStatus = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let now = Instant::now();
        if stopping.is_none() {
            timed_out = now.duration_since(started) >= timeout;
            cancelled = !timed_out && cancel.is_cancelled();
            if timed_out || cancelled {
                stopping = Some(now);
                let signal = match stop {
                    Stop::Interrupt(_) => Signal::SIGINT,
                    Stop::Kill => Signal::SIGKILL,
                };
                let _ = killpg(pgid, signal);
            }
        } else if let (Some(since), Stop::Interrupt(grace)) = (stopping, stop) {
            if now.duration_since(since) >= grace {
                let _ = killpg(pgid, Signal::SIGKILL);
            }
        }
        std::thread::sleep(POLL);
    };
    // Whatever the child left running in its group goes too.
    let _ = killpg(pgid, Signal::SIGKILL);
    Ok(Finished {
        exit_code: status.code(),
        timed_out,
        cancelled,
        wall: started.elapsed(),
    })
}

/// The last `max` bytes of a file (cut at a character boundary), or "" when unreadable.
pub fn tail(path: &Path, max: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if file.seek(SeekFrom::Start(len.saturating_sub(max))).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    text.trim_start_matches('\u{fffd}').trim().to_string()
}
