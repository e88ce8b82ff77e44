//! Token sampling for one turn: the configured chain, an optional call grammar, and a UTF-8
//! decoder that carries partial characters across token boundaries.
//!
//! The grammar is checked, not applied up front: the chain samples freely, the one chosen
//! token is tested against the grammar, and only when the grammar rejects it is the whole
//! vocabulary filtered by the grammar and sampled again (grammar first, then the chain). That
//! keeps constrained output exactly as constrained while costing the full grammar pass only on
//! the rare rejected token. Grammar-first is the only safe order: a chain that trims
//! candidates before the grammar can leave it nothing valid, and llama.cpp then aborts.
//! Tokens are accepted with `try_accept`, which turns llama.cpp's grammar exceptions into
//! errors instead of aborting the process.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;

use crate::llm::settings::InferenceSettings;

/// How many recent tokens the repeat penalty looks at.
const PENALTY_LAST_N: i32 = 64;

/// The grammar a turn samples under.
pub enum TurnGrammar {
    /// Free until one of the trigger words, then the GBNF (root `root`).
    Lazy { gbnf: String, triggers: Vec<String> },
    /// The whole turn follows the GBNF (root `root`).
    Required { gbnf: String },
}

/// One turn's sampler.
pub struct TurnSampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
    candidates: Vec<LlamaTokenData>,
    /// Times the grammar rejected the chain's choice (for the log).
    pub resampled: u32,
}

/// The sampling chain: `banned` tokens first (never chosen, whatever the settings), then the
/// repeat penalty, then greedy or the top-k, top-p, min-p, temperature and seeded draw.
fn chain(
    settings: &InferenceSettings,
    seed: u32,
    n_vocab: i32,
    banned: &[LlamaToken],
) -> LlamaSampler {
    let mut stages = Vec::new();
    if !banned.is_empty() {
        let biases: Vec<LlamaLogitBias> = banned
            .iter()
            .map(|&t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
            .collect();
        stages.push(LlamaSampler::logit_bias(n_vocab, &biases));
    }
    if (settings.repeat_penalty - 1.0).abs() > f32::EPSILON && settings.repeat_penalty > 0.0 {
        stages.push(LlamaSampler::penalties(
            PENALTY_LAST_N,
            settings.repeat_penalty,
            0.0,
            0.0,
        ));
    }
    if settings.temperature <= 0.0 {
        stages.push(LlamaSampler::greedy());
    } else {
        if settings.top_k > 0 {
            stages.push(LlamaSampler::top_k(settings.top_k));
        }
        if settings.top_p > 0.0 && settings.top_p < 1.0 {
            stages.push(LlamaSampler::top_p(settings.top_p, 1));
        }
        if settings.min_p > 0.0 {
            stages.push(LlamaSampler::min_p(settings.min_p, 1));
        }
        stages.push(LlamaSampler::temp(settings.temperature));
        stages.push(LlamaSampler::dist(seed));
    }
    LlamaSampler::chain_simple(stages)
}

impl TurnSampler {
    /// Builds the chain, with `banned` never sampled, and, when given, the grammar. A grammar
    /// llama.cpp cannot parse is logged and dropped: the turn is then sampled unconstrained
    /// rather than failing.
    pub fn new(
        model: &LlamaModel,
        settings: &InferenceSettings,
        seed: u32,
        grammar: Option<&TurnGrammar>,
        banned: &[LlamaToken],
    ) -> Self {
        let grammar = grammar.and_then(|g| {
            let built = match g {
                TurnGrammar::Lazy { gbnf, triggers } => {
                    LlamaSampler::grammar_lazy(model, gbnf, "root", triggers, &[])
                }
                TurnGrammar::Required { gbnf } => LlamaSampler::grammar(model, gbnf, "root"),
            };
            match built {
                Ok(sampler) => Some(sampler),
                Err(e) => {
                    tracing::error!("the call grammar does not load ({e}); sampling without it");
                    None
                }
            }
        });
        Self {
            chain: chain(settings, seed, model.n_vocab(), banned),
            grammar,
            candidates: Vec::new(),
            resampled: 0,
        }
    }

    fn fill(
        buffer: &mut Vec<LlamaTokenData>,
        ctx: &LlamaContext<'_>,
        idx: i32,
    ) -> LlamaTokenDataArray {
        let mut data = std::mem::take(buffer);
        data.clear();
        data.extend(
            (0_i32..)
                .zip(ctx.get_logits_ith(idx))
                .map(|(id, logit)| LlamaTokenData::new(LlamaToken::new(id), *logit, 0.0)),
        );
        LlamaTokenDataArray::new(data, false)
    }

    /// Samples the next token from output `idx` of the last decode. `None` when nothing can
    /// be sampled (the grammar allows no token at all).
    pub fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> Option<LlamaToken> {
        let mut array = Self::fill(&mut self.candidates, ctx, idx);
        array.apply_sampler(&self.chain);
        let mut chosen = array.selected_token();
        if let (Some(grammar), Some(token)) = (self.grammar.as_ref(), chosen) {
            let mut single =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            single.apply_sampler(grammar);
            let allowed = single.data.first().is_some_and(|d| d.logit().is_finite());
            if !allowed {
                self.resampled += 1;
                self.candidates = array.data;
                array = Self::fill(&mut self.candidates, ctx, idx);
                array.apply_sampler(grammar);
                array.apply_sampler(&self.chain);
                chosen = array
                    .selected
                    .and_then(|i| array.data.get(i))
                    .filter(|d| d.logit().is_finite())
                    .map(LlamaTokenData::id);
            }
        }
        self.candidates = array.data;
        chosen
    }

    /// Records a sampled token in the chain (repeat penalty) and the grammar.
    pub fn accept(&mut self, token: LlamaToken) {
        self.chain.accept(token);
        if let Some(grammar) = self.grammar.as_mut() {
            if let Err(e) = grammar.try_accept(token) {
                tracing::warn!(
                    "the call grammar rejected an accepted token ({e}); dropping it for this turn"
                );
                self.grammar = None;
            }
        }
    }
}

/// Decodes a byte stream into UTF-8 text piece by piece, holding back an incomplete character
/// until its remaining bytes arrive; invalid bytes become U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes and returns the text that is now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                        None => {
                            self.pending.drain(..valid);
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    /// Ends the stream: an incomplete character left over becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        self.pending.clear();
        char::REPLACEMENT_CHARACTER.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_anywhere_decodes_the_same() {
        let text = "héllo wörld ✓ 🦀 done";
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            for cut2 in cut..bytes.len() {
                let mut s = Utf8Stream::default();
                let mut out = s.push(&bytes[..cut]);
                out.push_str(&s.push(&bytes[cut..cut2]));
                out.push_str(&s.push(&bytes[cut2..]));
                out.push_str(&s.finish());
                assert_eq!(out, text);
            }
        }
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut s = Utf8Stream::default();
        assert_eq!(s.push(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(s.push(b"\xe2\x9c"), "");
        assert_eq!(s.finish(), "\u{fffd}");
    }
}
