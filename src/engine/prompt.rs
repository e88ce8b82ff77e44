//! The fixed round prompt: what a fresh child is given, and nothing more.
//!
//! A child sees the objective, "round N of M", the workspace rules, the previous validated
//! report (or a line saying there is none), and the repository's `AGENTS.md`. Nothing else
//! from earlier rounds ever reaches it.

use std::path::Path;

use super::report::Report;
use crate::llm::{Message, Role};

/// Most bytes of `AGENTS.md` given to a child.
pub const AGENTS_MAX_BYTES: usize = 8 * 1024;

const ROLE: &str = "\
You are one round of a Ralph loop: a fresh worker with no memory of earlier rounds. You work \
on a git repository through tools, toward one objective that does not change for the whole run.

Rules for this round:
- The working tree is the source of truth. Earlier rounds may already have done part of the \
work: inspect the files before acting, and never assume.
- Preserve existing work. Change only what the objective needs.
- Do concrete, in-scope work that moves the objective forward in this round.
- Verify what you change: read it back, run the relevant command or tests.
- End the round by calling ralph_report exactly once, as your last call:
  status \"continue\" with next_steps when work remains; \"complete\" with evidence when the \
objective is met; \"blocked\" with the blocker when you cannot go on.
  Your report is the only thing the next round will know about this one.";

/// Reads the workspace's `AGENTS.md`, bounded; `None` when there is none.
pub fn agent_instructions(root: &Path) -> Option<String> {
    let text = std::fs::read(root.join("AGENTS.md")).ok()?;
    let mut text = String::from_utf8_lossy(&text).into_owned();
    if text.len() > AGENTS_MAX_BYTES {
        text.truncate(crate::text::cut_at_char_boundary(&text, AGENTS_MAX_BYTES).len());
        text.push_str("\n[AGENTS.md continues; read the file for the rest]");
    }
    Some(text)
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
        vec![
            Message::new(Role::System, system),
            Message::new(Role::User, user),
        ]
    }
}

/// The reminder given when a turn called no tool.
pub const NO_CALL_REMINDER: &str = "You did not call a tool. Keep working with the tools, and end the round by calling ralph_report.";
