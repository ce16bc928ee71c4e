//! The [`Embedder`]s the vault can use: [`HashedNgrams`] offline, or a provider's embedding
//! model over HTTP ([`HttpEmbedder`]: OpenAI-compatible, Ollama, Gemini). [`build()`] makes one
//! from the `memory.embedder` settings ([`EmbedderSpec`]).
//!
//! **Why hashed n-grams by default.** What the vault embeds is a failure signature: error
//! types, messages and test names, mostly identifiers and numbers. Two signatures of the same
//! bug share most of their character n-grams, and feature hashing turns those into a vector
//! with no model to download, no key and no network, in microseconds. It finds "the same error
//! in a sibling test"; it does not find synonyms, which is what a provider's model is for.
//!
//! **Why the vectors must never change.** Vectors are stored, and a query is only comparable
//! with vectors made by the same function. So the hash is xxh3 with a fixed seed (specified
//! output, the same on every platform and release, unlike std's `DefaultHasher`), words are
//! split and lowercased by ASCII rules only (no Unicode table that a new Rust release could
//! update), and a golden test pins some values: any change that moves a vector must also
//! change the id's version (`hashed-ngrams-v1` → `v2`).
//!
//! **Why the id names the dimension.** [`Embedder::id`] decides which stored vectors a query may
//! be compared with. The same model can give vectors of different lengths (OpenAI's and
//! Gemini's `dimensions`), and vectors of different lengths cannot be compared at all, so the
//! dimension is part of the id: `hashed-ngrams-v1/256`, `openai/text-embedding-3-small/1536`.
//! For the same reason every vector a provider returns is checked to have exactly
//! [`Embedder::dims`] numbers.
//!
//! The HTTP embedders send at most [`BATCH`] texts per request, and retry 429, 5xx and failed
//! connections (three tries in all, honouring `Retry-After` up to [`MAX_SERVER_DELAY`]).
//!
//! Layout (private modules, everything re-exported here): `spec`, the settings
//! ([`EmbedderSpec`], [`EmbedProvider`], [`EmbedError`]); `build`, [`build()`] itself; `hashed`,
//! [`HashedNgrams`]; `http`, [`HttpEmbedder`]'s client, batching and retries; `protocol`, what
//! each provider's requests and replies look like.
//!
//! [`Embedder`]: ralph_actors::ports::memory::Embedder
//! [`Embedder::id`]: ralph_actors::ports::memory::Embedder::id
//! [`Embedder::dims`]: ralph_actors::ports::memory::Embedder::dims

mod build;
mod hashed;
mod http;
mod protocol;
mod spec;

pub use build::{build, build_with_env};
pub use hashed::{HashedNgrams, DEFAULT_HASHED_DIMS};
pub use http::{HttpEmbedder, BATCH, MAX_SERVER_DELAY};
pub use spec::{EmbedError, EmbedProvider, EmbedderSpec, DEFAULT_TIMEOUT};

/// Texts as a guard that is off seals them, for the tests that embed directly.
#[cfg(test)]
pub(crate) fn sealed_texts(texts: Vec<String>) -> ralph_actors::ports::memory::GuardedTexts {
    ralph_actors::ports::memory::GuardedTexts::seal(&ralph_guard::Guard::off(), texts)
        .unwrap_or_else(|e| panic!("a guard that is off seals anything: {e}"))
}
