//! Speculative decoding, measured before anything of it goes into the backend: would a small
//! draft model of the same tokenizer make greedy generation faster on this machine?
//!
//! Both models decode greedily on bare contexts (llama.cpp alone, no sampler chain, no
//! grammar). The plain arm generates one target token per decode. The drafted arm lets the
//! draft propose `k` tokens, verifies them in one target batch with logits at every position,
//! accepts the longest prefix that matches the target's own argmax, adds the target's token at
//! the first mismatch (or after all `k`), and removes the rejected positions from both KV
//! caches. Runs alternate plain / drafted per `k` (A/B/A/B) so a load change on the machine
//! hits both arms; the figures are medians. Generation time starts once the prompt is in both
//! caches; the draft's own prompt evaluation is shown beside it. The plain arm also notes its
//! top two logits at every token, to say why a drafted output differs; that scan is timed in
//! the plain arm, so it can only flatter the draft.

use std::path::Path;
use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use ralph_tui::llm::llama::{LlamaBackend, Vocab};
use ralph_tui::llm::settings::InferenceSettings;
use ralph_tui::llm::Request;
use ralph_tui::protocol::message::{Message, Role};

use super::median;

/// One model's context and the tokens in its KV cache (sequence 0, positions 0..len).
struct Decoder<'m> {
    ctx: LlamaContext<'m>,
    model: &'m LlamaModel,
    batch: LlamaBatch<'static>,
    cached: Vec<LlamaToken>,
}

impl<'m> Decoder<'m> {
    fn new(backend: &'m LlamaBackend) -> Self {
        Self {
            ctx: backend.bare_context().unwrap(),
            model: backend.model(),
            batch: LlamaBatch::new(512, 1),
            cached: Vec::new(),
        }
    }

    /// Decodes `tokens` after the cached ones in batches of up to 512, with logits for every
    /// token of the last batch (`all`) or for its last token only.
    fn eval(&mut self, tokens: &[LlamaToken], all: bool) {
        for chunk in tokens.chunks(512) {
            self.batch.clear();
            let start = self.cached.len();
            for (i, &t) in chunk.iter().enumerate() {
                let pos = i32::try_from(start + i).unwrap();
                self.batch
                    .add(t, pos, &[0], all || i + 1 == chunk.len())
                    .unwrap();
            }
            self.ctx.decode(&mut self.batch).unwrap();
            self.cached.extend_from_slice(chunk);
        }
    }

    /// The greedy choice at batch index `idx` of the last decode: the first highest logit,
    /// as llama.cpp's greedy sampler picks it.
    /// The two highest logits at batch index `idx`: (best, runner-up, its logit, best logit).
    fn top_two(&self, idx: usize) -> (LlamaToken, LlamaToken, f32, f32) {
        let logits = self.ctx.get_logits_ith(i32::try_from(idx).unwrap());
        let best = self.argmax(idx);
        let (mut second, mut second_logit) = (0, f32::NEG_INFINITY);
        for (i, &l) in logits.iter().enumerate() {
            if i != best.0 as usize && l > second_logit {
                (second, second_logit) = (i, l);
            }
        }
        let token = LlamaToken::new(i32::try_from(second).unwrap());
        (best, token, second_logit, logits[best.0 as usize])
    }

    fn argmax(&self, idx: usize) -> LlamaToken {
        let logits = self.ctx.get_logits_ith(i32::try_from(idx).unwrap());
        let mut best = 0;
        for (i, &l) in logits.iter().enumerate() {
            if l > logits[best] {
                best = i;
            }
        }
        LlamaToken::new(i32::try_from(best).unwrap())
    }

    /// Drops every cached position from `len` on.
    fn truncate(&mut self, len: usize) {
        if len < self.cached.len() {
            let from = u32::try_from(len).unwrap();
            self.ctx.kv_cache_seq_rm(0, Some(from), None).unwrap();
            self.cached.truncate(len);
        }
    }

    fn is_eog(&self, t: LlamaToken) -> bool {
        Vocab::of(self.model).is_eog(t)
    }
}

