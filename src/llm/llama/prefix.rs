//! The run's fixed prompt prefix and its KV state, evaluated once per run and restored into
//! each round's brand-new context.
//!
//! The fixed prefix is the rendered prompt up to the end of the system message: rules and tool
//! instructions, byte-identical in every round of a run. Round 1's fresh context evaluates it
//! (always as batches of its own, ending at the prefix boundary) and its sequence state is
//! taken right then, when the KV cache holds the prefix and nothing else. Later rounds create
//! their new context as before and restore that state before evaluating the rest. The state is
//! a pure function of the prefix tokens, so no earlier round's conversation can be in it.
//!
//! Before every restore the new round's prefix token ids are compared with the stored ones,
//! and their sha256 with the stored sha256; any difference recomputes (and replaces the stored
//! state) and the log says why. With the cache off the prefix is still evaluated as its own
//! batches, so the two paths do the same arithmetic and produce the same tokens.
//!
//! With a disk store (`prefix_store`), the state also outlives the run: a round with nothing
//! in memory for its prefix looks on disk under the full key (model sha256, prefix sha256,
//! llama-cpp-2 version, context shape, device), and a stored state is written to disk as
//! well as kept in memory. A state from disk is checked against its header before llama.cpp
//! reads it, and the token ids llama.cpp reads back must be the prefix's; anything else is
//! evaluated again, with the reason in the log.

use std::sync::Mutex;

use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::token::LlamaToken;

use crate::llm::prefix_store::{Lookup, PrefixKey, PrefixStore};
use crate::text::sha256_hex;

/// The prefix of one round's first prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    pub tokens: Vec<LlamaToken>,
    /// sha256 of the token ids (little-endian `i32`s).
    pub sha256: String,
}

impl Prefix {
    pub fn new(tokens: Vec<LlamaToken>) -> Self {
        let sha256 = tokens_sha256(&tokens);
        Self { tokens, sha256 }
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// sha256 of token ids as little-endian `i32`s.
pub fn tokens_sha256(tokens: &[LlamaToken]) -> String {
    let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.0.to_le_bytes()).collect();
    sha256_hex(&bytes)
}

/// Where the fixed prefix ends in `full`, given the same conversation rendered with the system
/// message alone (`system_only`) and that message's text: the bytes both renders share, cut at
/// the end of the system text when it appears in them. `None` when they share nothing.
pub fn prefix_end(full: &str, system_only: &str, system_text: &str) -> Option<usize> {
    let mut shared = full
        .bytes()
        .zip(system_only.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !full.is_char_boundary(shared) {
        shared -= 1;
    }
    if !system_text.is_empty() {
        if let Some(at) = full[..shared].find(system_text) {
            shared = at + system_text.len();
        }
    }
    (shared > 0).then_some(shared)
}

/// The stored prefix state.
struct Stored {
    prefix: Prefix,
    state: SeqState,
}

/// The disk side of the cache: the store and the key's fields that hold for the whole run
/// (`prefix_sha256` and `prefix_tokens` are filled per prefix).
pub struct Disk {
    pub store: PrefixStore,
    pub key: PrefixKey,
}

impl Disk {
    fn key(&self, prefix: &Prefix) -> PrefixKey {
        PrefixKey {
            prefix_sha256: prefix.sha256.clone(),
            prefix_tokens: u32::try_from(prefix.len()).unwrap_or(u32::MAX),
            ..self.key.clone()
        }
    }
}

/// The run's prefix state (at most one), shared by the rounds' children, and optionally the
/// states on disk.
#[derive(Default)]
pub struct PrefixCache {
    enabled: bool,
    stored: Mutex<Option<Stored>>,
    disk: Option<Disk>,
}

impl std::fmt::Debug for PrefixCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixCache")
            .field("enabled", &self.enabled)
            .field(
                "disk",
                &self.disk.as_ref().map(|d| d.store.dir().to_path_buf()),
            )
            .finish_non_exhaustive()
    }
}

/// What `restore` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    /// The prefix's KV state is in the context (from memory or from disk): this many tokens.
    Restored(usize),
    /// Nothing restored; the prefix is evaluated, and its state stored when `store` says so.
    Evaluate { store: bool },
}

