//! The round's own record of its tool calls, and the two checks the engine makes against it.
//!
//! - **The loop guard.** Small models repeat a call that already gave its answer (the same
//!   `read_file` of a missing file, eight times in one turn). A call identical to an earlier
//!   one of the round (same name, same arguments) with no file change since is not run
//!   again: its result says so and repeats the earlier one. The third such call ends the
//!   round's work: the engine begins the wrap-up (reason `repetition`).
//! - **Claims against the record.** A `complete` report is refused, as a tool error the worker
//!   can correct within its turns, when the round's log contradicts it: an evidence item
//!   names a command whose last run in this round failed (or cites `COMMAND: exit code N`
//!   for a command the round never ran, or that ended otherwise), or whose last run ran no
//!   test (`Ran 0 tests` proves nothing), or says it printed what its last run did not print
//!   ([`evidence`]); the round's last change to a file failed with nothing changed after it; or
//!   the round called no tool at all.
//!   Completion stays the worker's claim; the engine only refuses what its own log
//!   contradicts.
//! - **A blocker questioned once.** A `blocked` report filed while the round's last command
//!   failed is sent back once a round, saying that a failing command is work to do (so is one
//!   filed after a change the round never ran); the same claim made again stands, unless
//!   the round refused one of its own claims first ([`CallLog::overruled_block`]).

mod evidence;

use serde_json::Value;

use super::testrun::ran_no_test;
use crate::chat::scan::clip;
use crate::protocol::event::{CheckRun, CheckVerdict};
use crate::protocol::report::{
    check_rules, Report, ReportStatus, REPORT_ITEMS_MAX, REPORT_ITEM_MAX,
};
use crate::protocol::tool::{EDIT_FILE, REPLACE_DEFINITION, RUN_COMMAND, WRITE_FILE};
use crate::text::tail_at_char_boundary;
use crate::tools::ToolResult;
use crate::tools::{ALREADY_IN_PLACE, WORD_LEFT};
use evidence::{cited_exit_code, names_command, normalize};

/// The identical call that begins the wrap-up (the first ran, the second was refused).
pub const REPEATS_BEFORE_WRAP_UP: u32 = 3;

/// The most of a command's output a run keeps: its end, where test runners sum up.
const KEPT_OUTPUT_BYTES: usize = 4 * 1024;
/// The most of a command's output a refusal quotes (its end).
const QUOTED_OUTPUT_BYTES: usize = 200;

/// The tools that change a file by name.
const FILE_TOOLS: [&str; 3] = [WRITE_FILE, EDIT_FILE, REPLACE_DEFINITION];

/// One distinct call of the round.
#[derive(Debug)]
struct SeenCall {
    name: String,
    arguments: String,
    /// The file-change epoch right after it last ran.
    epoch: u64,
    result: ToolResult,
    /// Identical calls since it last ran, that one included.
    times: u32,
}

/// One run of a command: what ran and how it ended.
#[derive(Debug, Clone)]
struct CommandRun {
    command: String,
    ok: bool,
    /// Its result's first line (`exit code 1`, a timeout, ...).
    first_line: String,
    /// What it printed (its result after the first line), the last [`KEPT_OUTPUT_BYTES`].
    output: String,
    /// Why its whole output shows a test run that ran no test, when it does.
    ran_no_test: Option<&'static str>,
}

impl CommandRun {
    /// Its result as the claims are read against: status line and output.
    fn printed(&self) -> String {
        format!("{}\n{}", self.first_line, self.output)
    }

    /// The end of its output, bounded, for a refusal to quote.
    fn output_tail(&self) -> String {
        let output = self.output.trim();
        let tail = tail_at_char_boundary(output, QUOTED_OUTPUT_BYTES);
        if tail.len() < output.len() {
            format!("…{tail}")
        } else {
            tail.to_string()
        }
    }
}

/// What the loop guard says of a call about to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Repeat {
    /// Run it.
    Fresh,
    /// Do not run it: the result to give instead, and how many times the call has now been
    /// made with nothing changed (2 or more).
    Refused { result: ToolResult, times: u32 },
}

