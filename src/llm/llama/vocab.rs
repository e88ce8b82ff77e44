//! The model's vocabulary: tokenizing a prompt, the text of a generated token, the special
//! tokens.
//!
//! `llama-cpp-2` is pinned to the release whose vendored llama.cpp is the very tree that
//! llama-server and llama-bench are built from (scripts/build-llama-server.sh), so the server
//! links the crate's own libraries instead of compiling llama.cpp a second time. That release
//! tokenizes through a C string, so a prompt holding a NUL byte (a command's output can) would
//! fail, and it always parses special tokens. This module calls llama.cpp's vocabulary
//! functions directly, with the model's vocabulary pointer, like the later releases do. With
//! abort.rs it is the only code of the crate that needs `unsafe`.
#![allow(
    unsafe_code,
    reason = "llama-cpp-2 0.1.153 does not expose the model's vocabulary; the raw calls are made here, with the safety argument beside each"
)]

use std::ffi::c_char;
use std::marker::PhantomData;
use std::ptr::NonNull;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_sys_2::{llama_model, llama_vocab};

// `LlamaModel` is a `#[repr(transparent)]` struct whose one field is the model's
// `NonNull<llama_model>` (the pinned release); equal sizes and alignments mean the cast in
// `Vocab::of` reads that field.
const _: () =
    assert!(std::mem::size_of::<LlamaModel>() == std::mem::size_of::<NonNull<llama_model>>());
const _: () =
    assert!(std::mem::align_of::<LlamaModel>() == std::mem::align_of::<NonNull<llama_model>>());

/// A model's vocabulary, borrowed from the model (llama.cpp keeps it inside the model, so it
/// lives exactly as long).
#[derive(Debug, Clone, Copy)]
pub struct Vocab<'m> {
    raw: *const llama_vocab,
    _model: PhantomData<&'m LlamaModel>,
}

impl<'m> Vocab<'m> {
    /// The vocabulary of `model`.
    #[must_use]
    pub fn of(model: &'m LlamaModel) -> Self {
        // SAFETY: `model` is a `LlamaModel`, a transparent wrapper of the loaded model's
        // `NonNull<llama_model>` (layout checked above), so reading it as one yields that
        // pointer. `llama_model_get_vocab` only reads the model and returns the address of the
        // vocabulary inside it (never null), valid while `model` is borrowed.
        let raw = unsafe {
            let model_ptr = *std::ptr::from_ref(model).cast::<NonNull<llama_model>>();
            llama_cpp_sys_2::llama_model_get_vocab(model_ptr.as_ptr())
        };
        Self {
            raw,
            _model: PhantomData,
        }
    }

    fn ptr(self) -> *const llama_vocab {
        self.raw
    }

    /// The beginning-of-sequence token (negative when the model has none).
    #[must_use]
    pub fn bos(self) -> LlamaToken {
        // SAFETY: a valid vocabulary (see `of`); the call only reads it.
        LlamaToken(unsafe { llama_cpp_sys_2::llama_vocab_bos(self.ptr()) })
    }

    /// The end-of-sequence token (negative when the model has none).
    #[must_use]
    pub fn eos(self) -> LlamaToken {
        // SAFETY: as `bos`.
        LlamaToken(unsafe { llama_cpp_sys_2::llama_vocab_eos(self.ptr()) })
    }

    /// Whether the model wants a BOS token at the start of a prompt.
    #[must_use]
    pub fn should_add_bos(self) -> bool {
        // SAFETY: as `bos`.
        unsafe { llama_cpp_sys_2::llama_vocab_get_add_bos(self.ptr()) }
    }

    /// Whether `token` ends a generation (EOS, EOT and the like).
    #[must_use]
    pub fn is_eog(self, token: LlamaToken) -> bool {
        // SAFETY: as `bos`; any token id is accepted (out-of-range ids answer false).
        unsafe { llama_cpp_sys_2::llama_vocab_is_eog(self.ptr(), token.0) }
    }

    /// How many tokens the vocabulary has.
    #[must_use]
    pub fn n_tokens(self) -> i32 {
        // SAFETY: as `bos`.
        unsafe { llama_cpp_sys_2::llama_vocab_n_tokens(self.ptr()) }
    }

    /// Whether `token` is a control token: chat structure such as `<|im_start|>` or BOS, which
    /// the model's text never holds. An id outside the vocabulary answers false.
    #[must_use]
    pub fn is_control(self, token: LlamaToken) -> bool {
        if token.0 < 0 || token.0 >= self.n_tokens() {
            return false;
        }
        // SAFETY: as `bos`; the id is inside the vocabulary (checked above), which
        // `llama_vocab_get_attr` needs (it indexes the token table).
        let attr = unsafe { llama_cpp_sys_2::llama_vocab_get_attr(self.ptr(), token.0) };
        attr & llama_cpp_sys_2::LLAMA_TOKEN_ATTR_CONTROL != 0
    }

