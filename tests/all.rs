//! The integration test binary: one binary, one module per area under `tests/suite/`.

mod suite;
