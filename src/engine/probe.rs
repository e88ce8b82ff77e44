//! The commands the objective names, run at a round's start for its observation.
//!
//! An objective often says what a command must print (`sh greet.sh Ann` must print exactly
//! "Hello, Ann!"). Where the repository has a test suite, the check says what is still wrong;
//! where it has none, these commands are the only thing outside the model that can. The
//! engine runs each one the objective quotes in backticks that runs a file of the workspace
//! (`sh greet.sh Ann`, `python3 tool.py --dry-run`, `./build.sh`), as the check runs: in the
//! worker's sandbox (with the workspace read-only), under its limits, for at most 15 s,
//! whatever it starts killed when it ends. `--observe off` runs none. The
//! observation shows what each printed. They are the person's commands, never the worker's:
//! nothing the worker writes adds one. Seed 1, 04: round 2 wrote a `greet.sh` that printed
//! both greetings right, and round 3, starting fresh, rewrote it with single quotes that
//! printed `Hello, $1!`.

use std::path::{Component, Path};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::chat::listing::fence_for;
use crate::protocol::policy::SandboxMode;
use crate::tools::ToolPolicy;

/// Most commands run.
const MAX_COMMANDS: usize = 3;
/// Most bytes of a command as the objective writes it.
const MAX_COMMAND_BYTES: usize = 200;
/// The longest one command may run (less when the run's command limit is lower).
const MAX_SECONDS: u64 = 15;
/// Most bytes of a command's output shown.
const OUTPUT_BYTES: usize = 1024;
/// Programs that run the file named after them.
const RUNNERS: [&str; 8] = [
    "sh", "bash", "python3", "python", "node", "ruby", "perl", "php",
];
/// Characters that make a command more than one program run with its words.
const SHELL_MARKS: [char; 9] = [';', '|', '&', '<', '>', '$', '`', '\\', '\n'];

/// One command's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub command: String,
    pub exit_code: Option<i32>,
    /// Why it has no exit code, or what else to know (`timed out after 15 s`).
    pub note: String,
    pub output: String,
}

/// The commands `objective` quotes in backticks that run a file of the workspace at `root`
/// (a runner and a file, or `./file`), at most [`MAX_COMMANDS`], each once, leaving out the
/// check (`check`), which runs anyway.
pub fn commands(objective: &str, root: &Path, check: Option<&str>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let parts: Vec<&str> = objective.split('`').collect();
    // A quoted span has a part after it: the last part of an unclosed quote has none.
    let quoted = parts.len().saturating_sub(1);
    for span in parts[..quoted].iter().skip(1).step_by(2) {
        let command = span.trim();
        let fresh = !found.iter().any(|c| c == command) && Some(command) != check;
        if fresh && runs_a_file(command, root) {
            found.push(command.to_string());
            if found.len() == MAX_COMMANDS {
                break;
            }
        }
    }
    found
}

/// Whether `command` is one program run on a regular file of the workspace: `RUNNER FILE
/// [ARGS]` or `./FILE [ARGS]`, short, with no shell operator in it.
fn runs_a_file(command: &str, root: &Path) -> bool {
    if command.is_empty() || command.len() > MAX_COMMAND_BYTES || command.contains(SHELL_MARKS) {
        return false;
    }
    let mut words = command.split_whitespace();
    let file = match words.next() {
        Some(first) if RUNNERS.contains(&first) => words.next(),
        Some(first) if first.starts_with("./") => Some(first),
        _ => None,
    };
    file.is_some_and(|file| is_workspace_file(root, file))
}

/// Whether `file` names a regular file beneath `root` (relative, no `..`, not a link).
fn is_workspace_file(root: &Path, file: &str) -> bool {
    let path = Path::new(file);
    let inside = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    inside && std::fs::symlink_metadata(root.join(path)).is_ok_and(|m| m.file_type().is_file())
}

