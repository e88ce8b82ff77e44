//! The wrap-up: a round never just runs out. Before every turn the engine asks whether the
//! next one could be the round's end (its last turn by `--max-turns`, a turn that might not
//! fit beside the report's reserve, a turn that could cross the run's token budget); if so,
//! it emits `wrap_up`, tells the child to file its report now, and that turn is *report
//! only*: the llama backend samples it under the report call's grammar alone, the engine
//! refuses any other call, and the report is validated at the boundary as always. A wrap-up
//! that yields no valid report within [`MAX_REPORT_ATTEMPTS`] report-only turns fails the
//! round.
//!
//! The reserve is [`REPORT_RESERVE_TOKENS`], a promise: nothing but the report spends it.
//! - An ordinary turn runs only when its whole `--max-tokens`, the reserve and
//!   [`TURN_MARGIN_TOKENS`] (the wrap-up's instruction and the short messages before it) fit
//!   beside the prompt; the backends also cap its generation there (`report::turn_cap`).
//! - A tool result that would eat into the reserve and margin is cut to what fits
//!   ([`fit_tool_result`]).
//! - Before every wrap-up turn, whatever still stands between the prompt and the reserve (an
//!   error echo, a reminder, a cut result's note, an earlier report attempt) is cut, largest
//!   first and the messages since the last turn before older ones, and as a last resort the
//!   round's oldest turns are left out ([`WrapUpWatch::make_room_for_report`]); a `warning`
//!   says so.
//! - The report fits whatever is left by construction: the backend bounds the report's
//!   strings and lists by the room (`chat::report_grammar_within`, the server's schema).
//! - A round prompt that leaves no room for the reserve and margin is refused before a run
//!   starts ([`check_prompt_fits`]).

use std::path::Path;

use crate::chat::ChatFormat;
use crate::llm::{Backend, Child, Request};
use crate::protocol::event::{Event, WrapUpReason};
use crate::protocol::message::{Message, Role};
use crate::protocol::report::{turn_cap, REPORT_RESERVE_TOKENS, TURN_MARGIN_TOKENS};
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};
use crate::tools::{cap_output, ToolResult};

use super::conversation::Conversation;
use super::{prompt, RoundEnd, MAX_REPORT_ATTEMPTS};

/// Messages no longer than this are not cut to make room for the report: the note of the
/// cut would be about as long.
const CUT_MIN_BYTES: usize = 120;

/// A round's wrap-up once it has begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WrapUp {
    pub(super) reason: WrapUpReason,
    /// Report-only turns given so far.
    pub(super) turns: u32,
}

/// What decides whether the next turn is a wrap-up turn.
#[derive(Debug, Clone, Copy)]
pub struct NextTurn {
    /// The next turn's number in the round, from 1.
    pub turn: u32,
    pub max_turns: u32,
    /// The prompt's tokens as the next turn would see them (`None`: the backend cannot say).
    pub prompt_tokens: Option<u32>,
    /// Most tokens one ordinary turn may generate.
    pub max_tokens: u32,
    pub ctx_size: u32,
    /// Tokens generated so far in the run.
    pub generated_total: u64,
    pub token_budget: Option<u64>,
}

impl NextTurn {
    /// Why the next turn must be the wrap-up, if it must: it is the round's last, or it might
    /// not fit (its cap, `report::turn_cap`, is below `--max-tokens`, as when the prompt,
    /// `--max-tokens`, the reserve and the turn margin exceed the context), or it could cross
    /// the token budget.
    pub fn wrap_up_reason(&self) -> Option<WrapUpReason> {
        if self.turn >= self.max_turns {
            return Some(WrapUpReason::Turns);
        }
        if self
            .prompt_tokens
            .is_some_and(|used| turn_cap(self.ctx_size, used, self.max_tokens) < self.max_tokens)
        {
            return Some(WrapUpReason::Context);
        }
        if self.token_budget.is_some_and(|budget| {
            self.generated_total
                .saturating_add(u64::from(self.max_tokens))
                > budget
        }) {
            return Some(WrapUpReason::Budget);
        }
        None
    }
}

/// The tool result a call other than the report gets in a wrap-up turn; the tool never runs.
pub(super) fn refusal(name: &str) -> ToolResult {
    ToolResult {
        ok: false,
        output: format!(
            "{name} was not run: this is the round's wrap-up turn and only {REPORT_TOOL} may be called now"
        ),
    }
}

