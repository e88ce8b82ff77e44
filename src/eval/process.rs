//! Running `ralph-tui` and the verify scripts as child processes, bounded in time.
//!
//! Each child's stdout and stderr go to files (a run's event stream can be large); the
//! spawning, polling and stopping is the shared bounded-child helper
//! ([`crate::tools::process::run_bounded`]): a `ralph-tui` run is interrupted first (SIGINT,
//! so it cancels cleanly and still prints `run_finished`), then killed with its group after a
//! grace period.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::tools::process::{run_bounded, Limits};
pub use crate::tools::process::{Finished, Stop};

/// Runs `command` with stdout and stderr written to the given files (the same file for both is
/// fine) until it exits, `timeout` passes or `cancel` fires. Whatever it leaves running in its
/// process group is killed before this returns.
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
    command.stdout(Stdio::from(out)).stderr(Stdio::from(err));
    let limits = Limits {
        timeout,
        stop,
        cancel,
    };
    run_bounded(command, &limits, None)
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