/// Runs each of `commands` in `workspace` as round `round` of run `run_id` does its check,
/// with the workspace read-only where the run's sandbox would let them write it.
pub fn run(
    commands: &[String],
    workspace: &Path,
    policy: &ToolPolicy,
    (run_id, round): (&str, u32),
    cancel: &CancellationToken,
) -> Vec<Ran> {
    // They look, they do not change: the workspace is read-only to them.
    let mut policy = policy.clone();
    if policy.sandbox == SandboxMode::WorkspaceWrite {
        policy.sandbox = SandboxMode::ReadOnly;
    }
    let policy = &policy;
    let timeout = policy.command_timeout.min(Duration::from_secs(MAX_SECONDS));
    commands
        .iter()
        .enumerate()
        .map(|(i, command)| {
            let (result, _) = super::check::run_confined(
                command,
                workspace,
                policy,
                (run_id, &format!("probe-{round:02}-{i}")),
                (timeout, OUTPUT_BYTES * 4),
                cancel,
            );
            match result {
                Ok(captured) => {
                    let output =
                        policy
                            .secrets
                            .mask(&crate::tools::run_command::workspace_relative(
                                &captured.output,
                                workspace,
                            ));
                    let note = if captured.timed_out {
                        format!("stopped after {} s", timeout.as_secs())
                    } else {
                        String::new()
                    };
                    Ran {
                        command: command.clone(),
                        exit_code: captured.exit_code,
                        note,
                        output: super::check::failures_first(&output, OUTPUT_BYTES),
                    }
                }
                Err(e) => Ran {
                    command: command.clone(),
                    exit_code: None,
                    note: format!("could not start: {e}"),
                    output: String::new(),
                },
            }
        })
        .collect()
}

/// The observation's section on `ran`: what each command printed, verbatim (empty when none
/// ran).
pub fn describe(ran: &[Ran]) -> String {
    if ran.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\nWhat the commands the objective names print now (run by ralph-tui at this round's start; run them yourself after a change):\n",
    );
    for run in ran {
        let exit = run
            .exit_code
            .map_or_else(|| "no exit code".to_string(), |c| format!("exit code {c}"));
        let note = if run.note.is_empty() {
            String::new()
        } else {
            format!(", {}", run.note)
        };
        text.push_str(&format!(
            "`{}` ({exit}{note}):\n",
            crate::text::sanitize_line(&run.command)
        ));
        let output = run.output.trim_end();
        if output.is_empty() {
            text.push_str("(no output)\n");
        } else {
            let fence = fence_for([output]);
            text.push_str(&format!("{fence}\n{output}\n{fence}\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "echo hi\n").unwrap();
        }
        dir
    }

    #[test]
    fn only_runs_of_the_workspace_s_own_files_are_taken() {
        let dir = workspace(&["greet.sh", "tools/gen.py", "run.sh"]);
        let objective = "Fix greet.sh: `sh greet.sh Ann` must print exactly \"Hello, Ann!\" and `sh greet.sh` with no argument must print exactly \"Hello, world!\". Then `python3 tools/gen.py --all`, `./run.sh`, and `sh greet.sh Ann` again.";
        assert_eq!(
            commands(objective, dir.path(), None),
            [
                "sh greet.sh Ann",
                "sh greet.sh",
                "python3 tools/gen.py --all"
            ]
        );
        for (objective, why) in [
            ("`python3 -m unittest` must pass", "a module, not a file"),
            ("`cargo test` must pass", "not a runner of a file"),
            ("`sh missing.sh`", "no such file"),
            ("`sh greet.sh; rm -rf x`", "more than one program"),
            ("`sh greet.sh > out`", "a redirection"),
            ("`sh ../greet.sh`", "outside the workspace"),
            ("`sh /etc/profile`", "outside the workspace"),
            ("`sh tools`", "a directory"),
            ("`greet.sh` and `Hello, Ann!`", "a file name or a string"),
            ("an unclosed `sh greet.sh", "no closing backtick"),
        ] {
            assert_eq!(
                commands(objective, dir.path(), None),
                Vec::<String>::new(),
                "{why}"
            );
        }
        // The check runs anyway.
        assert_eq!(
            commands("`./run.sh` must pass", dir.path(), Some("./run.sh")),
            Vec::<String>::new()
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_not_a_workspace_file() {
        let dir = workspace(&["real.sh"]);
        std::os::unix::fs::symlink(dir.path().join("real.sh"), dir.path().join("link.sh")).unwrap();
        assert_eq!(
            commands("`sh link.sh` and `sh real.sh`", dir.path(), None),
            ["sh real.sh"]
        );
    }

    #[test]
    fn what_each_printed_is_shown_verbatim() {
        let ran = [
            Ran {
                command: "sh greet.sh Ann".into(),
                exit_code: Some(0),
                note: String::new(),
                output: "Hello, $1!\n".into(),
            },
            Ran {
                command: "sh greet.sh".into(),
                exit_code: None,
                note: "stopped after 15 s".into(),
                output: String::new(),
            },
        ];
        let text = describe(&ran);
        assert!(
            text.contains("`sh greet.sh Ann` (exit code 0):\n```\nHello, $1!\n```\n"),
            "{text}"
        );
        assert!(
            text.contains("`sh greet.sh` (no exit code, stopped after 15 s):\n(no output)\n"),
            "{text}"
        );
        assert_eq!(describe(&[]), "");
    }
}
