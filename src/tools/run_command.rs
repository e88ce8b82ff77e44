//! `run_command`: a shell command in the workspace, under the sandbox and approval policy.
//!
//! The command runs as `sh -c` with the workspace as its working directory, with stdin from
//! /dev/null and in a session of its own with no terminal, under the sandbox supervisor that
//! the round's `ProcessTracker` remembers (also with `--sandbox off`, which only lifts the
//! confinement): anything it leaves running in the background, even after `setsid` or a
//! double fork, is killed at the end of the round. It is bounded in time (the call's
//! `timeout_s`, else the run's default) and in output (head and tail kept). The exit code is
//! always reported; a non-zero exit, a timeout or a refusal comes back as a tool error.
//! It also names the per-round scratch directories and cleans those of dead runs.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::approval::authorize_in;
use super::args;
use super::process::run_captured;
use super::sandbox::{self, FAILURE_PREFIX, SETUP_FAILED};
use super::{Tool, ToolContext, ToolError, ToolSpec};
use crate::protocol::tool::RUN_COMMAND;

/// Longest timeout a call may ask for, in seconds.
pub const MAX_TIMEOUT_S: u64 = 3600;
/// Bytes of the output budget kept for the status line.
const STATUS_ROOM: usize = 256;

#[derive(Debug, Clone, Copy, Default)]
pub struct RunCommand;

impl Tool for RunCommand {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: RUN_COMMAND.into(),
            description: "Run a shell command (sh -c) in the workspace root and get its exit code and combined stdout/stderr (long output keeps its start and end). Commands are sandboxed: they may write only inside the workspace (its .git is read-only, so git commands that write the repository fail) and $TMPDIR, have no terminal, cannot create Unix sockets, and have no network unless the run allows it. Background processes are killed when the round ends. `timeout_s` overrides the default time limit.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "minLength": 1, "description": "shell command line"},
                    "timeout_s": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_S, "description": "time limit in seconds"}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let command = args::string(arguments, "command")?;
        if command.trim().is_empty() {
            return Err(ToolError::new("the command is empty"));
        }
        let timeout = args::opt_u64(arguments, "timeout_s")?
            .map_or(ctx.policy.command_timeout, |s| {
                Duration::from_secs(s.clamp(1, MAX_TIMEOUT_S))
            });
        authorize_in(ctx, command.to_string())?;
        std::fs::create_dir_all(ctx.round_tmp).map_err(|e| {
            ToolError::new(format!(
                "cannot prepare the command's scratch directory: {e}"
            ))
        })?;
        let cmd = sandbox::command(ctx.policy, ctx.root, ctx.round_tmp, command);
        let cap = ctx.policy.output_cap.saturating_sub(STATUS_ROOM).max(1024);
        let captured = run_captured(cmd, timeout, ctx.cancel, cap, Some(ctx.processes))
            .map_err(|e| ToolError::new(format!("cannot start the command: {e}")))?;
        let relative = workspace_relative(&captured.output, ctx.root);
        let output = relative.trim_end();
        let shown = if output.is_empty() {
            "(no output)".to_string()
        } else {
            output.to_string()
        };
        if captured.cancelled {
            return Err(ToolError::new(format!(
                "the command was cancelled and killed\n{shown}"
            )));
        }
        if captured.timed_out {
            return Err(ToolError::new(format!(
                "timed out after {}s; the command and everything it started were killed (pass a larger timeout_s if it needs longer)\n{shown}",
                timeout.as_secs()
            )));
        }
        match captured.exit_code {
            Some(SETUP_FAILED) if output.trim_start().starts_with(FAILURE_PREFIX) => {
                let reason: Vec<&str> = output
                    .lines()
                    .filter(|l| l.starts_with(FAILURE_PREFIX))
                    .collect();
                Err(ToolError::new(format!(
                    "the command was not run: {}",
                    reason.join("; ")
                )))
            }
            Some(0) => Ok(format!("exit code 0\n{shown}")),
            Some(code) => Err(ToolError::new(format!("exit code {code}\n{shown}"))),
            None => Err(ToolError::new(format!(
                "the command was killed by a signal\n{shown}"
            ))),
        }
    }
}