    /// `text` as tokens: BOS/EOS added when `add_special` and the model wants them, special
    /// tokens' text read as those tokens when `parse_special`. Any bytes, NUL included.
    #[must_use]
    pub fn tokenize(self, text: &[u8], add_special: bool, parse_special: bool) -> Vec<LlamaToken> {
        let Ok(len) = i32::try_from(text.len()) else {
            tracing::warn!(
                bytes = text.len(),
                "a prompt over 2 GiB cannot be tokenized"
            );
            return Vec::new();
        };
        let mut ids = Vec::new();
        append_growing(&mut ids, text.len() / 2 + 8, |out| {
            self.tokenize_raw(text, len, out, add_special, parse_special)
        });
        ids.into_iter().map(LlamaToken).collect()
    }

    fn tokenize_raw(
        self,
        text: &[u8],
        len: i32,
        out: &mut [i32],
        add_special: bool,
        parse_special: bool,
    ) -> i32 {
        // SAFETY: `text` is `len` readable bytes; `out` has room for `out.len()` tokens, which
        // llama.cpp never writes past (it returns the negated count needed instead).
        unsafe {
            llama_cpp_sys_2::llama_tokenize(
                self.ptr(),
                text.as_ptr().cast::<c_char>(),
                len,
                out.as_mut_ptr(),
                i32::try_from(out.len()).unwrap_or(i32::MAX),
                add_special,
                parse_special,
            )
        }
    }

    /// Appends the text of `token` to `out` (special tokens' text when `special`). The bytes
    /// may end inside a UTF-8 character; the next token's bytes complete it.
    pub fn token_to_piece_into(self, token: LlamaToken, out: &mut Vec<u8>, special: bool) {
        append_growing(out, 16, |room| self.piece_raw(token, room, special));
    }

    /// The text of `token` (special tokens' text when `special`).
    #[must_use]
    pub fn token_to_piece(self, token: LlamaToken, special: bool) -> Vec<u8> {
        let mut out = Vec::new();
        self.token_to_piece_into(token, &mut out, special);
        out
    }

    fn piece_raw(self, token: LlamaToken, out: &mut [u8], special: bool) -> i32 {
        // SAFETY: `out` has room for `out.len()` bytes, which llama.cpp never writes past (it
        // returns the negated count needed instead); no leading spaces are stripped.
        unsafe {
            llama_cpp_sys_2::llama_token_to_piece(
                self.ptr(),
                token.0,
                out.as_mut_ptr().cast::<c_char>(),
                i32::try_from(out.len()).unwrap_or(i32::MAX),
                0,
                special,
            )
        }
    }

    /// `tokens` back to text, as llama.cpp detokenizes: BOS/EOS dropped when `remove_special`
    /// and the model adds them, special tokens' text kept when `unparse_special`.
    #[must_use]
    pub fn detokenize(
        self,
        tokens: &[LlamaToken],
        remove_special: bool,
        unparse_special: bool,
    ) -> Vec<u8> {
        let ids: Vec<i32> = tokens.iter().map(|t| t.0).collect();
        let Ok(n) = i32::try_from(ids.len()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        append_growing(&mut out, ids.len() * 4 + 16, |room| {
            self.detokenize_raw(&ids, n, room, remove_special, unparse_special)
        });
        out
    }

    fn detokenize_raw(
        self,
        ids: &[i32],
        n: i32,
        out: &mut [u8],
        remove_special: bool,
        unparse_special: bool,
    ) -> i32 {
        // SAFETY: `ids` is `n` readable tokens; `out` has room for `out.len()` bytes, which
        // llama.cpp never writes past (it returns the negated count needed instead).
        unsafe {
            llama_cpp_sys_2::llama_detokenize(
                self.ptr(),
                ids.as_ptr(),
                n,
                out.as_mut_ptr().cast::<c_char>(),
                i32::try_from(out.len()).unwrap_or(i32::MAX),
                remove_special,
                unparse_special,
            )
        }
    }
}

/// Appends what `fill` writes to `out`. `fill` gets room for `room` items after `out`'s end
/// and answers how many it wrote or, negated, how many it needs (llama.cpp's convention for
/// every buffer it fills), so a second call with that much room succeeds.
fn append_growing<T: Copy + Default>(
    out: &mut Vec<T>,
    room: usize,
    mut fill: impl FnMut(&mut [T]) -> i32,
) {
    let start = out.len();
    out.resize(start + room, T::default());
    let mut written = fill(&mut out[start..]);
    if written < 0 {
        out.resize(start + written.unsigned_abs() as usize, T::default());
        written = fill(&mut out[start..]);
    }
    out.truncate(start + usize::try_from(written).unwrap_or(0));
}

#[cfg(test)]
mod tests {
    use super::append_growing;

    #[test]
    fn a_buffer_too_small_is_grown_to_what_the_filler_asks_for() {
        let text = b"a piece longer than the first room";
        let mut out = b"kept ".to_vec();
        let mut calls = 0;
        append_growing(&mut out, 4, |room| {
            calls += 1;
            if room.len() < text.len() {
                return -i32::try_from(text.len()).unwrap();
            }
            room[..text.len()].copy_from_slice(text);
            i32::try_from(text.len()).unwrap()
        });
        assert_eq!(out, b"kept a piece longer than the first room");
        assert_eq!(calls, 2);
        append_growing(&mut out, 8, |_| 0);
        assert_eq!(
            out.len(),
            5 + text.len(),
            "nothing written, nothing appended"
        );
    }
}
