//! The fixed round prompt: what a fresh child is given, and nothing more.
//!
//! A child sees the objective, "round N of M", the workspace rules, the previous validated
//! report (or a line saying there is none), and the repository's `AGENTS.md`. Nothing else
//! from earlier rounds ever reaches it. `AGENTS.md` is the worker's own file (it can change
//! it), so it is read confined and bounded like the file tools read, never followed to
//! `/proc`, a device or a FIFO. The words of the wrap-up turn (the round's last, report
//! only) are here too.

use std::io::Read;
use std::path::Path;

use super::notes::Note;
use crate::protocol::event::WrapUpReason;
use crate::protocol::message::{Message, Role};
use crate::protocol::report::Report;
use crate::tools::confined::{Opened, Refusal, Root};

/// The repository instructions file, at the workspace root.
const AGENTS_FILE: &str = "AGENTS.md";
/// Most bytes of `AGENTS.md` given to a child.
pub const AGENTS_MAX_BYTES: usize = 8 * 1024;

const ROLE: &str = "\
You are one round of a Ralph loop: a fresh worker with no memory of earlier rounds. You work \
on a git repository through tools, toward one objective that does not change for the whole run.

Rules for this round:
- The working tree is the source of truth. Earlier rounds may already have done part of the \
work: inspect the files before acting, and never assume.
- Preserve existing work. Change only what the objective needs.
- Do concrete, in-scope work that moves the objective forward in this round: reading alone \
is not progress, so make the change in this round.
- Verify what you change: read it back, run the relevant command or tests. A failing test is \
not a blocker but the work itself: fix the cause and run it again.
- End the round by calling ralph_report exactly once, as your last call:
  status \"continue\" with next_steps when work remains; \"complete\" with evidence when the \
objective is met; \"blocked\" with the blocker only when you cannot go on (something missing \
that no change in this repository can fix).
  Your report is the only thing the next round will know about this one.";

/// The line after an observation: it replaces the inspection the fixed text asks for.
const OBSERVATION_CLOSE: &str = "\n\nThe files above are as they are now: you need not list or read them again. Make what the objective still needs in your first turns, then verify it. To change a small file, write it whole the way the files are shown above: its path alone on a line, then every line of the new file in a ``` block.";

/// Reads the workspace's `AGENTS.md` the way the file tools read: beneath the root, no
/// symlink followed, a regular file only, opened without blocking, and never more than
/// [`AGENTS_MAX_BYTES`] + 1 bytes read. `Ok(None)` when there is none; `Err(warning)` when
/// there is one that is refused (a symlink, a FIFO, a device), to be shown to the person.
pub fn agents_file(root: &Path) -> Result<Option<String>, String> {
    let refused =
        |reason: &dyn std::fmt::Display| format!("AGENTS.md is not given to the worker: {reason}");
    let confined = Root::open(root).map_err(|e| refused(&e))?;
    let (file, len) = match confined.open_read(Path::new(AGENTS_FILE)) {
        Ok(Opened::File { file, len }) => (file, len),
        Err(Refusal::NotFound) => return Ok(None),
        Ok(Opened::Dir(_)) => return Err(refused(&Refusal::Directory)),
        Err(e) => return Err(refused(&e)),
    };
    let cap = u64::try_from(AGENTS_MAX_BYTES).unwrap_or(u64::MAX);
    let mut bytes = Vec::with_capacity(usize::try_from(len.min(cap + 1)).unwrap_or(0));
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refused(&e))?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if bytes.len() > AGENTS_MAX_BYTES {
        text.truncate(crate::text::cut_at_char_boundary(&text, AGENTS_MAX_BYTES).len());
        text.push_str("\n[AGENTS.md continues; read the file for the rest]");
    }
    Ok(Some(text))
}

/// The inputs of one round's prompt.
#[derive(Debug, Clone, Copy)]
pub struct RoundPrompt<'a> {
    pub objective: &'a str,
    pub round: u32,
    pub max_rounds: u32,
    pub previous: Option<&'a Report>,
    pub agents: Option<&'a str>,
    /// The chat format's tool section for the system prompt.
    pub tool_instructions: &'a str,
    /// The round's observation of the workspace, given after the fixed text.
    pub observation: Option<&'a str>,
    /// The person's notes to this round, oldest first, given after everything else.
    pub notes: &'a [Note],
}

