//! One round's child: a fresh llama context, prompt evaluation and token-by-token generation.
//!
//! The context is created empty for the round and dropped with the child. Within the round
//! each turn's prompt extends the previous one (the same messages plus the new ones), so the
//! child keeps the tokens already in the KV cache and evaluates only the new suffix; that reuse
//! never outlives the round. The round's first prompt may start with the run's fixed prefix
//! restored from the backend's prefix cache (see `prefix`). The prompt is evaluated in batches
//! of `--batch-size` tokens, the fixed prefix always as batches of its own; a cancel aborts the
//! batch in progress through llama.cpp's abort callback (see `abort`), and generation also
//! checks it between tokens.

use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;
use tokio_util::sync::CancellationToken;

use super::abort::AbortSlot;
use super::grammar;
use super::prefix::{Prefix, Restore};
use super::sampling::{TurnGrammar, TurnSampler, Utf8Stream};
use super::LlamaBackend;
use crate::llm::progress::{self, ProgressGate, PromptProgress};
use crate::llm::{BackendError, Child, Generation, Output, Request, StopReason};
use crate::protocol::report::turn_cap;
use crate::text::sha256_hex;

/// What llama.cpp's decode returns when the abort callback stopped it.
const DECODE_ABORTED: i32 = 2;

/// Figures of the last turn, for logs and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TurnStats {
    /// Tokens in the whole prompt.
    pub prompt_tokens: u32,
    /// Prompt tokens already in the KV cache from this round's earlier turns.
    pub reused_tokens: u32,
    /// Prompt tokens evaluated this turn.
    pub evaluated_tokens: u32,
    pub prompt_time: Duration,
    pub generated_tokens: u32,
    pub generation_time: Duration,
    /// Tokens the call grammar made the sampler choose again.
    pub resampled: u32,
}

/// The fresh child of one round.
pub struct LlamaChild<'b> {
    backend: &'b LlamaBackend,
    ctx: LlamaContext<'b>,
    batch: LlamaBatch<'static>,
    round: u32,
    turns: u32,
    /// The tokens in the KV cache (sequence 0, positions 0..len).
    cached: Vec<LlamaToken>,
    last_prompt: String,
    last_tokens: Vec<LlamaToken>,
    stats: TurnStats,
    /// Whether the round's fixed prefix has been looked for (once, before the first prompt).
    prepared: bool,
    /// The round's fixed prefix, when its first prompt has one.
    prefix: Option<Prefix>,
    /// Store the prefix's state once its last batch is decoded.
    store_prefix: bool,
    /// Prefix tokens restored from the backend's cache instead of evaluated.
    prefix_reused: u32,
}

enum Decoded {
    Done,
    Full,
    /// The abort callback stopped the decode: the batch's tokens are not in the cache.
    Aborted,
}

/// Disarms the abort slot when the turn ends, however it ends.
struct Armed<'a>(&'a AbortSlot);

impl<'a> Armed<'a> {
    fn new(slot: &'a AbortSlot, cancel: &CancellationToken) -> Self {
        slot.arm(cancel);
        Self(slot)
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.0.disarm();
    }
}

/// How prompt evaluation ended.
enum Prompted {
    /// The prompt is in the cache; sampling starts from this batch index's logits.
    Ready(i32),
    Cancelled,
    ContextFull,
}

impl<'b> LlamaChild<'b> {
    pub(super) fn new(backend: &'b LlamaBackend, ctx: LlamaContext<'b>, round: u32) -> Self {
        let batch = LlamaBatch::new(backend.settings().batch_size.max(1) as usize, 1);
        Self {
            backend,
            ctx,
            batch,
            round,
            turns: 0,
            cached: Vec::new(),
            last_prompt: String::new(),
            last_tokens: Vec::new(),
            stats: TurnStats::default(),
            prepared: false,
            prefix: None,
            store_prefix: false,
            prefix_reused: 0,
        }
    }

    /// The round's fixed prefix, once the first prompt has been seen.
    pub fn prefix(&self) -> Option<&Prefix> {
        self.prefix.as_ref()
    }

