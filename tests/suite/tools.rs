//! Tests: tools.
