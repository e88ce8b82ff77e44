//! `--verify CMD`: ralph-tui's own check after a worker-reported completion.
//!
//! The command usually runs code the worker wrote (`make test` runs its Makefile), so it runs
//! exactly as the worker's commands do: through the sandbox helper under the run's sandbox
//! mode and network setting (`.git` read-only, writes only in the workspace and a scratch dir
//! of its own), with no terminal and no secret in its environment, bounded in time, and every
//! process it started is killed when it ends. Its output is masked like a tool's. It never
//! changes the worker's status: the result sits beside the claim for the person reviewing.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::protocol::event::Verification;
use crate::tools::ToolPolicy;

/// How long a verification may run.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(600);
const TAIL_BYTES: usize = 4096;

/// Runs `command` in `workspace` under `policy`'s sandbox; `run_id` names its scratch dir.
pub fn run(
    command: &str,
    workspace: &Path,
    policy: &ToolPolicy,
    run_id: &str,
    cancel: &CancellationToken,
) -> Verification {
    // No tracker: whatever it leaves running is killed before this returns.
    let (result, _) = super::check::run_confined(
        command,
        workspace,
        policy,
        (run_id, "verify"),
        (VERIFY_TIMEOUT, TAIL_BYTES * 2),
        cancel,
    );
    match result {
        Ok(captured) => {
            let output = policy.secrets.mask(&captured.output);
            let mut tail = crate::text::tail_at_char_boundary(&output, TAIL_BYTES).to_string();
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
