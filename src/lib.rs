//! ralph-tui: supervised Ralph runs with a local model.
//!
//! The engine (round loop) emits typed events; the TUI and the headless writer consume them.
//! The types every layer exchanges live in `protocol`, at the bottom beside the `text`
//! helpers: each module imports only downward (protocol, text; error, logging, signals,
//! intake, runlock, model_file; model_defaults, workspace, tools; chat with the settings
//! (options, cli, config); llm;
//! engine; app, headless, eval, runs; screens, the TUI's screens and their state; terminal,
//! the terminal loop that draws them), which `tests/suite/layers.rs` checks. See the
//! README for the contracts.

pub mod app;
pub mod chat;
pub mod cli;
pub mod config;
pub mod engine;
pub mod error;
pub mod eval;
pub mod headless;
pub mod hooks;
pub mod intake;
pub mod llm;
pub mod logging;
pub mod model_defaults;
pub mod model_file;
pub mod model_store;
pub mod options;
pub mod protocol;
pub mod runlock;
pub mod runs;
pub mod screens;
pub mod signals;
pub mod terminal;
pub mod text;
pub mod tools;
pub mod workspace;
