//! What a backend is given to load a model and sample from it: context size, threads,
//! offload, batch and the sampling numbers.
//!
//! The backends read only this, never the option table or the config file: the wiring
//! (`app`) builds it from a run's resolved options, so the settings layer sits above the
//! model backends and they know nothing of where a value came from.

use serde::{Deserialize, Serialize};

/// Sampling and context settings for a backend (the llama backend uses all of them, a
/// server backend the sampling numbers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InferenceSettings {
    pub ctx_size: u32,
    pub threads: i32,
    pub gpu_layers: Option<u32>,
    pub batch_size: u32,
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub seed: u32,
}
