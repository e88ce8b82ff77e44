//! ralph-tui: supervised Ralph runs with a local model.
//!
//! The engine (round loop) emits typed events; the TUI and the headless writer consume them.
//! See `DESIGN` in the README for the contracts.

pub mod app;
pub mod chat;
pub mod cli;
pub mod config;
pub mod engine;
pub mod error;
pub mod eval;
pub mod headless;
pub mod llm;
pub mod logging;
pub mod text;
pub mod tools;
pub mod tui;
pub mod ui;
pub mod workspace;
