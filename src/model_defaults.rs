//! The defaults a run takes from its model file where neither the command line nor the
//! config file sets a value: the context size (the model's trained context, at most
//! [`CTX_CEILING`], and no more than free memory holds for the KV cache) and sampling (the
//! GGUF's `general.sampling.*` keys, as llama.cpp names them, else [`CODING`]: a coding agent's
//! low temperature and no repeat penalty).
//!
//! Everything here is a pure function of the GGUF metadata and a memory figure, so tests need
//! neither a real model nor a machine of a given size; only [`mem_available`] reads the system.

use crate::model_file::ModelMeta;

/// Where a setting's value came from, as `run.json`'s `settings.sources` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Given on the command line.
    CommandLine,
    /// Set in the config file.
    ConfigFile,
    /// Taken from the run a resumed run continues (its `run.json`).
    ResumedRun,
    /// Read from the model file's metadata (for the context: its trained context, at most
    /// 16,384 tokens).
    Model,
    /// The model's context, lowered to what free memory holds for the KV cache.
    MemoryCap,
    /// The built-in default.
    Default,
}

/// The largest context a default gives, whatever the model was trained with.
pub const CTX_CEILING: u32 = 16_384;

/// The context size without a model to read it from (a script, or a server that says none).
pub const FALLBACK_CTX: u32 = 4096;

/// The smallest context a run accepts (`--ctx-size`), and the floor of the memory cap.
pub const MIN_CTX: u32 = 256;

/// Bytes per KV-cache element: llama.cpp's default cache type, f16.
pub const KV_BYTES_PER_VALUE: u64 = 2;

/// Sampling values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
}

/// The built-in sampling defaults: near-greedy, since a coding agent wants the likeliest
/// call, and no repeat penalty, which would punish the repeated syntax of code and JSON.
pub const CODING: Sampling = Sampling {
    temperature: 0.2,
    top_k: 40,
    top_p: 0.95,
    min_p: 0.05,
    repeat_penalty: 1.0,
};

/// A default context size and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextChoice {
    pub ctx_size: u32,
    pub source: Source,
}

/// The memory the KV cache may take: three quarters of what is available (the rest is
/// headroom for llama.cpp's compute buffers and everything else), less the model's weights,
/// which are mapped and paged in as they are read.
pub fn kv_budget(available: u64, model_bytes: u64) -> u64 {
    (available / 4 * 3).saturating_sub(model_bytes)
}

/// The default context size: the trained context (else [`FALLBACK_CTX`]) at most
/// [`CTX_CEILING`], then capped by what `budget` bytes of KV cache hold at `kv_per_token`
/// bytes a token (rounded down to a multiple of 256, never below [`MIN_CTX`]). Without a
/// figure for either, no memory cap applies.
pub fn context_size(
    trained: Option<u32>,
    kv_per_token: Option<u64>,
    budget: Option<u64>,
) -> ContextChoice {
    let (base, source) = match trained {
        Some(n) => (n.min(CTX_CEILING), Source::Model),
        None => (FALLBACK_CTX, Source::Default),
    };
    let fits = match (kv_per_token.filter(|&n| n > 0), budget) {
        (Some(per_token), Some(budget)) => budget / per_token,
        _ => u64::MAX,
    };
    if fits >= u64::from(base) {
        return ContextChoice {
            ctx_size: base,
            source,
        };
    }
    let capped = u32::try_from(fits / 256 * 256).unwrap_or(u32::MAX);
    ContextChoice {
        ctx_size: capped.max(MIN_CTX),
        source: Source::MemoryCap,
    }
}

/// The sampling values the model's metadata recommends (`general.sampling.top_k`, `top_p`,
/// `min_p`, `temp`, `penalty_repeat`), each `None` where the key is missing or its value is
/// out of range.
pub fn model_sampling(meta: &ModelMeta) -> SamplingHints {
    let float = |key: &str| meta.float(&format!("general.sampling.{key}"));
    let within = |key: &str, ok: fn(f64) -> bool| {
        float(key)
            .filter(|x| x.is_finite() && ok(*x))
            .map(|x| x as f32)
    };
    SamplingHints {
        temperature: within("temp", |x| x >= 0.0),
        top_k: meta
            .int("general.sampling.top_k")
            .and_then(|n| i32::try_from(n).ok())
            .filter(|&n| n >= 0),
        top_p: within("top_p", |x| x > 0.0 && x <= 1.0),
        min_p: within("min_p", |x| (0.0..=1.0).contains(&x)),
        repeat_penalty: within("penalty_repeat", |x| x > 0.0),
    }
}

/// Sampling values a model recommends; each may be missing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SamplingHints {
    pub temperature: Option<f32>,
    pub top_k: Option<i32>,
    pub top_p: Option<f32>,
    pub min_p: Option<f32>,
    pub repeat_penalty: Option<f32>,
}

/// `MemAvailable` from `/proc/meminfo`, in bytes; `None` where the system does not say.
pub fn mem_available() -> Option<u64> {
    parse_mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// The `MemAvailable:` line of a meminfo text, in bytes.
pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       32768000 kB\nMemFree:  100 kB\nMemAvailable:   23624820 kB\n";
        assert_eq!(parse_mem_available(text), Some(23_624_820 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn the_budget_leaves_a_quarter_and_the_weights() {
        assert_eq!(kv_budget(4 << 30, 1 << 30), 2 << 30);
        assert_eq!(kv_budget(1 << 30, 1 << 30), 0);
    }
}
