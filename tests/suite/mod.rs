mod chat;
pub mod common;
mod e2e;
mod engine;
mod eval;
mod llama;
mod tools;
mod ui;
mod workspace;