/// One generation: its tokens, the time after the prompt, and the draft's figures.
struct Run {
    tokens: Vec<LlamaToken>,
    time: Duration,
    draft_prompt: Duration,
    proposed: u32,
    accepted: u32,
    /// Time in the draft's decodes, and in the target's verifying batches and their count.
    drafting: Duration,
    verifying: Duration,
    steps: u32,
    /// The plain run's top two choices at each token (see `Decoder::top_two`).
    top_two: Vec<(LlamaToken, LlamaToken, f32, f32)>,
}

impl Run {
    fn tok_s(&self) -> f64 {
        self.tokens.len() as f64 / self.time.as_secs_f64()
    }
}

/// Greedy decoding on the target alone.
fn plain(target: &LlamaBackend, prompt: &[LlamaToken], max: usize) -> Run {
    let mut t = Decoder::new(target);
    t.eval(prompt, false);
    let started = Instant::now();
    let mut out = Vec::new();
    let mut idx = t.batch.n_tokens() as usize - 1;
    let mut top_two = Vec::new();
    while out.len() < max {
        let token = t.argmax(idx);
        top_two.push(t.top_two(idx));
        if t.is_eog(token) {
            break;
        }
        out.push(token);
        if out.len() == max {
            break;
        }
        t.eval(&[token], false);
        idx = 0;
    }
    Run {
        tokens: out,
        time: started.elapsed(),
        draft_prompt: Duration::ZERO,
        proposed: 0,
        accepted: 0,
        drafting: Duration::ZERO,
        verifying: Duration::ZERO,
        steps: 0,
        top_two,
    }
}

/// Greedy decoding with `draft` proposing `k` tokens a step.
fn drafted(
    target: &LlamaBackend,
    draft: &LlamaBackend,
    prompt: &[LlamaToken],
    max: usize,
    k: usize,
) -> Run {
    let mut t = Decoder::new(target);
    let mut d = Decoder::new(draft);
    t.eval(prompt, false);
    let draft_started = Instant::now();
    d.eval(&prompt[..prompt.len() - 1], false);
    let draft_prompt = draft_started.elapsed();
    let started = Instant::now();
    let mut out = Vec::new();
    let (mut proposed, mut accepted, mut steps) = (0u32, 0u32, 0u32);
    let (mut drafting, mut verifying) = (Duration::ZERO, Duration::ZERO);
    // The target's next token: already chosen, in neither cache yet.
    let mut next = t.argmax(t.batch.n_tokens() as usize - 1);
    // `t.cached` is the prompt plus `out`; `next` follows it.
    'outer: while out.len() < max && !t.is_eog(next) {
        out.push(next);
        if out.len() >= max {
            break;
        }
        // The draft catches up (tokens accepted after its last proposal) and proposes.
        let mut context = t.cached[d.cached.len()..].to_vec();
        context.push(next);
        let room = (max - out.len()).min(k);
        let mut proposal = Vec::with_capacity(room);
        let drafting_started = Instant::now();
        for _ in 0..room {
            d.eval(&context, false);
            let p = d.argmax(d.batch.n_tokens() as usize - 1);
            proposal.push(p);
            if d.is_eog(p) {
                break;
            }
            context = vec![p];
        }
        drafting += drafting_started.elapsed();
        proposed += proposal.len() as u32;
        steps += 1;
        // The target verifies `next` and the proposal in one batch.
        let base = t.cached.len();
        let mut verify = vec![next];
        verify.extend_from_slice(&proposal);
        let verifying_started = Instant::now();
        t.eval(&verify, true);
        verifying += verifying_started.elapsed();
        let mut m = 0;
        let mut choice = t.argmax(0);
        while m < proposal.len() && proposal[m] == choice {
            m += 1;
            accepted += 1;
            if t.is_eog(choice) {
                break 'outer;
            }
            out.push(choice);
            if out.len() >= max {
                break 'outer;
            }
            choice = t.argmax(m);
        }
        t.truncate(base + 1 + m);
        d.truncate(d.cached.len().min(base + 1 + m));
        next = choice;
    }
    Run {
        tokens: out,
        time: started.elapsed(),
        draft_prompt,
        proposed,
        accepted,
        drafting,
        verifying,
        steps,
        top_two: Vec::new(),
    }
}

