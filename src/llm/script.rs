//! The script backend: a deterministic stand-in for the model (`--backend script:FILE`).
//!
//! Each turn is the raw text a model would emit for one generation. It is streamed in small
//! pieces and then goes through exactly the same parsing, tools, validation and events as real
//! output, so tests, demos and evals exercise the real engine. Pieces are cut as they stream
//! (no list of a whole turn's pieces), and the run bounds a turn's size for every backend
//! (`llm::bounded`), so a huge scripted turn is cut rather than streamed to the end.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::progress::{ProgressGate, PromptProgress};
use super::{Backend, BackendError, BackendInfo, Child, Generation, Output, Request, StopReason};
use crate::error::UsageError;
use crate::protocol::report::turn_cap;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    #[serde(default)]
    token_delay_ms: u64,
    /// How long each turn's prompt takes to read, as a model's would (its progress is said
    /// as a model's is; 0: at once).
    #[serde(default)]
    prompt_delay_ms: u64,
    /// The context window the script stands in for, in its estimated tokens.
    #[serde(default = "default_ctx_size")]
    ctx_size: u32,
    rounds: Vec<ScriptRound>,
}

fn default_ctx_size() -> u32 {
    SCRIPT_CTX_SIZE
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum ScriptRound {
    Turns { turns: Vec<String> },
    Fail { fail: String },
}

/// The context size the script backend reports unless the script names one (`ctx_size`, in
/// its estimated tokens): large enough never to matter.
pub const SCRIPT_CTX_SIZE: u32 = 131_072;

/// A loaded, validated script.
#[derive(Debug, Clone)]
pub struct ScriptBackend {
    path: PathBuf,
    token_delay: Duration,
    prompt_delay: Duration,
    ctx_size: u32,
    rounds: Vec<ScriptRound>,
    /// The format its turns are written in (`--chat-format`; `hermes` unless named).
    chat_format: String,
}

impl ScriptBackend {
    /// Reads and validates a script file; any problem is a usage error naming the file.
    pub fn load(path: &Path) -> Result<Self, UsageError> {
        let err = |message: String| UsageError::Script {
            path: path.to_path_buf(),
            message,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| err(format!("cannot read it: {e}")))?;
        Self::parse(path, &text).map_err(err)
    }

    /// Parses script text (exposed for tests and evals that build scripts in memory).
    pub fn parse(path: &Path, text: &str) -> Result<Self, String> {
        let file: ScriptFile = serde_json::from_str(text).map_err(|e| {
            format!(
                "not a valid script ({}); expected {{\"rounds\": [{{\"turns\": [\"...\"]}} or {{\"fail\": \"...\"}}]}}",
                crate::error::in_plain_words(&e.to_string())
            )
        })?;
        if file.rounds.is_empty() {
            return Err("the script has no rounds".into());
        }
        Ok(Self {
            path: path.to_path_buf(),
            token_delay: Duration::from_millis(file.token_delay_ms),
            prompt_delay: Duration::from_millis(file.prompt_delay_ms),
            ctx_size: file.ctx_size,
            rounds: file.rounds,
            chat_format: "hermes".into(),
        })
    }

    /// Reads the turns in the format `name` (`--chat-format`; `auto` or none: `hermes`).
    pub fn with_chat_format(mut self, name: Option<&str>) -> Result<Self, UsageError> {
        if let Some(name) = name.filter(|n| *n != "auto") {
            let format = crate::chat::by_name(name).ok_or_else(|| {
                UsageError::Invalid(format!(
                    "unknown --chat-format '{name}': use auto or one of {}",
                    crate::chat::FORMAT_NAMES.join(", ")
                ))
            })?;
            self.chat_format = format.name().to_string();
        }
        Ok(self)
    }
}

impl ScriptBackend {
    /// The script's per-turn token bound: its longest turn, in the pieces it streams.
    fn longest_turn(&self) -> u32 {
        let longest = self
            .rounds
            .iter()
            .filter_map(|round| match round {
                ScriptRound::Turns { turns } => turns.iter().map(|t| piece_iter(t).count()).max(),
                ScriptRound::Fail { .. } => None,
            })
            .max()
            .unwrap_or(0);
        u32::try_from(longest).unwrap_or(u32::MAX)
    }
}

impl Backend for ScriptBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: format!("script:{}", self.path.display()),
            model: None,
            device: "script".into(),
            ctx_size: self.ctx_size,
            max_tokens: self.longest_turn(),
            chat_format: self.chat_format.clone(),
            native_tools: false,
        }
    }

    fn new_child(&mut self, round: u32) -> Result<Box<dyn Child + '_>, BackendError> {
        let index = usize::try_from(round.saturating_sub(1)).unwrap_or(usize::MAX);
        match self.rounds.get(index) {
            None => Err(BackendError::Exhausted(format!(
                "the script has {} round(s) and the run needs round {round}",
                self.rounds.len()
            ))),
            Some(ScriptRound::Fail { fail }) => Err(BackendError::ChildFailed(fail.clone())),
            Some(ScriptRound::Turns { turns }) => Ok(Box::new(ScriptChild {
                round,
                turns,
                next: 0,
                token_delay: self.token_delay,
                prompt_delay: self.prompt_delay,
                ctx_size: self.ctx_size,
            })),
        }
    }
}

struct ScriptChild<'a> {
    round: u32,
    turns: &'a [String],
    next: usize,
    token_delay: Duration,
    prompt_delay: Duration,
    ctx_size: u32,
}

/// The steps a scripted prompt is read in.
const PROMPT_STEPS: u32 = 20;

