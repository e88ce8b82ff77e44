mod chat;
pub mod common;
mod e2e;
mod engine;
mod llama;
mod tools;
mod ui;
mod workspace;
