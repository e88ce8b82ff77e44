//! Tests: ui.