impl ScriptChild<'_> {
    /// Reads the prompt as a model would: `prompt_delay` in [`PROMPT_STEPS`] steps, its
    /// progress said through the same gate as the llama backend's.
    fn read_prompt(
        &self,
        total: u32,
        on_progress: &mut dyn FnMut(PromptProgress),
        cancel: &CancellationToken,
    ) {
        if self.prompt_delay.is_zero() || total == 0 {
            return;
        }
        let step = total.div_ceil(PROMPT_STEPS).max(1);
        let mut gate = ProgressGate::new(0, total, step, None);
        if let Some(progress) = gate.begin() {
            on_progress(progress);
        }
        let started = std::time::Instant::now();
        let mut done = 0;
        while done < total && !cancel.is_cancelled() {
            wait(self.prompt_delay / PROMPT_STEPS, cancel);
            done = (done + step).min(total);
            if let Some(progress) = gate.step(done, started.elapsed()) {
                on_progress(progress);
            }
        }
    }
}

/// Splits text into small, token-like pieces: words with their trailing space, long words cut
/// every 8 characters.
pub fn pieces(text: &str) -> Vec<&str> {
    piece_iter(text).collect()
}

/// [`pieces`] one at a time, so a long turn streams without a list of all its pieces.
fn piece_iter(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(char::is_whitespace).flat_map(|word| {
        let mut rest = word;
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let cut = rest
                .char_indices()
                .nth(8)
                .map(|(i, _)| i)
                .unwrap_or(rest.len());
            let (piece, tail) = rest.split_at(cut);
            rest = tail;
            Some(piece)
        })
    })
}

fn wait(delay: Duration, cancel: &CancellationToken) {
    if delay.is_zero() {
        return;
    }
    let step = Duration::from_millis(10);
    let mut left = delay;
    while !left.is_zero() && !cancel.is_cancelled() {
        let nap = left.min(step);
        std::thread::sleep(nap);
        left -= nap;
    }
}

impl Child for ScriptChild<'_> {
    fn count_prompt_tokens(&mut self, request: Request<'_>) -> Result<u32, BackendError> {
        let bytes: usize = request.messages.iter().map(|m| m.content.len()).sum();
        Ok(u32::try_from(bytes.div_ceil(4)).unwrap_or(u32::MAX))
    }

    fn generate_streaming(
        &mut self,
        request: Request<'_>,
        on_output: &mut dyn FnMut(Output<'_>),
        cancel: &CancellationToken,
    ) -> Result<Generation, BackendError> {
        let prompt_tokens = self.count_prompt_tokens(request)?;
        self.read_prompt(
            prompt_tokens,
            &mut |p| on_output(Output::PromptProgress(p)),
            cancel,
        );
        let mut on_text = |piece: &str| on_output(Output::Text(piece));
        let Some(turn) = self.turns.get(self.next) else {
            return Err(BackendError::Exhausted(format!(
                "script round {} has no turn {} (it has {})",
                self.round,
                self.next + 1,
                self.turns.len()
            )));
        };
        self.next += 1;
        // As a model's: an ordinary turn stops where the report's reserve would no longer be
        // free, a wrap-up turn where the context would be full (a model's report grammar
        // keeps its report shorter; a scripted wrap-up turn that is no report is cut, and the
        // wrap-up goes on). The text is measured as the prompt is (four bytes a token), so
        // what a turn adds to the context is what its cap allows.
        let cap = if request.report_only {
            self.ctx_size.saturating_sub(prompt_tokens)
        } else {
            turn_cap(self.ctx_size, prompt_tokens, u32::MAX)
        };
        let mut text = String::with_capacity(turn.len());
        let mut generated = 0u32;
        for piece in piece_iter(turn) {
            let in_context =
                u32::try_from((text.len() + piece.len()).div_ceil(4)).unwrap_or(u32::MAX);
            if in_context > cap {
                return Ok(Generation {
                    text,
                    prompt_tokens,
                    generated_tokens: generated,
                    stop: StopReason::MaxTokens,
                });
            }
            if cancel.is_cancelled() {
                return Ok(Generation {
                    text,
                    prompt_tokens,
                    generated_tokens: generated,
                    stop: StopReason::Cancelled,
                });
            }
            text.push_str(piece);
            generated += 1;
            on_text(piece);
            wait(self.token_delay, cancel);
        }
        Ok(Generation {
            text,
            prompt_tokens,
            generated_tokens: generated,
            stop: StopReason::EndOfTurn,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_rejoin_to_the_text() {
        let text = "héllo  wörld <tool_call>{\"name\": \"x\"}</tool_call>\n";
        assert_eq!(pieces(text).concat(), text);
        assert!(pieces(text).iter().all(|p| p.chars().count() <= 8));
        assert_eq!(pieces("").len(), 0);
        assert_eq!(pieces("abcdefghij").concat(), "abcdefghij");
    }

    #[test]
    fn malformed_scripts_say_what_is_wrong() {
        let p = Path::new("s.json");
        assert!(ScriptBackend::parse(p, "{")
            .unwrap_err()
            .contains("not a valid script"));
        assert!(ScriptBackend::parse(p, r#"{"rounds": []}"#)
            .unwrap_err()
            .contains("no rounds"));
        assert!(ScriptBackend::parse(p, r#"{"rounds": [{"nope": 1}]}"#).is_err());
        assert!(
            ScriptBackend::parse(p, r#"{"rounds": [{"turns": ["a"]}, {"fail": "x"}]}"#).is_ok()
        );
    }
}
