//! The integration test binary: one binary, one module per area under `tests/suite/`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a failed unwrap is a failed test, and tests may print what they measure"
)]

mod suite;
