//! Tests: e2e.