/// Says where a drafted output first differs from the plain one and how close the target's
/// top two choices were there in the plain run: a near-tie that batch and single-token
/// decoding round differently, or a real divergence.
fn explain_difference(plain: &Run, drafted: &Run) {
    let at = plain
        .tokens
        .iter()
        .zip(&drafted.tokens)
        .take_while(|(a, b)| a == b)
        .count();
    if let Some(&(first, second, second_logit, first_logit)) = plain.top_two.get(at) {
        println!(
            "    outputs part at token {at}: plain {} ({first_logit:.3}), drafted {:?}; plain's runner-up {} ({second_logit:.3}), margin {:.3}",
            first.0,
            drafted.tokens.get(at).map(|t| t.0),
            second.0,
            first_logit - second_logit
        );
    }
}

/// The coding prompt in the target's chat template, tokenized.
fn coding_prompt(target: &LlamaBackend) -> Vec<LlamaToken> {
    let messages = [
        Message::new(Role::System, "You are a careful Rust programmer."),
        Message::new(
            Role::User,
            "Write a Rust function that parses a semantic version string like \"1.2.3-beta.1\" \
             into a struct with major, minor, patch and an optional pre-release, returning a \
             Result with a descriptive error type. Include unit tests.",
        ),
    ];
    let text = target
        .render_prompt(Request {
            messages: &messages,
            tools: &[],
            report_only: false,
            max_tokens: None,
        })
        .unwrap();
    target.tokenize(&text)
}

/// What to measure: up to `gen` generated tokens, `reps` alternating runs per draft length.
pub struct Runs<'a> {
    pub gen: usize,
    pub reps: usize,
    pub lengths: &'a [usize],
}

/// Plain against drafted greedy generation for each draft length.
pub fn measure(target_path: &Path, draft_path: &Path, settings: &InferenceSettings, runs: &Runs) {
    let Runs { gen, reps, lengths } = *runs;
    let target = LlamaBackend::load(target_path, settings, None).unwrap();
    let draft = LlamaBackend::load(draft_path, settings, None).unwrap();
    let prompt = coding_prompt(&target);
    println!(
        "speculative: target {}, draft {}, {} prompt tokens, up to {gen} generated, greedy, {} threads",
        target_path.display(),
        draft_path.display(),
        prompt.len(),
        settings.threads
    );
    for &k in lengths {
        let (mut a, mut b, mut rates, mut draft_ms) = (vec![], vec![], vec![], vec![]);
        let (mut token_ms, mut draft_step_ms, mut verify_ms) = (vec![], vec![], vec![]);
        let mut identical = true;
        for _ in 0..reps {
            let base = plain(&target, &prompt, gen);
            let spec = drafted(&target, &draft, &prompt, gen, k);
            if base.tokens != spec.tokens {
                identical = false;
                explain_difference(&base, &spec);
            }
            a.push(base.tok_s());
            b.push(spec.tok_s());
            rates.push(f64::from(spec.accepted) / f64::from(spec.proposed.max(1)));
            draft_ms.push(spec.draft_prompt.as_secs_f64() * 1000.0);
            let steps = f64::from(spec.steps.max(1));
            token_ms.push(1000.0 / base.tok_s());
            draft_step_ms.push(spec.drafting.as_secs_f64() * 1000.0 / steps);
            verify_ms.push(spec.verifying.as_secs_f64() * 1000.0 / steps);
            println!(
                "  k={k}: plain {:6.2} tok/s ({} tokens), drafted {:6.2} tok/s ({} tokens, {}/{} accepted)",
                base.tok_s(),
                base.tokens.len(),
                spec.tok_s(),
                spec.tokens.len(),
                spec.accepted,
                spec.proposed
            );
        }
        let (a, b) = (median(a), median(b));
        println!(
            "speculative k={k}: plain {a:6.2} tok/s, drafted {b:6.2} tok/s ({:.2}×, goal ≥ 1.30), acceptance {:.0}%, draft prompt {:.0} ms, output {}",
            b / a.max(f64::MIN_POSITIVE),
            100.0 * median(rates),
            median(draft_ms),
            if identical { "identical" } else { "DIFFERS" }
        );
        println!(
            "speculative k={k}: a target token {:.0} ms; a step drafts {k} tokens in {:.0} ms and verifies {} in one batch in {:.0} ms",
            median(token_ms),
            median(draft_step_ms),
            k + 1,
            median(verify_ms)
        );
    }
}
