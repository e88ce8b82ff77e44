//! Cancelling llama.cpp in the middle of a decode: the context's abort callback.
//!
//! llama.cpp checks `abort_callback` between the nodes of the compute graph, so a prompt
//! batch of any size stops within one graph node of a cancel instead of at the end of the
//! batch. `llama-cpp-2` does not wrap the callback, so this module sets the two raw fields of
//! `llama_context_params` itself. With vocab.rs it is the only code of the crate that needs
//! `unsafe`, kept small so its safety argument can be read in one place.
//!
//! The callback's data is an `AbortSlot` the backend owns in a `Box` (a stable address) for as
//! long as the model, so it outlives every context made from that model: a context borrows the
//! model. During a turn the slot holds the turn's cancellation token; the callback answers
//! whether it is cancelled.
#![allow(
    unsafe_code,
    reason = "llama-cpp-2 does not wrap llama.cpp's abort callback; the raw fields are set here, once, with the safety argument beside them"
)]

use std::ffi::c_void;
use std::sync::Mutex;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_sys_2::llama_context_params;
use tokio_util::sync::CancellationToken;

/// What the abort callback looks at: the cancellation token of the turn in progress, if any.
#[derive(Debug, Default)]
pub struct AbortSlot {
    token: Mutex<Option<CancellationToken>>,
}

impl AbortSlot {
    /// Makes decodes abort once `token` is cancelled (until `disarm`).
    pub fn arm(&self, token: &CancellationToken) {
        if let Ok(mut slot) = self.token.lock() {
            *slot = Some(token.clone());
        }
    }

    /// Decodes run to their end again.
    pub fn disarm(&self) {
        if let Ok(mut slot) = self.token.lock() {
            *slot = None;
        }
    }

    /// Whether the decode in progress should stop now.
    pub fn should_abort(&self) -> bool {
        self.token
            .lock()
            .map(|slot| slot.as_ref().is_some_and(CancellationToken::is_cancelled))
            .unwrap_or(false)
    }
}

/// Called by llama.cpp (on its compute thread 0) between graph nodes; `true` aborts the decode.
extern "C" fn abort_callback(data: *mut c_void) -> bool {
    if data.is_null() {
        return false;
    }
    // SAFETY: `data` is the address of the `AbortSlot` that `with_abort` was given. That slot
    // lives in a `Box` owned by the backend, which outlives every context made from its model
    // (the contexts borrow the model), so the pointer is valid whenever llama.cpp calls back.
    // Only a shared reference is made, and `AbortSlot` is `Sync` (a `Mutex`).
    let slot = unsafe { &*data.cast::<AbortSlot>() };
    slot.should_abort()
}

// `LlamaContextParams` is a struct whose only field is the raw `llama_context_params`; equal
// sizes mean that field sits at offset 0, so the cast in `with_abort` addresses it.
const _: () = assert!(
    std::mem::size_of::<LlamaContextParams>() == std::mem::size_of::<llama_context_params>()
);
const _: () = assert!(
    std::mem::align_of::<LlamaContextParams>() == std::mem::align_of::<llama_context_params>()
);

/// `params` with llama.cpp's abort callback pointing at `slot`. The caller keeps `slot` alive,
/// at the same address, for as long as any context created with these parameters.
pub fn with_abort(mut params: LlamaContextParams, slot: &AbortSlot) -> LlamaContextParams {
    let raw = std::ptr::from_mut(&mut params).cast::<llama_context_params>();
    // SAFETY: `raw` points at the single field of `params` (offset 0, checked above), a plain
    // C struct we hold exclusively; only its two abort fields are written. The data pointer is
    // only read back by `abort_callback`, as a shared `&AbortSlot`.
    unsafe {
        (*raw).abort_callback = Some(abort_callback);
        (*raw).abort_callback_data = std::ptr::from_ref(slot).cast_mut().cast::<c_void>();
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(slot: &AbortSlot) -> bool {
        abort_callback(std::ptr::from_ref(slot).cast_mut().cast::<c_void>())
    }

    #[test]
    fn the_callback_answers_the_armed_token() {
        let slot = AbortSlot::default();
        let token = CancellationToken::new();
        assert!(!ask(&slot), "an unarmed slot never aborts");
        slot.arm(&token);
        assert!(!ask(&slot));
        token.cancel();
        assert!(ask(&slot), "a cancelled token aborts the decode");
        slot.disarm();
        assert!(!ask(&slot), "a disarmed slot lets decodes finish");
        assert!(!abort_callback(std::ptr::null_mut()));
    }

    #[test]
    fn with_abort_keeps_the_other_parameters() {
        let slot = AbortSlot::default();
        let params = LlamaContextParams::default()
            .with_n_batch(77)
            .with_n_threads(3);
        let params = with_abort(params, &slot);
        assert_eq!(params.n_batch(), 77);
        assert_eq!(params.n_threads(), 3);
    }
}