    /// Prefix tokens this round restored from the run's prefix cache (0: none).
    pub fn prefix_tokens_reused(&self) -> u32 {
        self.prefix_reused
    }

    /// Evaluates `tokens` into this child's cache (tests and benchmarks: e.g. a prefix alone,
    /// to compare with a restored state).
    pub fn prefill(&mut self, tokens: &[LlamaToken]) -> Result<(), BackendError> {
        match self.eval_prompt(tokens, &CancellationToken::new(), &mut |_| {})? {
            Prompted::Ready(_) => Ok(()),
            Prompted::Cancelled => Err(BackendError::ChildFailed("prefill aborted".into())),
            Prompted::ContextFull => Err(BackendError::ChildFailed("context full".into())),
        }
    }

    /// Decodes `tokens` (at most `--batch-size` of them) as one batch after the cached ones,
    /// with llama.cpp's abort callback watching `cancel` and no check before the decode: `true`
    /// when the callback aborted it (its tokens are then not in the cache). Shows the abort
    /// path works; generation uses it through `generate`.
    pub fn decode_once(
        &mut self,
        tokens: &[LlamaToken],
        cancel: &CancellationToken,
    ) -> Result<bool, BackendError> {
        let _armed = Armed::new(&self.backend.abort, cancel);
        let start = self.cached.len();
        self.batch.clear();
        for (i, &token) in tokens.iter().enumerate() {
            self.add(token, start + i, i + 1 == tokens.len())?;
        }
        match self.decode()? {
            Decoded::Done => {
                self.cached.extend_from_slice(tokens);
                Ok(false)
            }
            Decoded::Full => Err(BackendError::ChildFailed("context full".into())),
            Decoded::Aborted => Ok(true),
        }
    }

    /// Writes sequence 0's state (the KV cache) to `path` with `tokens` as its token list:
    /// two states are equal exactly when their files are.
    pub fn save_state(
        &self,
        path: &std::path::Path,
        tokens: &[LlamaToken],
    ) -> Result<(), BackendError> {
        self.ctx
            .state_seq_save_file(path, 0, tokens)
            .map(|_| ())
            .map_err(|e| BackendError::ChildFailed(format!("cannot save the state: {e}")))
    }

    /// Looks for the round's fixed prefix in its first prompt and restores its state from the
    /// backend's cache when the stored one is for the same tokens. Once per child.
    fn prepare_prefix(&mut self, request: Request<'_>, prompt: &str, tokens: &[LlamaToken]) {
        if self.prepared {
            return;
        }
        self.prepared = true;
        if !self.cached.is_empty() {
            return;
        }
        let prefix = match self.backend.fixed_prefix(request, prompt, tokens) {
            Ok(prefix) => prefix,
            Err(why) => {
                tracing::info!(round = self.round, "no fixed prefix: {why}");
                return;
            }
        };
        match self.backend.prefix.restore(&mut self.ctx, &prefix) {
            Restore::Restored(n) => {
                self.cached = prefix.tokens.clone();
                self.prefix_reused = u32::try_from(n).unwrap_or(0);
                tracing::info!(
                    round = self.round,
                    tokens = n,
                    sha256 = %prefix.sha256,
                    "prefix state restored"
                );
            }
            Restore::Evaluate { store } => self.store_prefix = store,
        }
        self.prefix = Some(prefix);
    }

    /// Tokens held in the KV cache right now (0 for a fresh child).
    pub fn kv_tokens(&self) -> u32 {
        u32::try_from(self.ctx.kv_cache_seq_pos_max(0).saturating_add(1)).unwrap_or(0)
    }

    /// The context window in tokens.
    pub fn n_ctx(&self) -> u32 {
        self.ctx.n_ctx()
    }

    /// The prompt text the last turn rendered and tokenized.
    pub fn last_prompt(&self) -> &str {
        &self.last_prompt
    }

    /// The tokens the last turn's prompt became.
    pub fn last_prompt_tokens(&self) -> &[LlamaToken] {
        &self.last_tokens
    }

    /// Figures of the last turn.
    pub fn last_stats(&self) -> TurnStats {
        self.stats
    }

