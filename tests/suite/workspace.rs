//! Tests: workspace.