impl RoundPrompt<'_> {
    /// The fresh child's whole initial message list.
    pub fn messages(&self) -> Vec<Message> {
        let system = format!("{ROLE}\n\n{}", self.tool_instructions);
        let mut user = format!(
            "Objective (fixed for the whole run):\n{}\n\nThis is round {} of {}.\n\n",
            self.objective, self.round, self.max_rounds
        );
        match self.previous {
            None => user.push_str("This is the first round: there is no earlier report.\n"),
            Some(report) => {
                let json = serde_json::to_string_pretty(report).unwrap_or_default();
                user.push_str(
                    "The previous round's report (the worker's own account; check it against the files):\n",
                );
                user.push_str(&json);
                user.push('\n');
            }
        }
        if let Some(agents) = self.agents {
            user.push_str("\nRepository instructions (AGENTS.md):\n");
            user.push_str(agents);
            user.push('\n');
        }
        user.push_str("\nStart by inspecting the workspace.");
        if let Some(observation) = self.observation {
            user.push_str("\n\n");
            user.push_str(observation.trim_end());
            user.push_str(OBSERVATION_CLOSE);
        }
        for note in self.notes {
            user.push_str(&note_text(note));
        }
        vec![
            Message::new(Role::System, system),
            Message::new(Role::User, user),
        ]
    }
}

/// A note as the child reads it: marked as the supervising person's, with the time, after
/// the fixed prompt (so the prefix cache still holds). It steers; it is not a report, not
/// evidence, and the objective stays as it is.
pub fn note_text(note: &Note) -> String {
    format!(
        "\n\nA note from the person supervising this run, written {} (their words, not a report \
and not evidence; the objective above is unchanged):\n{}",
        note.written_at, note.text
    )
}

/// The instruction that opens a wrap-up turn: why the round ends here, and that the report
/// is the only thing left to do.
pub fn wrap_up(reason: WrapUpReason) -> String {
    let why = match reason {
        WrapUpReason::Turns => "This round has used its turns",
        WrapUpReason::Context => "This round's context window is nearly full",
        WrapUpReason::Budget => "The run's token budget is nearly spent",
        WrapUpReason::Repetition => {
            "You made the same call three times with no file changed in between"
        }
    };
    format!(
        "{why}, so this is your last turn: file your report now, and do nothing else. Call \
ralph_report once, with no other tool call and no other text. Say what is true:
- status \"continue\" when work remains, with next_steps saying exactly what the next round \
should do first;
- status \"complete\" only when the objective is met, with the evidence;
- status \"blocked\" when you cannot go on, with the blocker.
The next round starts fresh from the files and this report alone."
    )
}

/// The reminder given when a wrap-up turn called nothing.
pub const WRAP_UP_REMINDER: &str =
    "You did not call ralph_report. This is the wrap-up: call ralph_report now, and nothing else.";

/// The reminder given when a turn called no tool.
pub const NO_CALL_REMINDER: &str = "You did not call a tool. Keep working with the tools, and end the round by calling ralph_report.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_md_is_confined_regular_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(agents_file(dir.path()), Ok(None));
        std::fs::write(dir.path().join("AGENTS.md"), "be careful\n").unwrap();
        assert_eq!(agents_file(dir.path()), Ok(Some("be careful\n".into())));
        std::fs::write(dir.path().join("AGENTS.md"), "é".repeat(AGENTS_MAX_BYTES)).unwrap();
        let cut = agents_file(dir.path()).unwrap().unwrap();
        assert!(cut.len() < AGENTS_MAX_BYTES + 100 && cut.ends_with("read the file for the rest]"));
        for target in ["/proc/self/environ", "/dev/zero"] {
            std::fs::remove_file(dir.path().join("AGENTS.md")).unwrap();
            std::os::unix::fs::symlink(target, dir.path().join("AGENTS.md")).unwrap();
            let warning = agents_file(dir.path()).unwrap_err();
            assert!(warning.contains("symlink"), "{target}: {warning}");
        }
        std::fs::remove_file(dir.path().join("AGENTS.md")).unwrap();
        nix::unistd::mkfifo(&dir.path().join("AGENTS.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let warning = agents_file(dir.path()).unwrap_err();
        assert!(warning.contains("FIFO"), "{warning}");
    }
}
