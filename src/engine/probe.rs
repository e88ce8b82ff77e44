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

/// Most bytes of what the objective says a command must print.
const MAX_EXPECTED_BYTES: usize = 200;
/// Words that say what a command prints, before the quoted text.
const PRINT_WORDS: [&str; 6] = ["print", "prints", "output", "outputs", "show", "shows"];
/// Words between those and the quoted text that ask for the whole output.
const EXACT_WORDS: [&str; 3] = ["exactly", "only", "just"];

/// A command the objective names, and what it says the command must print, when it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub command: String,
    pub expected: Option<Expected>,
}

/// What the objective says a command must print: `text` as the whole output (`exactly`,
/// trailing newlines aside, as `$(…)` reads it), or somewhere in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub text: String,
    pub exactly: bool,
}

impl Expected {
    /// Whether `output` is what the objective asks for.
    pub fn met_by(&self, output: &str) -> bool {
        if self.exactly {
            output.trim_end_matches(['\n', '\r']) == self.text
        } else {
            output.contains(&self.text)
        }
    }

    /// How the worker is told what the objective asks for: `exactly "Hello, Ann!"`.
    fn words(&self) -> String {
        let text = crate::text::sanitize_line(&self.text);
        if self.exactly {
            format!("exactly \"{text}\"")
        } else {
            format!("\"{text}\" in its output")
        }
    }
}

/// One command's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub command: String,
    pub exit_code: Option<i32>,
    /// Why it has no exit code, or what else to know (`timed out after 15 s`).
    pub note: String,
    pub output: String,
    /// What the objective says it must print, and whether it did (`None`: it says nothing).
    pub expected: Option<(Expected, bool)>,
}

/// The commands `objective` quotes in backticks that run a file of the workspace at `root`
/// (a runner and a file, or `./file`), at most [`MAX_COMMANDS`], each once, leaving out the
/// check (`check`), which runs anyway; each with what the objective says it must print
/// (`` `sh greet.sh Ann` must print exactly "Hello, Ann!" ``), where it says so right after it.
pub fn commands(objective: &str, root: &Path, check: Option<&str>) -> Vec<Probe> {
    let mut found: Vec<Probe> = Vec::new();
    // The backticks' offsets: each quoted span lies between an opening one and the next, and
    // an unclosed quote has none after it.
    let ticks: Vec<usize> = objective.match_indices('`').map(|(at, _)| at).collect();
    for pair in ticks.chunks_exact(2) {
        let (open, close) = (pair[0], pair[1]);
        let command = objective[open + 1..close].trim();
        let fresh = !found.iter().any(|p| p.command == command) && Some(command) != check;
        if fresh && runs_a_file(command, root) {
            found.push(Probe {
                command: command.to_string(),
                expected: expectation(&objective[close + 1..]),
            });
            if found.len() == MAX_COMMANDS {
                break;
            }
        }
    }
    found
}

