//! The llama.cpp backend (feature `llama`).