impl PrefixCache {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            stored: Mutex::new(None),
            disk: None,
        }
    }

    /// Adds the disk store (only an enabled cache uses it).
    pub fn with_disk(mut self, disk: Disk) -> Self {
        self.disk = Some(disk);
        self
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether states also go to and come from disk.
    pub fn on_disk(&self) -> bool {
        self.enabled && self.disk.is_some()
    }

    /// Restores `prefix`'s state into `ctx` (sequence 0) when the stored one is for exactly
    /// these token ids and this sha256, else from disk when a checked state is there;
    /// otherwise says to evaluate it, logging why.
    pub fn restore(&self, ctx: &mut LlamaContext<'_>, prefix: &Prefix) -> Restore {
        if !self.enabled {
            return Restore::Evaluate { store: false };
        }
        if let Some(restored) = self.restore_from_memory(ctx, prefix) {
            return restored;
        }
        match self.restore_from_disk(ctx, prefix) {
            Some(n) => Restore::Restored(n),
            None => Restore::Evaluate { store: true },
        }
    }

    fn restore_from_memory(&self, ctx: &mut LlamaContext<'_>, prefix: &Prefix) -> Option<Restore> {
        let Ok(stored) = self.stored.lock() else {
            return Some(Restore::Evaluate { store: false });
        };
        let stored = stored.as_ref()?;
        let why = if stored.prefix.tokens != prefix.tokens {
            Some("its token ids differ from the stored prefix's")
        } else if stored.prefix.sha256 != prefix.sha256
            || tokens_sha256(&prefix.tokens) != stored.prefix.sha256
        {
            Some("its sha256 differs from the stored prefix's")
        } else {
            None
        };
        if let Some(why) = why {
            tracing::info!(
                tokens = prefix.len(),
                sha256 = %prefix.sha256,
                stored_sha256 = %stored.prefix.sha256,
                "prefix not restored from memory, {why}"
            );
            return None;
        }
        match ctx.state_seq_set(&stored.state, 0) {
            Ok(()) => Some(Restore::Restored(prefix.len())),
            Err(e) => {
                tracing::warn!("prefix state does not restore ({e}): recomputing it");
                ctx.clear_kv_cache();
                Some(Restore::Evaluate { store: true })
            }
        }
    }

    /// Reads `prefix`'s state from the disk store into `ctx` after the store has checked it,
    /// and keeps it in memory for the run's later rounds. `None` (logged) when there is none
    /// or it does not load.
    fn restore_from_disk(&self, ctx: &mut LlamaContext<'_>, prefix: &Prefix) -> Option<usize> {
        let disk = self.disk.as_ref()?;
        let key = disk.key(prefix);
        let started = std::time::Instant::now();
        let path = match disk.store.lookup(&key) {
            Lookup::Hit(path) => path,
            Lookup::Miss(why) => {
                tracing::info!(
                    tokens = prefix.len(),
                    sha256 = %prefix.sha256,
                    "prefix state not restored from disk, {why}: recomputing it"
                );
                return None;
            }
        };
        let loaded = ctx.state_seq_load_file(&path, 0, prefix.len());
        let why = match loaded {
            Ok((tokens, _)) if tokens == prefix.tokens => None,
            Ok(_) => Some("its token ids are not the prefix's".to_string()),
            Err(e) => Some(format!("llama.cpp does not load it ({e})")),
        };
        if let Some(why) = why {
            tracing::warn!(
                path = %path.display(),
                "prefix state on disk not restored, {why}: removed, recomputing it"
            );
            ctx.clear_kv_cache();
            disk.store.remove(&key);
            return None;
        }
        tracing::info!(
            tokens = prefix.len(),
            sha256 = %prefix.sha256,
            ms = started.elapsed().as_millis() as u64,
            "prefix state restored from disk"
        );
        self.keep(ctx, prefix);
        Some(prefix.len())
    }

    /// Stores the state of sequence 0 of `ctx`, which holds `prefix` and nothing else: in
    /// memory, and on disk when the cache has a disk store.
    pub fn store(&self, ctx: &LlamaContext<'_>, prefix: &Prefix) {
        if !self.enabled {
            return;
        }
        self.keep(ctx, prefix);
        let Some(disk) = self.disk.as_ref() else {
            return;
        };
        let started = std::time::Instant::now();
        let saved = disk.store.save(&disk.key(prefix), |path| {
            ctx.state_seq_save_file(path, 0, &prefix.tokens)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        match saved {
            Ok(bytes) => tracing::info!(
                tokens = prefix.len(),
                sha256 = %prefix.sha256,
                bytes,
                ms = started.elapsed().as_millis() as u64,
                "prefix state stored on disk"
            ),
            Err(e) => tracing::warn!("prefix state not stored on disk: {e}"),
        }
    }

    /// Keeps the state of sequence 0 of `ctx` (the prefix alone) in memory.
    fn keep(&self, ctx: &LlamaContext<'_>, prefix: &Prefix) {
        match ctx.state_seq_get(0, LlamaStateSeqFlags::empty()) {
            Ok(state) => {
                tracing::info!(
                    tokens = prefix.len(),
                    sha256 = %prefix.sha256,
                    bytes = state.byte_len(),
                    "prefix state stored"
                );
                if let Ok(mut stored) = self.stored.lock() {
                    *stored = Some(Stored {
                        prefix: prefix.clone(),
                        state,
                    });
                }
            }
            Err(e) => tracing::warn!("prefix state cannot be taken ({e}): not cached"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_ends_with_the_system_text() {
        let full = "<s>sys: RULES</s><u>do it</u><a>";
        let system_only = "<s>sys: RULES</s><a>";
        assert_eq!(prefix_end(full, system_only, "RULES"), Some(13));
        assert_eq!(&full[..13], "<s>sys: RULES");
    }

    #[test]
    fn without_the_system_text_the_shared_bytes_are_the_prefix() {
        let full = "<s>sys: R</s><u>x</u>";
        let system_only = "<s>sys: R</s><a>";
        assert_eq!(prefix_end(full, system_only, "not there"), Some(14));
        assert_eq!(prefix_end("abc", "xyz", "abc"), None);
    }

    #[test]
    fn the_prefix_never_cuts_a_character() {
        let full = "é1";
        let system_only = "ê1";
        // 'é' and 'ê' share their first byte only.
        assert_eq!(prefix_end(full, system_only, ""), None);
    }

    #[test]
    fn the_sha256_covers_the_token_ids() {
        let a = Prefix::new(vec![LlamaToken(1), LlamaToken(2)]);
        let b = Prefix::new(vec![LlamaToken(1), LlamaToken(3)]);
        assert_ne!(a.sha256, b.sha256);
        assert_eq!(a.sha256, tokens_sha256(&[LlamaToken(1), LlamaToken(2)]));
        assert_eq!(a.len(), 2);
    }
}