/// When the round must wrap up, and its wrap-up once it has begun.
pub(super) struct WrapUpWatch {
    /// The round's wrap-up, once it has begun.
    pub(super) current: Option<WrapUp>,
    pub(super) max_turns: u32,
    pub(super) token_budget: Option<u64>,
    /// Most tokens one ordinary turn may generate.
    pub(super) max_tokens: u32,
}

impl WrapUpWatch {
    /// Whether the wrap-up has begun: the turns are report only.
    pub(super) fn is_on(&self) -> bool {
        self.current.is_some()
    }

    /// Runs before turn `turn`: ends the round when the budget is spent or the wrap-up has had
    /// its attempts; otherwise starts the wrap-up when the next turn must be it (`wrap_up`,
    /// then the instruction to report now). Before every wrap-up turn the report's reserve is
    /// made free ([`WrapUpWatch::make_room_for_report`]).
    pub(super) fn before_turn(
        &mut self,
        convo: &mut Conversation<'_, '_>,
        child: &mut dyn Child,
        turn: u32,
        generated_total: u64,
    ) -> Result<(), RoundEnd> {
        if self
            .token_budget
            .is_some_and(|budget| generated_total >= budget)
        {
            return Err(RoundEnd::OutOfBudget);
        }
        if let Some(wrap_up) = &mut self.current {
            if wrap_up.turns >= MAX_REPORT_ATTEMPTS {
                return Err(RoundEnd::Failed(format!(
                    "the round ended without a valid report: {} wrap-up turn(s) ({}) filed none",
                    wrap_up.turns,
                    wrap_up.reason.describe()
                )));
            }
            wrap_up.turns += 1;
            return self.make_room_for_report(convo, child);
        }
        let next = NextTurn {
            turn,
            max_turns: self.max_turns,
            prompt_tokens: convo.prompt_tokens(child),
            max_tokens: self.max_tokens,
            ctx_size: convo.ctx_size,
            generated_total,
            token_budget: self.token_budget,
        };
        if let Some(reason) = next.wrap_up_reason() {
            self.begin(convo, reason);
            if let Some(wrap_up) = &mut self.current {
                wrap_up.turns = 1;
            }
            return self.make_room_for_report(convo, child);
        }
        Ok(())
    }

    /// Begins the wrap-up: `wrap_up`, then the instruction to report now. The next turn is
    /// its first report-only turn.
    pub(super) fn begin(&mut self, convo: &mut Conversation<'_, '_>, reason: WrapUpReason) {
        convo.rec.emit(Event::WrapUp {
            round: convo.round,
            reason,
        });
        convo.push(Message::new(Role::User, prompt::wrap_up(reason)));
        self.current = Some(WrapUp { reason, turns: 0 });
    }

    /// Frees the report's reserve before a wrap-up turn: while the prompt leaves less than
    /// [`REPORT_RESERVE_TOKENS`], the largest message that is neither the round prompt, a
    /// generated turn nor the last message (the instruction the child reads now) is cut,
    /// those since the last turn first; when none is left to cut, the round's oldest turns
    /// are left out behind one note. A `warning` says what was done. The round fails only if
    /// the round prompt itself leaves no room, which the run's start already refuses.
    fn make_room_for_report(
        &self,
        convo: &mut Conversation<'_, '_>,
        child: &mut dyn Child,
    ) -> Result<(), RoundEnd> {
        let ctx_size = convo.ctx_size;
        let limit = ctx_size.saturating_sub(REPORT_RESERVE_TOKENS);
        let Some(mut used) = convo.prompt_tokens(child) else {
            return Ok(());
        };
        // The round prompt: everything before the first generated turn.
        let start = convo
            .messages
            .iter()
            .position(|m| m.role == Role::Assistant)
            .unwrap_or(convo.messages.len());
        // The wrap-up's instruction stays whole, wherever it is.
        let instruction = self.current.map(|w| prompt::wrap_up(w.reason));
        let keep = |m: &Message| Some(&m.content) == instruction.as_ref();
        let mut cut = 0usize;
        let mut left_out = 0usize;
        while used > limit {
            let messages = &mut convo.messages;
            let end = messages.len().saturating_sub(1);
            let pending = messages
                .iter()
                .rposition(|m| m.role == Role::Assistant)
                .map_or(start, |i| i + 1);
            let excess = usize::try_from(used - limit).unwrap_or(usize::MAX);
            if let Some(i) = largest_cuttable(messages, pending, end, keep)
                .or_else(|| largest_cuttable(messages, start, end, keep))
            {
                cut_for_report(&mut messages[i], excess);
                cut += 1;
            } else if leave_out_oldest(messages, start, end, left_out > 0, keep) {
                left_out += 1;
            } else {
                break;
            }
            match convo.prompt_tokens(child) {
                Some(now) => used = now,
                None => break,
            }
        }
        if cut + left_out > 0 {
            convo.rec.emit(Event::Warning {
                message: format!(
                    "round {}: to keep the report's reserve free, {cut} message(s) were cut and {left_out} left out of what the child reads",
                    convo.round
                ),
            });
        }
        if used >= ctx_size {
            return Err(RoundEnd::Failed(format!(
                "the context window is full ({used} of {ctx_size} tokens) before a valid report"
            )));
        }
        Ok(())
    }
}