/// The calls of one round.
#[derive(Debug, Default)]
pub struct CallLog {
    calls: Vec<SeenCall>,
    /// Bumped whenever a call changes a file.
    epoch: u64,
    commands: Vec<CommandRun>,
    /// Workspace tool calls made (the report excluded), run or refused.
    tool_calls: u32,
    /// The round's last file tool call, when it failed and no file changed after it (an edit
    /// that found the file already as asked did not fail).
    failed_change: Option<String>,
    /// The file the round's last successful file tool call changed, when no command has run
    /// since.
    unrun_change: Option<String>,
    /// The file of the round's last edit that found it already as asked, when nothing ran or
    /// changed after it: a `complete` then rests on nothing shown (not kept for an edit of a
    /// prose file found made).
    in_place: Option<String>,
    /// A prose file whose latest change this round renamed a word that still stands in it
    /// (or in its kind's other files), with what that change's answer said of it: a
    /// `complete` then leaves the rest undone, and nothing runs prose to say so (seed 1, 02
    /// at fb9124e: one `recieve` of the guide's four fixed, the guide claimed fixed).
    word_left: Option<(String, String)>,
    /// The repository's check (its command, clipped) and its verdict after the round's last
    /// change, when it did not pass (`--check-on-change`).
    failing_check: Option<(String, &'static str)>,
    /// The check and its verdict at the round's start, when it did not pass, until a change
    /// of this round is checked: a `blocked` report is questioned with it (seed 1, 06 at
    /// `aea265d`: a round whose only edit was refused reported "the test still fails" as a
    /// blocker, and the run ended in round 1 of 4).
    start_check: Option<(String, &'static str)>,
    /// A `blocked` report has been questioned once this round.
    block_questioned: bool,
    /// Why a claim of this round was refused (by the round's record or the repository's
    /// check), said as a blocker filed after it is questioned; the latest refusal.
    refused_claim: Option<String>,
    /// What the round's latest refusal of a claim said (the record's contradiction, quoting
    /// what the run printed, or the check's verdict): the next step of a block overruled.
    refusal: Option<String>,
}

/// A call's arguments in one canonical text (keys sorted, as serde_json's map keeps them).
fn canonical(arguments: &Value) -> String {
    arguments.to_string()
}

impl CallLog {
    /// Checks a workspace tool call before it runs (and counts it).
    pub fn check(&mut self, name: &str, arguments: &Value) -> Repeat {
        self.tool_calls = self.tool_calls.saturating_add(1);
        let arguments = canonical(arguments);
        let epoch = self.epoch;
        if let Some(refused) = self.back_and_forth(name, &arguments) {
            return refused;
        }
        let Some(seen) = self
            .calls
            .iter_mut()
            .find(|c| c.name == name && c.arguments == arguments && c.epoch == epoch)
        else {
            return Repeat::Fresh;
        };
        seen.times = seen.times.saturating_add(1);
        let earlier = &seen.result;
        let output = if FILE_TOOLS.contains(&name) && earlier.ok {
            // Small models write the same file again and again once it is right.
            format!(
                "not run again: this exact {name} call already succeeded in this round, so the file already has this content. Do not write it again: check the work (run the tests, or read the file back), then call ralph_report. Its result was:\n{}",
                earlier.output
            )
        } else {
            format!(
                "not run again: this exact {name} call already ran in this round and no file has changed since. Do something different. Its result was:\n{}",
                earlier.output
            )
        };
        Repeat::Refused {
            result: ToolResult { ok: false, output },
            times: seen.times,
        }
    }

    /// A file change identical to one that already succeeded in this round, with files
    /// changed after it: making it again goes back to an earlier version. The 1.5B edited
    /// `$1` to `$2` and back twenty times in one round, each edit changing the file, so the
    /// identical-call guard never saw a repeat. Refused like a repeat, and counted with it.
    fn back_and_forth(&mut self, name: &str, arguments: &str) -> Option<Repeat> {
        if !FILE_TOOLS.contains(&name) {
            return None;
        }
        let epoch = self.epoch;
        let seen = self.calls.iter_mut().find(|c| {
            c.name == name && c.arguments == arguments && c.epoch < epoch && c.result.ok
        })?;
        seen.times = seen.times.saturating_add(1);
        Some(Repeat::Refused {
            result: ToolResult {
                ok: false,
                output: format!(
                    "not run: this exact {name} call already succeeded earlier in this round, and files changed after it, so making it again goes back to an earlier version: you are going back and forth. Decide which version the objective needs by running it (or the tests), then keep that one and call ralph_report. Its result was:\n{}",
                    seen.result.output
                ),
            },
            times: seen.times,
        })
    }

    /// Records a call that ran: its result, and whether it changed a file (which lets every
    /// earlier call run again).
    pub fn record(&mut self, name: &str, arguments: &Value, result: &ToolResult, changed: bool) {
        let file_tool = FILE_TOOLS.contains(&name);
        // A definition replaced from prose names its function, not its file.
        let path = arguments
            .get("path")
            .or_else(|| arguments.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if changed {
            self.epoch = self.epoch.saturating_add(1);
            self.failed_change = None;
            if file_tool {
                self.unrun_change = Some(clip(path, 120).to_string());
            }
        }
        if name == RUN_COMMAND {
            self.unrun_change = None;
        }
        if changed || name == RUN_COMMAND {
            self.in_place = None;
        }
        if file_tool && result.ok {
            self.note_word_left(path, &result.output);
        }
        let in_place = file_tool && !result.ok && result.output.starts_with(ALREADY_IN_PLACE);
        if in_place {
            // An edit found made (its `old` gone or inside its `new`) shows the change is in
            // the file; one whose `old` is its `new`, or a write of the file as it is, only
            // that the worker asked for the text it has (the 1.5B copies the typo it means
            // to fix into `new`: seed 3, 02 at 68cd11f, claimed so).
            let made = name == crate::protocol::tool::EDIT_FILE
                && arguments.get("old") != arguments.get("new");
            // Nothing runs prose, so an edit of it found made needs no run before a claim (seed 2,
            // 02: a guide fixed in round 2, its claim refused in round 3 for want of a run).
            let needs_run = !(made && crate::tools::is_prose(path));
            self.in_place = needs_run.then(|| clip(path, 120).to_string());
        } else if file_tool && !result.ok {
            self.failed_change = Some(format!(
                "{name} {}: {}",
                clip(path, 120),
                clip(result.output.lines().next().unwrap_or(""), 160)
            ));
        }
        let arguments_text = canonical(arguments);
        self.calls
            .retain(|c| !(c.name == name && c.arguments == arguments_text));
        self.calls.push(SeenCall {
            name: name.to_string(),
            arguments: arguments_text,
            epoch: self.epoch,
            result: result.clone(),
            times: 1,
        });
        if name == RUN_COMMAND {
            if let Some(command) = arguments.get("command").and_then(Value::as_str) {
                let (first_line, output) = result
                    .output
                    .split_once('\n')
                    .unwrap_or((result.output.as_str(), ""));
                self.commands.push(CommandRun {
                    command: normalize(command),
                    ok: result.ok,
                    first_line: first_line.trim_end_matches('\r').to_string(),
                    output: tail_at_char_boundary(output, KEPT_OUTPUT_BYTES).to_string(),
                    ran_no_test: ran_no_test(output),
                });
            }
        }
    }

    /// Why the round's record contradicts `report`, if it does (only `complete` is checked).
    pub fn contradiction(&self, report: &Report) -> Option<String> {
        if report.status != ReportStatus::Complete {
            return None;
        }
        if self.tool_calls == 0 {
            return Some(
                "status \"complete\" needs work checked in this round, and this round has called no tool: inspect the files and check the objective with the tools first".into(),
            );
        }
        let failed = report.evidence.iter().find_map(|item| {
            let run = self
                .commands
                .iter()
                .rev()
                .find(|run| names_command(item, &run.command))?;
            (!run.ok).then(|| {
                format!(
                    "the evidence \"{}\" cites `{}`, but its last run in this round failed ({}): fix the cause and run it again, or report status \"continue\"",
                    clip(item, 120),
                    clip(&run.command, 120),
                    clip(&run.first_line, 120),
                )
            })
        });
        failed
            .or_else(|| {
                report
                    .evidence
                    .iter()
                    .find_map(|item| self.unfounded_exit_code(item))
            })
            .or_else(|| {
                report
                    .evidence
                    .iter()
                    .find_map(|item| self.unproven_output(item))
            })
            .or_else(|| {
                report
                    .evidence
                    .iter()
                    .find_map(|item| self.unrun_printing_command(item))
            })
            .or_else(|| {
                std::iter::once(&report.summary)
                    .chain(&report.evidence)
                    .find_map(|claim| self.unproven_file_output(claim))
            })
            .or_else(|| {
                self.failed_change.as_ref().map(|failure| {
                    format!(
                        "the round's last change to a file failed ({failure}) and no file changed after it: make the change, or report status \"continue\""
                    )
                })
            })
            .or_else(|| {
                self.word_left.as_ref().map(|(path, said)| {
                    format!(
                        "the round's last change of {path} left part of it undone: {said}. Make that change too, or report status \"continue\""
                    )
                })
            })
            .or_else(|| {
                self.in_place.as_ref().map(|path| {
                    format!(
                        "the round's last edit of {path} changed nothing (the file already held it) and nothing ran after it: run what the objective names and cite what it printed, or report status \"continue\""
                    )
                })
            })
    }

    /// Keeps, for a prose file `path` that a file tool just changed, what its answer `output`
    /// said of a renamed word still standing ([`WORD_LEFT`]); a change of that file that says
    /// nothing of it clears it.
    fn note_word_left(&mut self, path: &str, output: &str) {
        if self.word_left.as_ref().is_some_and(|(p, _)| p == path) {
            self.word_left = None;
        }
        if !crate::tools::is_prose(path) {
            return;
        }
        let Some(at) = output.find(WORD_LEFT) else {
            return;
        };
        let start = output[..at].rfind("The word").unwrap_or(at);
        let end = output[at..].find(';').map_or(output.len(), |e| at + e);
        self.word_left = Some((
            clip(path, 120).to_string(),
            clip(&output[start..end], 300).to_string(),
        ));
    }

    /// Questions a `blocked` report once a round when the round's last command failed: small
    /// models report a failing test as a blocker. The worker may report `blocked` again (then
    /// it stands) or go on. `None` lets the report through.
    pub fn question_block(&mut self, report: &Report) -> Option<String> {
        if report.status != ReportStatus::Blocked || self.block_questioned {
            return None;
        }
        let failing = self.failing_work()?;
        self.block_questioned = true;
        Some(format!(
            "{failing}. Fix the cause and run it again, or report status \"continue\" with next_steps for the next round; only if no change in the repository can fix it, report \"blocked\" again"
        ))
    }

    /// A `blocked` report filed after this round refused one of its claims, as the report
    /// the round ends with instead: status `continue`, the refusal its first next step. The
    /// worker claimed the work done, its record or the check showed otherwise, and then it
    /// filed that refusal as a blocker (the 1.5B, in 04-shell-greet, wrote "the report says
    /// greet.sh prints 'Hello, Ann!', but no run of it printed that" as its blocker, and the
    /// run ended with two rounds left and a one-character fix to make). What a refusal names
    /// is work in the repository, so the next round, fresh and with the workspace in view,
    /// takes it up. So does a block filed again, after it was questioned, while the check
    /// still fails after the round's own last change (the 1.5B, in 06-py-median, seed 1, wrote
    /// `median`'s body onto its `def` line, called the indentation error it made a blocker
    /// twice, and the run ended in round 1 of 4). `None` leaves the report as it is.
    pub fn overruled_block(&self, report: &Report) -> Option<Report> {
        if report.status != ReportStatus::Blocked {
            return None;
        }
        let broken = self
            .failing_check
            .as_ref()
            .filter(|_| self.block_questioned)
            .map(|(command, verdict)| {
                format!(
                    "make the repository's check `{command}` pass: it did not after the last round's change ({verdict}); the observation shows its output"
                )
            });
        let refusal = self.refusal.clone().or(broken)?;
        goes_on(report, &refusal)
    }

    /// A report refused for the last time this round, as the report the round ends with
    /// when what refused it was one of its claims (the round's record or the check): status
    /// `continue`, the refusal its first next step. The claim was wrong, not the report, and
    /// the next round, fresh and with the check's output in view, takes the work up. Seed 3,
    /// 05 at 0e12c44: three `complete` claims refused by the doctest in round 1, and the run
    /// ended `round-failed` with three rounds left. `None` when no claim was refused.
    pub fn refused_goes_on(&self, report: &Report) -> Option<Report> {
        goes_on(report, self.refusal.as_deref()?)
    }

    /// Records that the round's record refuted a claim (the engine refused it as
    /// [`CallLog::contradiction`] said): a `blocked` report after it is questioned once.
    pub fn claim_refuted(&mut self, reason: &str) {
        self.refusal = Some(format!("a claim was refused: {reason}"));
        self.refused_claim = Some(
            "a claim this round's own record refuted is work to do, not a blocker: make the work do what the claim said (the refusal quoted what the run printed)".into(),
        );
    }

    /// Records that the repository's check (`command`) refused a claim of this round with
    /// `verdict`: a `blocked` report after it is questioned like one after a failing command.
    pub fn check_refused(&mut self, command: &str, verdict: &str) {
        self.refusal = Some(format!(
            "make the repository's check `{}` pass (it did not: {verdict})",
            clip(command, 120),
        ));
        self.refused_claim = Some(format!(
            "a check that does not pass is work to do, not a blocker: the repository's check `{}` does not pass ({verdict})",
            clip(command, 120),
        ));
    }

    /// Records what the repository's check (`command`) found right after a change of this
    /// round (`run`): one that did not pass makes a `blocked` report after it questioned,
    /// until a later change's check passes.
    pub fn change_checked(&mut self, command: &str, run: &CheckRun) {
        self.failing_check = failing(command, run.verdict);
        self.start_check = None;
    }

    /// Records what the repository's check (`command`) found at the round's start (`run`):
    /// one that did not pass makes a `blocked` report questioned, until a change of this round
    /// is checked. Filed again, the block stands: the check fails at nearly every round's
    /// start, so it cannot tell a real blocker (a package that is not installed) from work.
    pub fn round_checked(&mut self, command: &str, verdict: CheckVerdict) {
        self.start_check = failing(command, verdict);
    }

    /// What says the work is not done yet, though the worker may take it for a blocker: the
    /// check failed after the round's last change (the 1.5B broke `stats.py`, then rewrote
    /// the tests and called the failing result a blocker), the
    /// round changed a file and ran nothing since (the 1.5B wrote `greet.sh` whole, then
    /// reported that "the file already has the correct content" as a blocker, never running
    /// it), the round's last command failed, or ran no test (the 1.5B wrote a doctest's
    /// function back without its docstring, then reported the empty run as a blocker), or a
    /// claim of the round was refused.
    fn failing_work(&self) -> Option<String> {
        if let Some((command, verdict)) = &self.failing_check {
            return Some(format!(
                "a check that fails after your change is work to do, not a blocker: the repository's check `{command}` does not pass after this round's last change ({verdict}); its output is in that change's result"
            ));
        }
        if let Some(path) = &self.unrun_change {
            return Some(format!(
                "a change not yet run is work to check, not a blocker: this round changed {path} and ran no command since; run what it changed (or the tests) and read what it prints"
            ));
        }
        if let Some(last) = self.commands.last() {
            if !last.ok {
                return Some(format!(
                    "a failing command is work to do, not a blocker: `{}` ended with \"{}\"",
                    clip(&last.command, 120),
                    clip(&last.first_line, 120),
                ));
            }
            if let Some(why) = last.ran_no_test {
                return Some(format!(
                    "a test run that finds no test is work to do, not a blocker: `{}` ran no test ({why}), so the tests it should find are missing or were removed",
                    clip(&last.command, 120),
                ));
            }
        }
        self.refused_claim.clone().or_else(|| {
            self.start_check.as_ref().map(|(command, verdict)| {
                format!(
                    "a check that fails is work to do, not a blocker: the repository's check `{command}` did not pass at this round's start ({verdict}) and no change of this round has been checked since; its output is in the observation"
                )
            })
        })
    }

    /// The run an evidence item's claims about output are read against: the round's last run
    /// whose command, or one of the commands it chains (`a; b`), the item names, with the
    /// name it goes by there (the longest).
    fn cited_run(&self, item: &str) -> Option<(&CommandRun, String)> {
        self.commands.iter().rev().find_map(|run| {
            let mut names = evidence::chained(&run.command);
            names.push(run.command.clone());
            let named = names
                .into_iter()
                .filter(|name| names_command(item, name))
                .max_by_key(String::len)?;
            Some((run, named))
        })
    }

    /// An evidence item citing a command whose last run ran no test, or saying it printed
    /// what that run did not print.
    fn unproven_output(&self, item: &str) -> Option<String> {
        let (run, named) = self.cited_run(item)?;
        if let Some(why) = run.ran_no_test {
            let hint = if why.contains("unittest") {
                " (python3 -m unittest discover -p '*test*.py' finds test_*.py and *_test.py alike)"
            } else {
                ""
            };
            return Some(format!(
                "the evidence \"{}\" cites `{}`, but its last run in this round ran no test ({why}): a run that tests nothing proves nothing. Run a command that finds the tests{hint}; where the repository has no tests, cite how else you checked the work (a file you read back, a command's output); or report status \"continue\"",
                clip(item, 120),
                clip(&named, 120),
            ));
        }
        let printed = run.printed();
        let claim = evidence::output_claims(item, &named)
            .into_iter()
            .find(|claim| !claim.holds_in(&printed))?;
        Some(format!(
            "the evidence \"{}\" says `{}` printed \"{}\", but its last run in this round printed:\n{}\nCite what it printed, or fix the cause and run it again, or report status \"continue\"",
            clip(item, 120),
            clip(&named, 120),
            clip(claim.text(), 120),
            run.output_tail(),
        ))
    }

    /// An evidence item saying what a command line prints (`fixed to print 'Hello, Ann!' when
    /// 'sh greet.sh Ann' is called`) when this round never ran it: the 1.5B claimed that
    /// output having only read the file, and the script printed something else.
    fn unrun_printing_command(&self, item: &str) -> Option<String> {
        let command = evidence::commands_said_to_print(item)
            .into_iter()
            .find(|command| {
                !self
                    .commands
                    .iter()
                    .any(|run| run.command.contains(command))
            })?;
        Some(format!(
            "the evidence \"{}\" says what `{}` prints, but this round never ran it: run it and cite what it prints, or report status \"continue\"",
            clip(item, 120),
            clip(&command, 120),
        ))
    }

    /// A claim (the summary or an evidence item) that a file prints quoted text when no run
    /// of that file in the round printed the text: the 1.5B ran `sh greet.sh Ann`, got
    /// `Hello, Ann`, and reported "Fixed greet.sh to print 'Hello, Ann!'"; on seed 2 it edited
    /// `greet.sh` and claimed what it prints without running it at all (a false completion:
    /// the script printed `Hello, Ann!` whatever the name). A quoted span the command itself
    /// holds (its argument, `'Ann'`) claims nothing.
    fn unproven_file_output(&self, claim: &str) -> Option<String> {
        let (files, quoted) = evidence::file_output_claims(claim);
        files.iter().find_map(|file| {
            let file = file.trim_start_matches("./");
            let runs: Vec<&CommandRun> = self
                .commands
                .iter()
                .filter(|run| run.command.split(' ').any(|w| w.trim_start_matches("./") == file))
                .collect();
            let Some(last) = runs.last() else {
                return quoted.first().map(|text| {
                    format!(
                        "the report says {} prints \"{}\", but this round never ran {}: run it and cite what it prints, or report status \"continue\"",
                        clip(file, 120),
                        clip(text, 120),
                        clip(file, 120),
                    )
                });
            };
            let unseen = quoted.iter().find(|text| {
                !runs.iter().any(|run| run.command.contains(text.as_str()))
                    && !runs
                        .iter()
                        .any(|run| evidence::Claim::Quoted((*text).clone()).holds_in(&run.printed()))
            })?;
            Some(format!(
                "the report says {} prints \"{}\", but no run of it in this round printed that; `{}` printed:\n{}\nCite what it printed, or fix the cause and run it again, or report status \"continue\"",
                clip(file, 120),
                clip(unseen, 120),
                clip(&last.command, 120),
                last.output_tail(),
            ))
        })
    }

    /// An evidence item written as `COMMAND: exit code N` (the shape the instructions
    /// teach) whose command this round never ran, or whose last run ended otherwise.
    fn unfounded_exit_code(&self, item: &str) -> Option<String> {
        let (command, code) = cited_exit_code(item)?;
        let last = self
            .commands
            .iter()
            .rev()
            .find(|run| run.command == command);
        match last {
            None => Some(format!(
                "the evidence \"{}\" gives the exit code of `{}`, but this round did not run it: run it, or cite what this round did run",
                clip(item, 120),
                clip(&command, 120),
            )),
            Some(run) if run.first_line != format!("exit code {code}") => Some(format!(
                "the evidence \"{}\" says `{}` exited with code {code}, but its last run in this round says \"{}\"",
                clip(item, 120),
                clip(&command, 120),
                clip(&run.first_line, 120),
            )),
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests;

/// The check's command (clipped) and `verdict`, when it did not pass.
fn failing(command: &str, verdict: CheckVerdict) -> Option<(String, &'static str)> {
    (!verdict.is_pass()).then(|| (clip(command, 120).to_string(), verdict.as_str()))
}

/// `report` as status `continue` with `refusal` its first next step (`None` when that
/// breaks a report rule).
fn goes_on(report: &Report, refusal: &str) -> Option<Report> {
    let step = refusal.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut next_steps = vec![clip(&step, REPORT_ITEM_MAX - 1)];
    next_steps.extend(report.next_steps.iter().cloned());
    next_steps.truncate(REPORT_ITEMS_MAX);
    let goes_on = Report {
        status: ReportStatus::Continue,
        summary: report.summary.clone(),
        evidence: report.evidence.clone(),
        next_steps,
        blocker: String::new(),
    };
    check_rules(&goes_on).is_ok().then_some(goes_on)
}