/// `output` with the workspace's own path made relative: `ROOT/tests/test_a.py` reads
/// `tests/test_a.py` and `ROOT` alone reads `.`, for the path as given and as resolved. The
/// worker's tools take paths relative to the workspace, and the same run in another
/// directory (each eval run's workspace is a new temporary one) then reads the same: the
/// tracebacks in a check's output made two runs of one seed and build differ.
pub(crate) fn workspace_relative(output: &str, root: &Path) -> String {
    let mut roots: Vec<String> = vec![root.to_string_lossy().into_owned()];
    if let Ok(real) = root.canonicalize() {
        roots.push(real.to_string_lossy().into_owned());
    }
    // The longer first, so that one path inside the other is replaced whole.
    roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
    roots.dedup();
    let mut out = output.to_string();
    for root in roots.iter().map(|r| r.trim_end_matches('/')) {
        if root.is_empty() || !out.contains(root) {
            continue;
        }
        out = replace_root(&out, root);
    }
    out
}

/// `text` with `root/` taken off the paths under it and `root` alone, as a whole path,
/// written `.`; a longer name that starts with it (`root2/x`) is left.
fn replace_root(text: &str, root: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(root) {
        out.push_str(&rest[..at]);
        let after = &rest[at + root.len()..];
        let before_ok = !out
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || "_-.".contains(c));
        match after.chars().next() {
            Some('/') if before_ok => rest = &after[1..],
            next if before_ok
                && next.is_none_or(|c| !(c.is_alphanumeric() || "_-.".contains(c))) =>
            {
                out.push('.');
                rest = after;
            }
            _ => {
                out.push_str(root);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// How the round scratch directories in the system temp dir start; the owning ralph-tui's pid
/// follows, so a dead run's directories are recognisable.
const ROUND_DIR_PREFIX: &str = "ralph-tui-pid";

/// The scratch directory of `round` of run `run_id` in this process.
pub fn round_tmp_dir(run_id: &str, round: u32) -> PathBuf {
    scratch_dir(run_id, &format!("round-{round:02}"))
}

/// A scratch directory of run `run_id` in this process for `what` (a round, the verification,
/// the hooks); cleaned like a round's when the process dies before removing it.
pub fn scratch_dir(run_id: &str, what: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "{ROUND_DIR_PREFIX}{}-{run_id}-{what}",
        std::process::id()
    ))
}

/// Removes the round scratch directories left by ralph-tui processes that are gone (killed
/// before their round ended). Only this user's directories are touched, and a name whose pid
/// is alive (even if reused by another program) is left alone. Returns how many went.
pub fn clean_stale_round_dirs() -> usize {
    clean_stale_round_dirs_in(&std::env::temp_dir())
}

fn clean_stale_round_dirs_in(tmp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return 0;
    };
    let me = nix::unistd::getuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(ROUND_DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let gone = matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if meta.is_dir()
            && meta.uid() == me
            && gone
            && pid > 0
            && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_path_reads_relative_in_a_commands_output() {
        let root = Path::new("/tmp/eval-1/ws");
        let trace = "  File \"/tmp/eval-1/ws/test_slug.py\", line 9\nin /tmp/eval-1/ws: ok\ncd /tmp/eval-1/ws\n";
        assert_eq!(
            workspace_relative(trace, root),
            "  File \"test_slug.py\", line 9\nin .: ok\ncd .\n"
        );
        // Another directory that starts with the same name, or holds it deeper, is left.
        for other in [
            "/tmp/eval-1/ws2/a.py",
            "/home/u/tmp/eval-1/ws/a.py",
            "/tmp/eval-1/wsx",
        ] {
            assert_eq!(workspace_relative(other, root), other);
        }
        // The resolved path too (a workspace reached through a link).
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let real = real.canonicalize().unwrap();
        let out = format!("{}/a.py and {}/b.py", real.display(), link.display());
        assert_eq!(workspace_relative(&out, &link), "a.py and b.py");
    }

    #[test]
    fn stale_round_dirs_of_dead_runs_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        // A pid that cannot be alive (beyond the kernel's maximum).
        let dead = tmp
            .path()
            .join(format!("{ROUND_DIR_PREFIX}99999999-run-round-01"));
        std::fs::create_dir_all(dead.join("sub")).unwrap();
        let mine = tmp.path().join(format!(
            "{ROUND_DIR_PREFIX}{}-run-round-01",
            std::process::id()
        ));
        std::fs::create_dir(&mine).unwrap();
        let other = tmp.path().join("ralph-tui-unrelated");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(clean_stale_round_dirs_in(tmp.path()), 1);
        assert!(!dead.exists());
        assert!(mine.exists() && other.exists());
        let name = round_tmp_dir("abc", 3);
        let name = name.file_name().unwrap().to_string_lossy();
        assert!(name.starts_with(ROUND_DIR_PREFIX) && name.ends_with("-abc-round-03"));
    }
}
