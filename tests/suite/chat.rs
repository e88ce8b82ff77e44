//! Tests: chat.
