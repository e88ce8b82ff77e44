//! `--verify CMD`: ralph-tui's own check after a worker-reported completion.
//!
//! It runs in the workspace in its own process group with a time bound and never changes the
//! worker's status: the result sits beside the claim for the person reviewing.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::protocol::event::Verification;
use crate::tools::process::run_captured;

/// How long a verification may run.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(600);
const TAIL_BYTES: usize = 4096;

pub fn run(command: &str, workspace: &Path, cancel: &CancellationToken) -> Verification {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(workspace);
    match run_captured(cmd, VERIFY_TIMEOUT, cancel, TAIL_BYTES * 2, None) {
        Ok(captured) => {
            let mut tail =
                crate::text::tail_at_char_boundary(&captured.output, TAIL_BYTES).to_string();
            if captured.timed_out {
                tail.push_str(&format!(
                    "\n[verification timed out after {}s]",
                    VERIFY_TIMEOUT.as_secs()
                ));
            }
            Verification {
                command: command.to_string(),
                exit_code: captured.exit_code,
                passed: captured.exit_code == Some(0),
                output_tail: tail,
            }
        }
        Err(e) => Verification {
            command: command.to_string(),
            exit_code: None,
            passed: false,
            output_tail: format!("could not start the verification: {e}"),
        },
    }
}
