#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every integration test, in one binary so the crate links once.
//!
//! The tests run the real binaries on real small projects with their real test tools (pytest,
//! node's test runner); the only fake is the model, a local HTTP server that speaks the OpenAI
//! chat-completions protocol (`support::MockLlm`).

mod suite;