/// Leaves out the oldest message in `start..end` that is not one to `keep`, behind one note
/// at `start` (put there with the first one left out, `noted` after). False when none is left
/// to leave out.
fn leave_out_oldest(
    messages: &mut Vec<Message>,
    start: usize,
    end: usize,
    noted: bool,
    keep: impl Fn(&Message) -> bool,
) -> bool {
    let Some(mut oldest) = (start + usize::from(noted)..end).find(|&j| !keep(&messages[j])) else {
        return false;
    };
    if !noted {
        messages.insert(start, Message::new(Role::User, LEFT_OUT_NOTE));
        oldest += 1;
    }
    messages.remove(oldest);
    true
}

/// Cuts a tool result that would leave less than the report's reserve and the turn margin
/// (the messages that may follow) for the next turn, keeping its start and saying how to ask
/// for the rest. A result that fits, or a backend that cannot count, is left alone.
pub(super) fn fit_tool_result(
    convo: &mut Conversation<'_, '_>,
    child: &mut dyn Child,
    name: &str,
    outcome: ToolResult,
) -> ToolResult {
    let limit = convo
        .ctx_size
        .saturating_sub(REPORT_RESERVE_TOKENS + TURN_MARGIN_TOKENS);
    let Some(full) = convo.tokens_with(child, name, &outcome.output) else {
        return outcome;
    };
    if full <= limit {
        return outcome;
    }
    let total = outcome.output.len();
    let empty = convo.tokens_with(child, name, "").unwrap_or(0);
    let room = u64::from(limit.saturating_sub(empty));
    let spent = u64::from(full.saturating_sub(empty)).max(1);
    let mut keep = usize::try_from(
        u64::try_from(total)
            .unwrap_or(u64::MAX)
            .saturating_mul(room)
            / spent,
    )
    .unwrap_or(total);
    let hint = format!(
        "\n[the result was cut to fit the context window ({total} bytes in all): ask for less at a time, e.g. read_file with offset and limit, a narrower search, or a command with shorter output]"
    );
    loop {
        let mut output = cap_output(outcome.output.clone(), keep);
        output.push_str(&hint);
        let fits = convo
            .tokens_with(child, name, &output)
            .is_none_or(|tokens| tokens <= limit);
        if fits || keep == 0 {
            return ToolResult {
                ok: outcome.ok,
                output,
            };
        }
        keep = keep.saturating_mul(3) / 4;
    }
}

/// What stands where the round's earliest turns were left out to make room for the report.
const LEFT_OUT_NOTE: &str =
    "[the round's earliest turns were left out here to keep room for the report]";

/// Cuts `message` by about `excess` tokens (four bytes a token; the caller cuts again if
/// that was not enough) and the length of the note of the cut that ends it.
fn cut_for_report(message: &mut Message, excess: usize) {
    let content = &message.content;
    let keep = content
        .len()
        .saturating_sub(excess.saturating_mul(4).saturating_add(CUT_MIN_BYTES));
    let kept = crate::text::cut_at_char_boundary(content, keep);
    message.content = format!(
        "{kept}\n[{} bytes cut to keep room for the report]",
        content.len() - kept.len()
    );
}