/// What the text right after a quoted command (`after`) says it must print: a word such as
/// "print" or "output" in the same clause, then at most "exactly" (or "only", "just"), then
/// the text in double quotes (straight or curly) or backticks. `None` when the clause ends,
/// or another word comes, before a quote.
fn expectation(after: &str) -> Option<Expected> {
    let open = after.find(['"', '\u{201c}', '`', '.', ';', '\n'])?;
    let quote = after[open..].chars().next()?;
    let close = match quote {
        '"' => '"',
        '\u{201c}' => '\u{201d}',
        '`' => '`',
        _ => return None,
    };
    let words: Vec<String> = after[..open]
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let said = words
        .iter()
        .rposition(|w| PRINT_WORDS.contains(&w.as_str()))?;
    let between = &words[said + 1..];
    if !between
        .iter()
        .all(|w| EXACT_WORDS.contains(&w.as_str()) || w == "out")
    {
        return None;
    }
    let rest = &after[open + quote.len_utf8()..];
    let text = &rest[..rest.find(close)?];
    let plain = !text.is_empty() && text.len() <= MAX_EXPECTED_BYTES && !text.contains('\n');
    plain.then(|| Expected {
        text: text.to_string(),
        exactly: between.iter().any(|w| w != "out"),
    })
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
    commands: &[Probe],
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
        .map(|(i, probe)| {
            let command = &probe.command;
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
                    let expected = probe.expected.clone().map(|expected| {
                        let met = !captured.timed_out && expected.met_by(&output);
                        (expected, met)
                    });
                    Ran {
                        command: command.clone(),
                        exit_code: captured.exit_code,
                        note,
                        output: super::check::failures_first(&output, OUTPUT_BYTES),
                        expected,
                    }
                }
                Err(e) => Ran {
                    command: command.clone(),
                    exit_code: None,
                    note: format!("could not start: {e}"),
                    output: String::new(),
                    expected: probe.expected.clone().map(|expected| (expected, false)),
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
        if let Some((expected, met)) = &run.expected {
            let verdict = if *met {
                "it does.".to_string()
            } else {
                format!("{}: NOT MET yet.", printed(run))
            };
            text.push_str(&format!(
                "The objective says it must print {}; {verdict}\n",
                expected.words()
            ));
        }
    }
    text
}

/// What `run` printed, in the worker's words: `it prints "Hello, Ann"`, or for more than one
/// line how many and the first.
fn printed(run: &Ran) -> String {
    let output = run.output.trim_end_matches(['\n', '\r']);
    let first = crate::chat::scan::clip(output.lines().next().unwrap_or(""), MAX_EXPECTED_BYTES);
    let first = crate::text::sanitize_line(&first);
    match output.lines().count() {
        0 => "it prints nothing".to_string(),
        1 => format!("it prints \"{first}\""),
        lines => format!("it prints {lines} lines, the first \"{first}\""),
    }
}

/// Why a `complete` claim is refused while a command the objective names prints other than
/// the objective says it must (`ran`: those commands run on the claim); `None` when each
/// one it says anything of is met.
pub fn refusal(ran: &[Ran]) -> Option<String> {
    let unmet: Vec<String> = ran
        .iter()
        .filter_map(|run| {
            let Some((expected, false)) = &run.expected else {
                return None;
            };
            Some(format!(
                "`{}` must print {}, and {} now",
                crate::text::sanitize_line(&run.command),
                expected.words(),
                printed(run)
            ))
        })
        .collect();
    (!unmet.is_empty()).then(|| {
        format!(
            "the objective says {} (run by ralph-tui on this claim), so it is not met. Fix the code so that it prints what the objective asks for and run it again, or report status \"continue\" with next_steps",
            unmet.join("; and ")
        )
    })
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

    fn names(probes: &[Probe]) -> Vec<&str> {
        probes.iter().map(|p| p.command.as_str()).collect()
    }

    fn exactly(text: &str) -> Option<Expected> {
        Some(Expected {
            text: text.into(),
            exactly: true,
        })
    }

    #[test]
    fn only_runs_of_the_workspace_s_own_files_are_taken() {
        let dir = workspace(&["greet.sh", "tools/gen.py", "run.sh"]);
        let objective = "Fix greet.sh: `sh greet.sh Ann` must print exactly \"Hello, Ann!\" and `sh greet.sh` with no argument must print exactly \"Hello, world!\". Then `python3 tools/gen.py --all`, `./run.sh`, and `sh greet.sh Ann` again.";
        assert_eq!(
            names(&commands(objective, dir.path(), None)),
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
                names(&commands(objective, dir.path(), None)),
                Vec::<String>::new(),
                "{why}"
            );
        }
        // The check runs anyway.
        assert_eq!(
            names(&commands(
                "`./run.sh` must pass",
                dir.path(),
                Some("./run.sh")
            )),
            Vec::<String>::new()
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_not_a_workspace_file() {
        let dir = workspace(&["real.sh"]);
        std::os::unix::fs::symlink(dir.path().join("real.sh"), dir.path().join("link.sh")).unwrap();
        assert_eq!(
            names(&commands("`sh link.sh` and `sh real.sh`", dir.path(), None)),
            ["sh real.sh"]
        );
    }

    #[test]
    fn what_the_objective_says_a_command_must_print_is_read_after_it() {
        let dir = workspace(&["greet.sh", "sum.py"]);
        let expected = |objective: &str| -> Vec<Option<Expected>> {
            commands(objective, dir.path(), None)
                .into_iter()
                .map(|p| p.expected)
                .collect()
        };
        // 04's objective, word for word.
        assert_eq!(
            expected("Fix greet.sh: `sh greet.sh Ann` must print exactly \"Hello, Ann!\" and `sh greet.sh` with no argument must print exactly \"Hello, world!\"."),
            [exactly("Hello, Ann!"), exactly("Hello, world!")]
        );
        assert_eq!(
            expected("`python3 sum.py 2 3` should output only `5`, and `sh greet.sh` prints \u{201c}Hi. There\u{201d}"),
            [
                exactly("5"),
                Some(Expected {
                    text: "Hi. There".into(),
                    exactly: false
                })
            ]
        );
        for (objective, why) in [
            (
                "`sh greet.sh` must print the sum \"5\"",
                "other words before the quote",
            ),
            ("Run `sh greet.sh`. It prints \"Hello\"", "another sentence"),
            ("`sh greet.sh` must print \"unclosed", "no closing quote"),
            ("`sh greet.sh` must print exactly \"\"", "nothing quoted"),
            (
                "`sh greet.sh` must greet \"Ann\"",
                "no word that says it prints",
            ),
        ] {
            assert_eq!(expected(objective), [None], "{why}");
        }
    }

    #[test]
    fn an_exact_expectation_is_the_whole_output_and_a_plain_one_a_part_of_it() {
        let exact = exactly("Hello, Ann!").unwrap();
        assert!(exact.met_by("Hello, Ann!\n"));
        assert!(exact.met_by("Hello, Ann!"));
        assert!(!exact.met_by("Hello, Ann\n"));
        assert!(!exact.met_by("Hello, Ann!\nmore\n"));
        let part = Expected {
            text: "Ann".into(),
            exactly: false,
        };
        assert!(part.met_by("Hello, Ann!\n"));
        assert!(!part.met_by("Hello, world!\n"));
    }

    fn greeted(output: &str, expected: &str) -> Ran {
        let expected = exactly(expected).unwrap();
        let met = expected.met_by(output);
        Ran {
            command: "sh greet.sh Ann".into(),
            exit_code: Some(0),
            note: String::new(),
            output: output.into(),
            expected: Some((expected, met)),
        }
    }

    #[test]
    fn the_observation_says_whether_each_output_is_what_the_objective_asks() {
        let text = describe(&[greeted("Hello, Ann\n", "Hello, Ann!")]);
        assert!(
            text.contains("```\nHello, Ann\n```\nThe objective says it must print exactly \"Hello, Ann!\"; it prints \"Hello, Ann\": NOT MET yet.\n"),
            "{text}"
        );
        let text = describe(&[greeted("Hello, Ann!\n", "Hello, Ann!")]);
        assert!(
            text.contains("The objective says it must print exactly \"Hello, Ann!\"; it does.\n"),
            "{text}"
        );
    }

    #[test]
    fn a_claim_is_refused_while_an_output_is_not_what_the_objective_asks() {
        assert_eq!(refusal(&[greeted("Hello, Ann!\n", "Hello, Ann!")]), None);
        let reason = refusal(&[
            greeted("Hello, Ann!\n", "Hello, Ann!"),
            greeted("Hello,\nagain\n", "Hello, Ann!"),
        ])
        .unwrap();
        assert!(
            reason.starts_with("the objective says `sh greet.sh Ann` must print exactly \"Hello, Ann!\", and it prints 2 lines, the first \"Hello,\" now (run by ralph-tui on this claim)"),
            "{reason}"
        );
        // What a command printed reaches the worker as plain text.
        let reason = refusal(&[greeted("\x1b[31mHi\x1b[0m\n", "Hello, Ann!")]).unwrap();
        assert!(!reason.contains('\x1b'), "{reason:?}");
        // A command the objective says nothing of printing does not refuse a claim.
        let mut silent = greeted("anything\n", "x");
        silent.expected = None;
        assert_eq!(refusal(&[silent]), None);
    }

    #[test]
    fn what_each_printed_is_shown_verbatim() {
        let ran = [
            Ran {
                command: "sh greet.sh Ann".into(),
                exit_code: Some(0),
                note: String::new(),
                output: "Hello, $1!\n".into(),
                expected: None,
            },
            Ran {
                command: "sh greet.sh".into(),
                exit_code: None,
                note: "stopped after 15 s".into(),
                output: String::new(),
                expected: None,
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
