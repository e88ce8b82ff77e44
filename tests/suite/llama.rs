//! Tests: llama.