    fn decode(&mut self) -> Result<Decoded, BackendError> {
        match self.ctx.decode(&mut self.batch) {
            Ok(()) => Ok(Decoded::Done),
            Err(DecodeError::NoKvCacheSlot) => Ok(Decoded::Full),
            Err(DecodeError::Unknown(DECODE_ABORTED)) => Ok(Decoded::Aborted),
            Err(e) => {
                // The cache's state is unknown after a failed decode: start over next turn.
                self.ctx.clear_kv_cache();
                self.cached.clear();
                Err(BackendError::ChildFailed(format!(
                    "llama.cpp decode failed: {e}"
                )))
            }
        }
    }

    fn add(&mut self, token: LlamaToken, pos: usize, logits: bool) -> Result<(), BackendError> {
        let pos = i32::try_from(pos)
            .map_err(|_| BackendError::ChildFailed("position out of range".into()))?;
        self.batch
            .add(token, pos, &[0], logits)
            .map_err(|e| BackendError::ChildFailed(format!("llama batch: {e}")))
    }

    /// Keeps the cached tokens `tokens` starts with, but never its last token (its logits
    /// start the turn), and drops the rest from the KV cache: how many are kept.
    fn keep_cached(&mut self, tokens: &[LlamaToken]) -> usize {
        let mut keep = self
            .cached
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count()
            .min(tokens.len().saturating_sub(1));
        if keep < self.cached.len() {
            let from = u32::try_from(keep).unwrap_or(u32::MAX);
            if self.ctx.kv_cache_seq_rm(0, Some(from), None).is_err() {
                self.ctx.clear_kv_cache();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        keep
    }

    /// Brings the KV cache to `tokens`, reusing the cached prefix; `Err` on a decode failure.
    /// `on_progress` hears how far the evaluation is when it is slow enough to say
    /// (`ProgressGate`).
    fn eval_prompt(
        &mut self,
        tokens: &[LlamaToken],
        cancel: &CancellationToken,
        on_progress: &mut dyn FnMut(PromptProgress),
    ) -> Result<Prompted, BackendError> {
        let keep = self.keep_cached(tokens);
        self.stats.reused_tokens = u32::try_from(keep).unwrap_or(u32::MAX);
        // llama.cpp caps a context's batch at its size.
        let batch_cap = self
            .backend
            .settings()
            .batch_size
            .min(self.ctx.n_batch())
            .max(1) as usize;
        // The fixed prefix ends a batch, so its state can be taken alone and the cached and
        // uncached paths evaluate the same batches.
        let boundary = self
            .prefix
            .as_ref()
            .filter(|p| tokens.starts_with(&p.tokens))
            .map(Prefix::len)
            .filter(|&b| b > keep && b < tokens.len());
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let on_gpu = crate::llm::llama::requested_gpu_layers(self.backend.settings()) > 0;
        let step = progress::batch_step(batch_cap, on_gpu);
        let mut gate = ProgressGate::new(
            count(keep),
            count(tokens.len()),
            count(step),
            self.backend.prompt_rate(),
        );
        if let Some(progress) = gate.begin() {
            on_progress(progress);
        }
        let started = Instant::now();
        let mut pos = keep;
        while pos < tokens.len() {
            if cancel.is_cancelled() {
                return Ok(Prompted::Cancelled);
            }
            let mut end = progress::batch_end(pos, step, tokens.len());
            if let Some(b) = boundary.filter(|&b| pos < b && b < end) {
                end = b;
            }
            self.batch.clear();
            for (i, &token) in tokens[pos..end].iter().enumerate() {
                self.add(token, pos + i, pos + i + 1 == tokens.len())?;
            }
            match self.decode()? {
                Decoded::Done => {}
                Decoded::Full => return Ok(Prompted::ContextFull),
                Decoded::Aborted => return Ok(Prompted::Cancelled),
            }
            self.cached.extend_from_slice(&tokens[pos..end]);
            if boundary == Some(end) && self.store_prefix && self.cached.len() == end {
                self.store_prefix = false;
                if let Some(prefix) = self.prefix.as_ref() {
                    self.backend.prefix.store(&self.ctx, prefix);
                }
            }
            pos = end;
            if let Some(progress) = gate.step(count(end), started.elapsed()) {
                on_progress(progress);
            }
        }
        self.backend
            .note_prompt_rate(tokens.len() - keep, started.elapsed());
        Ok(Prompted::Ready(self.batch.n_tokens() - 1))
    }

    fn seed(&self) -> u32 {
        self.backend
            .settings()
            .seed
            .wrapping_add(self.round.wrapping_mul(0x9E37_79B9))
            .wrapping_add(self.turns)
    }
}

impl Child for LlamaChild<'_> {
    fn count_prompt_tokens(&mut self, request: Request<'_>) -> Result<u32, BackendError> {
        let prompt = self.backend.render_prompt(request)?;
        Ok(u32::try_from(self.backend.tokenize(&prompt).len()).unwrap_or(u32::MAX))
    }

    fn prepare(&mut self, request: Request<'_>) -> Result<u32, BackendError> {
        let prompt = self.backend.render_prompt(request)?;
        let tokens = self.backend.tokenize(&prompt);
        self.prepare_prefix(request, &prompt, &tokens);
        Ok(self.prefix_reused)
    }

    fn generate_streaming(
        &mut self,
        request: Request<'_>,
        on_output: &mut dyn FnMut(Output<'_>),
        cancel: &CancellationToken,
    ) -> Result<Generation, BackendError> {
        let (tokens, prompt_tokens) = self.begin_turn(request)?;
        let _armed = Armed::new(&self.backend.abort, cancel);
        let ended = |stop, text: String, generated| Generation {
            text,
            prompt_tokens,
            generated_tokens: generated,
            stop,
        };
        let n_ctx = self.ctx.n_ctx() as usize;
        if tokens.len() >= n_ctx {
            return Ok(ended(StopReason::ContextFull, String::new(), 0));
        }

        let started = Instant::now();
        let idx = match self.eval_prompt(&tokens, cancel, &mut |progress| {
            on_output(Output::PromptProgress(progress))
        })? {
            Prompted::Cancelled => return Ok(ended(StopReason::Cancelled, String::new(), 0)),
            Prompted::ContextFull => return Ok(ended(StopReason::ContextFull, String::new(), 0)),
            Prompted::Ready(idx) => idx,
        };
        self.stats.prompt_time = started.elapsed();
        self.stats.evaluated_tokens =
            u32::try_from(tokens.len() - usize::try_from(self.stats.reused_tokens).unwrap_or(0))
                .unwrap_or(0);

        let n_ctx_tokens = u32::try_from(n_ctx).unwrap_or(u32::MAX);
        let (grammar, cap) = turn_grammar(self.backend, request, n_ctx_tokens, prompt_tokens);
        let (stop, text) =
            self.sample_turn(request, idx, grammar.as_ref(), cap, on_output, cancel)?;
        self.log_turn_finished(stop);
        Ok(ended(stop, text, self.stats.generated_tokens))
    }
}

impl LlamaChild<'_> {
    /// A turn's first step: renders and tokenizes the prompt, readies the fixed prefix, and
    /// starts the turn's figures. The prompt's tokens and their count.
    fn begin_turn(&mut self, request: Request<'_>) -> Result<(Vec<LlamaToken>, u32), BackendError> {
        self.turns += 1;
        let backend = self.backend;
        let prompt = backend.render_prompt(request)?;
        let tokens = backend.tokenize(&prompt);
        if tokens.is_empty() {
            return Err(BackendError::ChildFailed("the prompt is empty".into()));
        }
        let prompt_tokens = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
        self.prepare_prefix(request, &prompt, &tokens);
        tracing::info!(
            round = self.round,
            turn = self.turns,
            prompt_tokens,
            prompt_sha256 = %sha256_hex(prompt.as_bytes()),
            "prompt tokenized"
        );
        self.last_prompt = prompt;
        self.last_tokens = tokens.clone();
        self.stats = TurnStats {
            prompt_tokens,
            ..TurnStats::default()
        };
        Ok((tokens, prompt_tokens))
    }

    /// The token loop: samples from the logits at batch index `idx`, streams each whole
    /// UTF-8 piece, and decodes each token, until a stop. The stop and the turn's text; the
    /// generation figures go to `self.stats`.
    fn sample_turn(
        &mut self,
        request: Request<'_>,
        mut idx: i32,
        grammar: Option<&TurnGrammar>,
        cap: u32,
        on_output: &mut dyn FnMut(Output<'_>),
        cancel: &CancellationToken,
    ) -> Result<(StopReason, String), BackendError> {
        let backend = self.backend;
        let n_ctx = self.ctx.n_ctx() as usize;
        let mut sampler = TurnSampler::new(
            backend.model(),
            backend.settings(),
            self.seed(),
            grammar,
            backend.structure(),
        );
        let vocab = super::Vocab::of(backend.model());
        let format = backend.format();
        // A wrap-up turn ends with its first complete call: the report. So does any turn of a
        // format that takes one call a turn.
        let one_call = request.report_only || format.one_call_per_turn();
        let started = Instant::now();
        let mut text = String::new();
        let mut utf8 = Utf8Stream::default();
        let mut piece = Vec::new();
        let mut generated = 0u32;
        let stop = loop {
            if cancel.is_cancelled() {
                break StopReason::Cancelled;
            }
            if generated >= cap {
                break StopReason::MaxTokens;
            }
            if self.cached.len() >= n_ctx {
                break StopReason::ContextFull;
            }
            let Some(token) = sampler.sample(&self.ctx, idx) else {
                tracing::warn!("the call grammar allows no token here; ending the turn");
                break StopReason::EndOfTurn;
            };
            if vocab.is_eog(token) {
                break StopReason::EndOfTurn;
            }
            sampler.accept(token);
            generated += 1;
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, true);
            let fresh = utf8.push(&piece);
            if !fresh.is_empty() {
                on_output(Output::Text(&fresh));
                text.push_str(&fresh);
                if one_call && format.parse_partial(&text).1 > 0 {
                    break StopReason::EndOfTurn;
                }
            }
            self.batch.clear();
            self.add(token, self.cached.len(), true)?;
            match self.decode()? {
                Decoded::Done => {}
                Decoded::Full => break StopReason::ContextFull,
                Decoded::Aborted => break StopReason::Cancelled,
            }
            self.cached.push(token);
            idx = 0;
        };
        let tail = utf8.finish();
        if !tail.is_empty() {
            on_output(Output::Text(&tail));
            text.push_str(&tail);
        }
        self.stats.generated_tokens = generated;
        self.stats.generation_time = started.elapsed();
        self.stats.resampled = sampler.resampled;
        Ok((stop, text))
    }

    fn log_turn_finished(&self, stop: StopReason) {
        tracing::debug!(
            round = self.round,
            turn = self.turns,
            reused = self.stats.reused_tokens,
            evaluated = self.stats.evaluated_tokens,
            prompt_ms = self.stats.prompt_time.as_millis() as u64,
            generated = self.stats.generated_tokens,
            generation_ms = self.stats.generation_time.as_millis() as u64,
            resampled = self.stats.resampled,
            ?stop,
            "turn finished"
        );
    }
}

/// A turn's call grammar and token cap. A wrap-up turn may use all the context that is left
/// (the engine keeps at least the report's reserve free), and its grammar bounds the report
/// to fit that room, so the report can never be cut. An ordinary turn stops where the
/// report's reserve and the turn margin would still be free.
fn turn_grammar(
    backend: &LlamaBackend,
    request: Request<'_>,
    n_ctx_tokens: u32,
    prompt_tokens: u32,
) -> (Option<TurnGrammar>, u32) {
    if request.report_only {
        let room = n_ctx_tokens.saturating_sub(prompt_tokens);
        (
            grammar::for_report(backend.format(), request.tools, room),
            room,
        )
    } else {
        (
            grammar::for_turn(backend.format(), request.tools, request.messages),
            turn_cap(
                n_ctx_tokens,
                prompt_tokens,
                request.max_tokens.unwrap_or(backend.settings().max_tokens),
            ),
        )
    }
}