/// The largest message in `from..to` that may be cut to make room for the report: not a
/// generated turn, not one to `keep` whole, and longer than a note of the cut would be.
fn largest_cuttable(
    messages: &[Message],
    from: usize,
    to: usize,
    keep: impl Fn(&Message) -> bool,
) -> Option<usize> {
    (from..to)
        .filter(|&i| {
            let m = &messages[i];
            m.role != Role::Assistant && m.content.len() > CUT_MIN_BYTES && !keep(m)
        })
        .max_by_key(|&i| messages[i].content.len())
}

/// The round prompt's size against the context, checked before a run writes anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptFit {
    pub prompt_tokens: u32,
    pub reserve: u32,
    pub ctx_size: u32,
}

impl PromptFit {
    pub fn fits(&self) -> bool {
        u64::from(self.prompt_tokens) + u64::from(self.reserve) <= u64::from(self.ctx_size)
    }

    /// One line naming both numbers and the fix.
    pub fn refusal(&self) -> String {
        format!(
            "the round prompt takes {} tokens and the report needs {} more, but the context window is {} tokens: raise --ctx-size (to at least {}) or shorten AGENTS.md",
            self.prompt_tokens,
            self.reserve,
            self.ctx_size,
            u64::from(self.prompt_tokens) + u64::from(self.reserve)
        )
    }
}

/// Measures round 1's fixed prompt (system + first user message, no report yet, the
/// workspace's `AGENTS.md` included) with the backend's own token count. `None` when the
/// backend cannot say (a script whose first round fails, say): the run then goes on and the
/// turn loop's checks still apply.
pub fn check_prompt_fits(
    backend: &mut dyn Backend,
    format: &dyn ChatFormat,
    tools: &[ToolSpec],
    objective: &str,
    max_rounds: u32,
    root: &Path,
) -> Option<PromptFit> {
    let ctx_size = backend.info().ctx_size;
    let agents = prompt::agents_file(root).ok().flatten();
    let tool_instructions = format.tool_instructions(tools);
    let messages = prompt::RoundPrompt {
        objective,
        round: 1,
        max_rounds,
        previous: None,
        agents: agents.as_deref(),
        tool_instructions: &tool_instructions,
        observation: None,
        notes: &[],
    }
    .messages();
    let mut child = backend.new_child(1).ok()?;
    let prompt_tokens = child
        .count_prompt_tokens(Request::new(&messages, tools))
        .ok()?;
    Some(PromptFit {
        prompt_tokens,
        reserve: REPORT_RESERVE_TOKENS + TURN_MARGIN_TOKENS,
        ctx_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next() -> NextTurn {
        NextTurn {
            turn: 1,
            max_turns: 24,
            prompt_tokens: Some(1000),
            max_tokens: 1024,
            ctx_size: 4096,
            generated_total: 0,
            token_budget: None,
        }
    }

    #[test]
    fn the_last_turn_a_tight_context_and_a_near_budget_each_call_for_the_wrap_up() {
        assert_eq!(next().wrap_up_reason(), None);
        let last = NextTurn { turn: 24, ..next() };
        assert_eq!(last.wrap_up_reason(), Some(WrapUpReason::Turns));
        let edge = 4096 - 1024 - REPORT_RESERVE_TOKENS - TURN_MARGIN_TOKENS;
        let fits = NextTurn {
            prompt_tokens: Some(edge),
            ..next()
        };
        assert_eq!(fits.wrap_up_reason(), None);
        let tight = NextTurn {
            prompt_tokens: Some(edge + 1),
            ..next()
        };
        assert_eq!(tight.wrap_up_reason(), Some(WrapUpReason::Context));
        let budget = NextTurn {
            generated_total: 5000,
            token_budget: Some(6000),
            ..next()
        };
        assert_eq!(budget.wrap_up_reason(), Some(WrapUpReason::Budget));
        let room = NextTurn {
            token_budget: Some(6024),
            ..budget
        };
        assert_eq!(room.wrap_up_reason(), None);
    }

    #[test]
    fn a_prompt_that_leaves_no_room_for_the_report_is_refused_with_both_numbers() {
        let fit = PromptFit {
            prompt_tokens: 900,
            reserve: REPORT_RESERVE_TOKENS,
            ctx_size: 1024,
        };
        assert!(!fit.fits());
        let line = fit.refusal();
        assert!(line.contains("900") && line.contains("1024") && line.contains("--ctx-size"));
        assert!(line.contains("AGENTS.md") && !line.contains('\n'));
        assert!(PromptFit {
            ctx_size: 900 + REPORT_RESERVE_TOKENS,
            ..fit
        }
        .fits());
    }
}
