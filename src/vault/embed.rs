//! The [`Embedder`]s the vault can use: [`HashedNgrams`] offline, or a provider's embedding
//! model over HTTP ([`HttpEmbedder`]: OpenAI-compatible, Ollama, Gemini). [`build`] makes one
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

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ralph_actors::ports::memory::{Embedder, MemoryError};
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::{json, Value};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::http::retry::{is_retryable_status, retry, server_delay, Attempted, RetryPolicy};
use crate::http::text::{chain, shorten};

/// The dimension of [`HashedNgrams`] unless `memory.embedder.dims` says otherwise: enough
/// buckets that collisions between a signature's few hundred n-grams stay rare, small enough
/// to store and scan thousands of attempts for nothing.
pub const DEFAULT_HASHED_DIMS: usize = 256;
/// Texts per request: OpenAI accepts 2048, Gemini's batch 100; 96 stays under every limit.
pub const BATCH: usize = 96;
/// The longest wait a server's `Retry-After` may ask of us.
pub const MAX_SERVER_DELAY: Duration = Duration::from_secs(30);
/// The request timeout when the settings give none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The hash seed of `hashed-ngrams-v1` ("RALPHNG1"). Part of the vector format: never change it.
const SEED: u64 = 0x5241_4C50_484E_4731;
/// The n-gram lengths of `hashed-ngrams-v1`: bigrams match short tokens (`3`, `ok`), 4-grams
/// carry most of a word's identity. Part of the vector format.
const NGRAMS: [usize; 3] = [2, 3, 4];
/// Connecting is quick or the host is down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Retries per request after the first attempt.
const MAX_RETRIES: u32 = 2;

/// Why an embedder could not be built from the settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    #[error("memory.embedder: {provider} needs an API key: set {env}")]
    MissingKey {
        provider: EmbedProvider,
        env: String,
    },
    #[error("memory.embedder: the API key in {env} cannot be sent in an HTTP header")]
    BadKey { env: String },
    #[error(
        "memory.embedder: the dimension of {provider} model `{model}` is not known: \
         set memory.embedder.dims"
    )]
    UnknownDims {
        provider: EmbedProvider,
        model: String,
    },
    #[error("memory.embedder.dims must be at least 1")]
    ZeroDims,
    #[error("memory.embedder: {provider} base_url `{url}` is not a URL: {reason}")]
    BadUrl {
        provider: EmbedProvider,
        url: String,
        reason: String,
    },
    #[error("memory.embedder: cannot set up HTTP: {0}")]
    Http(String),
}

/// Which embedding function: the offline default or a provider's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EmbedProvider {
    #[default]
    Hashed,
    /// OpenAI's `/embeddings`, also served by Azure-style gateways, vLLM, LM Studio, ...
    OpenAi,
    Ollama,
    Gemini,
}

impl EmbedProvider {
    /// The name used in settings and ids.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hashed => "hashed",
            Self::OpenAi => "openai",
            Self::Ollama => "ollama",
            Self::Gemini => "gemini",
        }
    }

    /// The model used when the settings name none.
    pub fn default_model(self) -> &'static str {
        match self {
            Self::Hashed => "",
            Self::OpenAi => "text-embedding-3-small",
            Self::Ollama => "nomic-embed-text",
            Self::Gemini => "gemini-embedding-001",
        }
    }

    fn default_base_url(self) -> &'static str {
        match self {
            Self::Hashed => "",
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Ollama => "http://localhost:11434",
            Self::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }

    /// Where the key is read from by default; `None` for providers that need none.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("OPENAI_API_KEY"),
            Self::Gemini => Some("GEMINI_API_KEY"),
            Self::Hashed | Self::Ollama => None,
        }
    }
}

impl fmt::Display for EmbedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EmbedProvider {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "hashed" => Ok(Self::Hashed),
            "openai" => Ok(Self::OpenAi),
            "ollama" => Ok(Self::Ollama),
            "gemini" => Ok(Self::Gemini),
            other => Err(format!(
                "unknown embedder `{other}`: expected hashed, openai, ollama or gemini"
            )),
        }
    }
}

/// The `memory.embedder` settings.
#[derive(Debug, Clone)]
pub struct EmbedderSpec {
    pub provider: EmbedProvider,
    /// The provider's model; empty for [`EmbedProvider::default_model`]. Ignored by `Hashed`.
    pub model: String,
    /// The API root (`https://api.openai.com/v1`); `None` for the provider's.
    pub base_url: Option<String>,
    /// The variable holding the key; `None` for [`EmbedProvider::default_key_env`].
    pub api_key_env: Option<String>,
    /// The vector length: asked of OpenAI and Gemini, checked for every provider. `None` for
    /// the model's known default.
    pub dims: Option<usize>,
    /// The longest one request may take, connecting included.
    pub timeout: Duration,
}

impl Default for EmbedderSpec {
    fn default() -> Self {
        Self {
            provider: EmbedProvider::Hashed,
            model: String::new(),
            base_url: None,
            api_key_env: None,
            dims: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Makes the embedder the settings describe, reading its key from the environment.
pub fn build(spec: &EmbedderSpec) -> Result<Arc<dyn Embedder>, EmbedError> {
    build_with_env(spec, |name| std::env::var(name).ok())
}

/// [`build`], with the environment given: tests pass a map rather than set process-wide
/// variables that other threads may be reading.
pub fn build_with_env(
    spec: &EmbedderSpec,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(match spec.provider {
        EmbedProvider::Hashed => {
            Arc::new(HashedNgrams::new(spec.dims.unwrap_or(DEFAULT_HASHED_DIMS))?)
        }
        _ => Arc::new(HttpEmbedder::new(spec, env)?),
    })
}

/// Feature-hashed character n-grams: the offline embedder (see the module docs).
///
/// Each word (a run of ASCII letters and digits, or of any non-ASCII characters) is lowercased,
/// padded with a space at each end so that n-grams at a word's edge differ from those inside,
/// and cut into its 2-, 3- and 4-grams. Each n-gram's xxh3 hash picks a bucket and, by its top
/// bit, a sign (so collisions cancel out on average rather than pile up); the vector is then
/// scaled to length 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashedNgrams {
    dims: usize,
}

impl HashedNgrams {
    pub fn new(dims: usize) -> Result<Self, EmbedError> {
        if dims == 0 {
            return Err(EmbedError::ZeroDims);
        }
        Ok(Self { dims })
    }

    /// The vector of one text; all zeros when it has no word.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dims];
        let mut padded = Vec::new();
        let mut gram = Vec::new();
        // ASCII rules only: `char::is_alphanumeric` and `to_lowercase` follow the Unicode
        // tables of the Rust release, and a vector must not change with the compiler.
        let words = text
            .split(|c: char| c.is_ascii() && !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty());
        for word in words {
            padded.clear();
            padded.push(b' ');
            padded.extend(word.bytes().map(|b| b.to_ascii_lowercase()));
            padded.push(b' ');
            let chars: Vec<&[u8]> = utf8_chars(&padded);
            for n in NGRAMS {
                for window in chars.windows(n) {
                    gram.clear();
                    window.iter().for_each(|c| gram.extend_from_slice(c));
                    let h = xxh3_64_with_seed(&gram, SEED);
                    let bucket = (h % self.dims as u64) as usize;
                    v[bucket] += if h >> 63 == 1 { -1.0 } else { 1.0 };
                }
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Default for HashedNgrams {
    fn default() -> Self {
        Self {
            dims: DEFAULT_HASHED_DIMS,
        }
    }
}

/// The characters of UTF-8 bytes, each as its bytes: n-grams count characters, not bytes, so a
/// non-ASCII word is not cut mid-character.
fn utf8_chars(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut start = 0;
    for i in 1..=bytes.len() {
        // A continuation byte (10xxxxxx) belongs to the character before it.
        if i == bytes.len() || bytes[i] & 0xC0 != 0x80 {
            out.push(&bytes[start..i]);
            start = i;
        }
    }
    out
}

#[async_trait::async_trait]
impl Embedder for HashedNgrams {
    fn id(&self) -> String {
        format!("hashed-ngrams-v1/{}", self.dims)
    }

    fn dims(&self) -> usize {
        self.dims
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, MemoryError> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

/// A provider's embedding model over HTTP: OpenAI-compatible, Ollama or Gemini.
#[derive(Debug)]
pub struct HttpEmbedder {
    provider: EmbedProvider,
    http: reqwest::Client,
    url: Url,
    model: String,
    dims: usize,
    /// Whether the settings chose the dimension, so it is asked of the server.
    ask_dims: bool,
    /// The key's header, marked sensitive so it never shows in `Debug`.
    auth: Option<(HeaderName, HeaderValue)>,
    timeout: Duration,
    policy: RetryPolicy,
}

/// The dimension of well-known models when the settings give none.
fn known_dims(model: &str) -> Option<usize> {
    // Ollama names a tag after the model (`nomic-embed-text:latest`).
    let base = model.split(':').next().unwrap_or(model);
    Some(match base {
        "text-embedding-3-small" | "text-embedding-ada-002" => 1536,
        "text-embedding-3-large" | "gemini-embedding-001" => 3072,
        "nomic-embed-text" | "text-embedding-004" => 768,
        "mxbai-embed-large" => 1024,
        "all-minilm" => 384,
        _ => return None,
    })
}

impl HttpEmbedder {
    fn new(spec: &EmbedderSpec, env: impl Fn(&str) -> Option<String>) -> Result<Self, EmbedError> {
        let provider = spec.provider;
        let model = match spec.model.trim() {
            "" => provider.default_model(),
            m => m.strip_prefix("models/").unwrap_or(m),
        }
        .to_string();
        let dims = match spec.dims {
            Some(0) => return Err(EmbedError::ZeroDims),
            Some(d) => d,
            None => known_dims(&model).ok_or_else(|| EmbedError::UnknownDims {
                provider,
                model: model.clone(),
            })?,
        };
        let auth = match provider.default_key_env() {
            None => None,
            Some(default_env) => {
                let env_name = spec
                    .api_key_env
                    .as_deref()
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .unwrap_or(default_env);
                let key = env(env_name)
                    .map(|k| k.trim().to_string())
                    .filter(|k| !k.is_empty())
                    .ok_or_else(|| EmbedError::MissingKey {
                        provider,
                        env: env_name.to_string(),
                    })?;
                let (name, value) = match provider {
                    EmbedProvider::Gemini => (HeaderName::from_static("x-goog-api-key"), key),
                    _ => (AUTHORIZATION, format!("Bearer {key}")),
                };
                let mut value = HeaderValue::from_str(&value).map_err(|_| EmbedError::BadKey {
                    env: env_name.to_string(),
                })?;
                value.set_sensitive(true);
                Some((name, value))
            }
        };
        let base = spec
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .unwrap_or(provider.default_base_url())
            .trim_end_matches('/');
        let endpoint = match provider {
            EmbedProvider::Ollama => format!("{base}/api/embed"),
            EmbedProvider::Gemini => format!("{base}/models/{model}:batchEmbedContents"),
            _ => format!("{base}/embeddings"),
        };
        let bad_url = |reason: String| EmbedError::BadUrl {
            provider,
            url: base.to_string(),
            reason,
        };
        let url = Url::parse(&endpoint).map_err(|e| bad_url(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad_url("not http(s)".into()));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(spec.timeout)
            .user_agent(concat!("ralph-loop/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EmbedError::Http(chain(&e)))?;
        Ok(Self {
            provider,
            http,
            url,
            model,
            dims,
            ask_dims: spec.dims.is_some(),
            auth,
            timeout: spec.timeout,
            policy: RetryPolicy::default()
                .with_max_retries(MAX_RETRIES)
                .with_max_server_delay(MAX_SERVER_DELAY),
        })
    }

    /// The request body of one batch, as the provider's API documents it.
    fn body(&self, texts: &[String]) -> Value {
        match self.provider {
            EmbedProvider::Gemini => {
                let name = format!("models/{}", self.model);
                let requests: Vec<Value> = texts
                    .iter()
                    .map(|t| {
                        let mut r = json!({"model": name, "content": {"parts": [{"text": t}]}});
                        if self.ask_dims {
                            r["outputDimensionality"] = json!(self.dims);
                        }
                        r
                    })
                    .collect();
                json!({ "requests": requests })
            }
            // Ollama answers with the model's own dimension: it is checked, not asked for.
            EmbedProvider::Ollama => json!({"model": self.model, "input": texts}),
            _ => {
                let mut b = json!({"model": self.model, "input": texts});
                if self.ask_dims {
                    b["dimensions"] = json!(self.dims);
                }
                b
            }
        }
    }

    /// The vectors of one batch's reply, in the order of its `n` texts.
    fn parse(&self, body: &[u8], n: usize) -> Result<Vec<Vec<f32>>, String> {
        let vectors = match self.provider {
            EmbedProvider::Gemini => serde_json::from_slice::<GeminiReply>(body)
                .map(|r| r.embeddings.into_iter().map(|e| e.values).collect()),
            EmbedProvider::Ollama => {
                serde_json::from_slice::<OllamaReply>(body).map(|r| r.embeddings)
            }
            _ => serde_json::from_slice::<OpenAiReply>(body)
                .map(|r| {
                    // The order of `data` is not promised; `index` is.
                    let mut data = r.data;
                    data.sort_by_key(|d| d.index);
                    let in_order = data.iter().enumerate().all(|(i, d)| d.index == i);
                    let vectors = data.into_iter().map(|d| d.embedding).collect::<Vec<_>>();
                    (in_order, vectors)
                })
                .and_then(|(in_order, vectors)| {
                    if in_order {
                        Ok(vectors)
                    } else {
                        Err(serde::de::Error::custom("`index` is not 0, 1, 2, ..."))
                    }
                }),
        }
        .map_err(|e| {
            format!(
                "{}: unreadable reply from {}: {e}: {}",
                self.provider,
                self.url,
                shorten(&String::from_utf8_lossy(body))
            )
        })?;
        if vectors.len() != n {
            return Err(format!(
                "{}: {} returned {} vectors for {n} texts",
                self.provider,
                self.url,
                vectors.len()
            ));
        }
        if let Some(bad) = vectors.iter().find(|v| v.len() != self.dims) {
            return Err(format!(
                "{}: model `{}` returned a vector of {} numbers, expected {} \
                 (set memory.embedder.dims to the model's dimension)",
                self.provider,
                self.model,
                bad.len(),
                self.dims
            ));
        }
        Ok(vectors)
    }

    /// Sends one batch, retrying what is worth retrying; returns the reply's body.
    async fn send(&self, body: &Value) -> Result<Bytes, MemoryError> {
        let attempts = AtomicU32::new(0);
        let service = format!("{} embeddings", self.provider);
        retry(&self.policy, &service, None, &attempts, || {
            self.attempt(body)
        })
        .await
        .map_err(|failure| {
            let tries = attempts.load(Ordering::Relaxed);
            let after = if tries > 1 {
                format!(" (after {tries} attempts)")
            } else {
                String::new()
            };
            MemoryError::Embed {
                message: format!("{service} at {}: {}{after}", self.url, failure.describe()),
                transient: failure.is_transient(),
            }
        })
    }

    async fn attempt(&self, body: &Value) -> Result<Bytes, Failure> {
        let mut request = self.http.post(self.url.clone()).json(body);
        if let Some((name, value)) = &self.auth {
            request = request.header(name, value.clone());
        }
        let response = request.send().await.map_err(|e| self.transport(e))?;
        let status = response.status();
        let delay = server_delay(response.headers());
        let bytes = response.bytes().await.map_err(|e| self.transport(e))?;
        if !status.is_success() {
            return Err(Failure::Status {
                status,
                message: error_text(&bytes),
                delay,
            });
        }
        Ok(bytes)
    }

    fn transport(&self, e: reqwest::Error) -> Failure {
        if e.is_timeout() {
            Failure::Other(format!("no reply within {}s", self.timeout.as_secs_f64()))
        } else if e.is_connect() {
            // Nothing reached the server, so another try cannot do anything twice.
            Failure::Connect(chain(&e))
        } else {
            Failure::Other(chain(&e))
        }
    }
}

#[async_trait::async_trait]
impl Embedder for HttpEmbedder {
    fn id(&self) -> String {
        format!("{}/{}/{}", self.provider, self.model, self.dims)
    }

    fn dims(&self) -> usize {
        self.dims
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, MemoryError> {
        let mut out = Vec::with_capacity(texts.len());
        // One batch after another: order is kept for free, and a big import does not hit the
        // provider's rate limit with all its requests at once.
        for batch in texts.chunks(BATCH) {
            let body = self.send(&self.body(batch)).await?;
            out.extend(self.parse(&body, batch.len()).map_err(MemoryError::embed)?);
        }
        Ok(out)
    }
}

/// Why one attempt gave no reply to read.
#[derive(Debug)]
enum Failure {
    Status {
        status: StatusCode,
        message: String,
        delay: Option<Duration>,
    },
    Connect(String),
    Other(String),
}

impl Attempted for Failure {
    fn is_transient(&self) -> bool {
        match self {
            Self::Status { status, .. } => is_retryable_status(status.as_u16()),
            Self::Connect(_) => true,
            Self::Other(_) => false,
        }
    }

    fn server_delay(&self) -> Option<Duration> {
        match self {
            Self::Status { delay, .. } => *delay,
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Status {
                status, message, ..
            } => format!("HTTP {status}: {message}"),
            Self::Connect(e) => format!("cannot connect: {e}"),
            Self::Other(e) => e.clone(),
        }
    }
}

/// The server's own words from an error body: `error.message` (OpenAI, Gemini), `error`
/// (Ollama), else the body's text; shortened.
fn error_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let message = serde_json::from_str::<Value>(&text).ok().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_string)
    });
    match message {
        Some(m) => shorten(&m),
        None if text.trim().is_empty() => "(empty body)".to_string(),
        None => shorten(&text),
    }
}

#[derive(Deserialize)]
struct OpenAiReply {
    data: Vec<OpenAiItem>,
}

#[derive(Deserialize)]
struct OpenAiItem {
    index: usize,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct OllamaReply {
    embeddings: Vec<Vec<f32>>,
}

#[derive(Deserialize)]
struct GeminiReply {
    embeddings: Vec<GeminiItem>,
}

#[derive(Deserialize)]
struct GeminiItem {
    values: Vec<f32>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use ralph_actors::memory::rank::cosine;
    use std::collections::HashMap;
    use std::time::Instant;
    use wiremock::matchers::{body_json, header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const SAME_A: &str = "AssertionError: expected 3 to equal 2.5 in test_median_even";
    const SAME_B: &str = "AssertionError: expected 3 to equal 2.5 in test_median_odd";
    const OTHER: &str = "ModuleNotFoundError: No module named numpy";

    fn hashed() -> HashedNgrams {
        HashedNgrams::default()
    }

    #[test]
    fn hashed_is_deterministic_and_unit_length() {
        let e = hashed();
        let (a, b) = (e.vector(SAME_A), e.vector(SAME_A));
        assert_eq!(a, b);
        assert_eq!(a.len(), 256);
        let norm = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        assert_eq!(e.id(), "hashed-ngrams-v1/256");
        assert_eq!(HashedNgrams::new(64).unwrap().vector(SAME_A).len(), 64);
    }

    #[test]
    fn hashed_golden_values_never_change() {
        // If this fails, stored vectors no longer match new ones: bump the id's version.
        let v = hashed().vector("AssertionError: expected 3 to equal 2.5");
        let nonzero: Vec<(usize, f32)> = v
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, x)| *x != 0.0)
            .collect();
        let golden: &[(usize, f32)] = &GOLDEN;
        let shown: Vec<String> = nonzero[..8]
            .iter()
            .map(|(i, x)| format!("({i}, {x:.6})"))
            .collect();
        assert_eq!(
            nonzero.len(),
            GOLDEN_NONZERO,
            "first values: {}",
            shown.join(", ")
        );
        for ((i, x), (gi, gx)) in nonzero.iter().zip(golden) {
            assert_eq!(i, gi, "first values: {}", shown.join(", "));
            assert!((x - gx).abs() < 1e-5, "first values: {}", shown.join(", "));
        }
        // Every bucket, folded into one number: sum of index × value.
        let weighted: f32 = nonzero.iter().map(|(i, x)| *i as f32 * x).sum();
        assert!((weighted - 174.1).abs() < 1e-3, "weighted sum {weighted}");
    }

    /// Of `AssertionError: expected 3 to equal 2.5`: 68 buckets hit, whose counts' squares sum
    /// to 100 (hence the tenths), and the first eight of them.
    const GOLDEN_NONZERO: usize = 68;
    const GOLDEN: [(usize, f32); 8] = [
        (3, 0.1),
        (7, 0.2),
        (18, 0.1),
        (19, 0.1),
        (23, 0.1),
        (27, 0.1),
        (36, 0.1),
        (39, -0.1),
    ];

    #[test]
    fn hashed_similar_failures_are_near_and_unrelated_far() {
        let e = hashed();
        let near = cosine(&e.vector(SAME_A), &e.vector(SAME_B));
        let far = cosine(&e.vector(SAME_A), &e.vector(OTHER));
        assert!(near >= 0.85, "near = {near}, far = {far}");
        assert!(far < 0.4, "near = {near}, far = {far}");
    }

    #[test]
    fn hashed_edge_cases() {
        let e = hashed();
        assert!(e.vector("").iter().all(|x| *x == 0.0));
        assert!(e.vector(" ::: ").iter().all(|x| *x == 0.0));
        // Case does not matter; non-ASCII words are kept whole and do not panic.
        assert_eq!(e.vector("KeyError"), e.vector("keyerror"));
        assert!(e
            .vector("Fehler: Größe überschritten")
            .iter()
            .any(|x| *x != 0.0));
        assert_eq!(HashedNgrams::new(0), Err(EmbedError::ZeroDims));
    }

    #[tokio::test]
    async fn hashed_embeds_through_the_trait() {
        let e = build(&EmbedderSpec::default()).unwrap();
        assert_eq!(e.id(), "hashed-ngrams-v1/256");
        let out = e.embed(vec![SAME_A.into(), OTHER.into()]).await.unwrap();
        assert_eq!(out, vec![hashed().vector(SAME_A), hashed().vector(OTHER)]);
    }

    // ---- HTTP ----

    const KEY_ENV: &str = "RALPH_TEST_EMBED_KEY";

    fn env_with_key(name: &str) -> Option<String> {
        (name == KEY_ENV).then(|| "sk-test".to_string())
    }

    fn spec(provider: EmbedProvider, model: &str, base: &str, dims: Option<usize>) -> EmbedderSpec {
        EmbedderSpec {
            provider,
            model: model.into(),
            base_url: Some(base.into()),
            api_key_env: Some(KEY_ENV.into()),
            dims,
            timeout: Duration::from_secs(5),
        }
    }

    /// An embedder whose retries wait a millisecond, not half a second.
    fn fast(spec: &EmbedderSpec) -> HttpEmbedder {
        let mut e = HttpEmbedder::new(spec, env_with_key).unwrap();
        e.policy = e.policy.with_base_delay(Duration::from_millis(1));
        e
    }

    fn texts(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("text {i}")).collect()
    }

    /// A vector of `dims` numbers that says which text it is for.
    fn vector(i: usize, dims: usize) -> Vec<f32> {
        let mut v = vec![0.0; dims];
        v[0] = i as f32;
        v
    }

    fn openai_reply(n: usize, dims: usize) -> Value {
        // Reversed, as the API does not promise order: `index` must be what counts.
        let data: Vec<Value> = (0..n)
            .rev()
            .map(|i| json!({"object": "embedding", "index": i, "embedding": vector(i, dims)}))
            .collect();
        json!({"object": "list", "data": data, "model": "text-embedding-3-small",
               "usage": {"prompt_tokens": 8, "total_tokens": 8}})
    }

    #[tokio::test]
    async fn openai_request_and_reply() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/embeddings"))
            .and(header("authorization", "Bearer sk-test"))
            .and(header("content-type", "application/json"))
            .and(body_json(json!({
                "model": "text-embedding-3-small",
                "input": ["a", "b"],
                "dimensions": 4
            })))
            .respond_with(ResponseTemplate::new(200).set_body_json(openai_reply(2, 4)))
            .expect(1)
            .mount(&server)
            .await;
        let s = spec(
            EmbedProvider::OpenAi,
            "text-embedding-3-small",
            &format!("{}/v1/", server.uri()),
            Some(4),
        );
        let e = build_with_env(&s, env_with_key).unwrap();
        assert_eq!(e.id(), "openai/text-embedding-3-small/4");
        assert_eq!(e.dims(), 4);
        let out = e.embed(vec!["a".into(), "b".into()]).await.unwrap();
        assert_eq!(out, vec![vector(0, 4), vector(1, 4)]);
    }

    #[tokio::test]
    async fn openai_sends_no_dimensions_unless_configured() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/embeddings"))
            .and(body_json(
                json!({"model": "text-embedding-3-small", "input": ["a"]}),
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(openai_reply(1, 1536)))
            .expect(1)
            .mount(&server)
            .await;
        let e = fast(&spec(EmbedProvider::OpenAi, "", &server.uri(), None));
        assert_eq!(e.id(), "openai/text-embedding-3-small/1536");
        assert_eq!(e.embed(vec!["a".into()]).await.unwrap()[0].len(), 1536);
    }

    #[tokio::test]
    async fn ollama_request_and_reply() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/api/embed"))
            .and(body_json(
                json!({"model": "all-minilm", "input": ["a", "b"]}),
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "model": "all-minilm",
                "embeddings": [vector(0, 384), vector(1, 384)],
                "total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8
            })))
            .expect(1)
            .mount(&server)
            .await;
        // Ollama needs no key, whatever the environment holds.
        let s = EmbedderSpec {
            api_key_env: None,
            ..spec(EmbedProvider::Ollama, "all-minilm", &server.uri(), None)
        };
        let e = build_with_env(&s, |_| None).unwrap();
        assert_eq!(e.id(), "ollama/all-minilm/384");
        let out = e.embed(vec!["a".into(), "b".into()]).await.unwrap();
        assert_eq!(out, vec![vector(0, 384), vector(1, 384)]);
        let sent = &server.received_requests().await.unwrap()[0];
        assert!(!sent.headers.contains_key("authorization"));
    }

    #[tokio::test]
    async fn gemini_request_and_reply() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(
                "/v1beta/models/gemini-embedding-001:batchEmbedContents",
            ))
            .and(header("x-goog-api-key", "sk-test"))
            .and(body_json(json!({"requests": [
                {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "a"}]},
                 "outputDimensionality": 3},
                {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "b"}]},
                 "outputDimensionality": 3}
            ]})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "embeddings": [{"values": vector(0, 3)}, {"values": vector(1, 3)}]
            })))
            .expect(1)
            .mount(&server)
            .await;
        let s = spec(
            EmbedProvider::Gemini,
            "models/gemini-embedding-001",
            &format!("{}/v1beta", server.uri()),
            Some(3),
        );
        let e = build_with_env(&s, env_with_key).unwrap();
        assert_eq!(e.id(), "gemini/gemini-embedding-001/3");
        let out = e.embed(vec!["a".into(), "b".into()]).await.unwrap();
        assert_eq!(out, vec![vector(0, 3), vector(1, 3)]);
        let sent = &server.received_requests().await.unwrap()[0];
        assert!(!sent.headers.contains_key("authorization"));
        assert!(
            sent.url.query().is_none(),
            "the key goes in a header, not the URL"
        );
    }

    #[tokio::test]
    async fn unauthorised_names_the_provider_and_the_server_message() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {
                "message": "Incorrect API key provided: sk-test.", "type": "invalid_request_error",
                "param": null, "code": "invalid_api_key"}})))
            .expect(1)
            .mount(&server)
            .await;
        let e = fast(&spec(EmbedProvider::OpenAi, "", &server.uri(), None));
        let err = e.embed(vec!["a".into()]).await.unwrap_err().to_string();
        assert!(err.starts_with("openai embeddings at "), "{err}");
        assert!(err.contains("401 Unauthorized"), "{err}");
        assert!(err.contains("Incorrect API key provided"), "{err}");
    }

    #[tokio::test]
    async fn a_server_error_is_retried() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(500).set_body_string("upstream hiccup"))
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "embeddings": [vector(7, 768)]})))
            .expect(1)
            .mount(&server)
            .await;
        let e = fast(&spec(
            EmbedProvider::Ollama,
            "nomic-embed-text:latest",
            &server.uri(),
            None,
        ));
        assert_eq!(
            e.embed(vec!["a".into()]).await.unwrap(),
            vec![vector(7, 768)]
        );
    }

    #[tokio::test]
    async fn retries_give_up_after_three_tries() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503).set_body_json(json!({"error": {
                "code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})))
            .expect(3)
            .mount(&server)
            .await;
        let e = fast(&spec(
            EmbedProvider::Gemini,
            "text-embedding-004",
            &server.uri(),
            None,
        ));
        let err = e.embed(vec!["a".into()]).await.unwrap_err().to_string();
        assert!(err.contains("gemini embeddings"), "{err}");
        assert!(err.contains("The model is overloaded."), "{err}");
        assert!(err.contains("after 3 attempts"), "{err}");
    }

    #[tokio::test]
    async fn a_rate_limit_waits_as_long_as_the_server_asks() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(openai_reply(1, 1536)))
            .mount(&server)
            .await;
        let e = fast(&spec(EmbedProvider::OpenAi, "", &server.uri(), None));
        let start = Instant::now();
        e.embed(vec!["a".into()]).await.unwrap();
        assert!(
            start.elapsed() >= Duration::from_millis(950),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_retried_then_reported() {
        // Bind then drop: nothing listens on the port.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = fast(&spec(
            EmbedProvider::Ollama,
            "all-minilm",
            &format!("http://127.0.0.1:{port}"),
            None,
        ));
        let err = e.embed(vec!["a".into()]).await.unwrap_err().to_string();
        assert!(err.contains("cannot connect"), "{err}");
        assert!(err.contains("after 3 attempts"), "{err}");
    }

    #[tokio::test]
    async fn a_vector_of_the_wrong_length_is_an_error() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(openai_reply(2, 512)))
            .mount(&server)
            .await;
        let e = fast(&spec(
            EmbedProvider::OpenAi,
            "text-embedding-3-small",
            &server.uri(),
            None,
        ));
        let err = e
            .embed(vec!["a".into(), "b".into()])
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("512 numbers, expected 1536"), "{err}");
        assert!(err.contains("memory.embedder.dims"), "{err}");
    }

    #[tokio::test]
    async fn a_wrong_count_or_garbage_is_an_error() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/count/api/embed"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"embeddings": [vector(0, 384)]})),
            )
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/garbage/api/embed"))
            .respond_with(ResponseTemplate::new(200).set_body_string("<html>proxy login</html>"))
            .mount(&server)
            .await;
        let at = |p: &str| {
            fast(&spec(
                EmbedProvider::Ollama,
                "all-minilm",
                &format!("{}/{p}", server.uri()),
                None,
            ))
        };
        let err = at("count").embed(texts(2)).await.unwrap_err().to_string();
        assert!(err.contains("returned 1 vectors for 2 texts"), "{err}");
        let err = at("garbage").embed(texts(1)).await.unwrap_err().to_string();
        assert!(err.starts_with("ollama: unreadable reply"), "{err}");
        assert!(err.contains("proxy login"), "{err}");
    }

    #[tokio::test]
    async fn openai_indices_must_cover_every_text() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [
                {"index": 0, "embedding": vector(0, 1536)}, {"index": 0, "embedding": vector(0, 1536)}]})))
            .mount(&server)
            .await;
        let e = fast(&spec(EmbedProvider::OpenAi, "", &server.uri(), None));
        let err = e.embed(texts(2)).await.unwrap_err().to_string();
        assert!(err.contains("`index`"), "{err}");
    }

    #[tokio::test]
    async fn a_hundred_texts_go_as_two_batches_in_order() {
        let server = MockServer::start().await;
        for n in [BATCH, 4] {
            let start = if n == BATCH { 0 } else { BATCH };
            let data: Vec<Value> = (0..n)
                .map(|i| json!({"index": i, "embedding": vector(start + i, 8)}))
                .collect();
            Mock::given(method("POST"))
                .and(body_json(
                    json!({"model": "m", "input": texts(100)[start..start + n], "dimensions": 8}),
                ))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": data})))
                .expect(1)
                .mount(&server)
                .await;
        }
        let e = fast(&spec(EmbedProvider::OpenAi, "m", &server.uri(), Some(8)));
        let out = e.embed(texts(100)).await.unwrap();
        assert_eq!(out, (0..100).map(|i| vector(i, 8)).collect::<Vec<_>>());
        assert_eq!(server.received_requests().await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn no_texts_send_no_request() {
        let server = MockServer::start().await;
        let e = fast(&spec(EmbedProvider::OpenAi, "", &server.uri(), None));
        assert!(e.embed(vec![]).await.unwrap().is_empty());
        assert!(server.received_requests().await.unwrap().is_empty());
    }

    #[test]
    fn build_errors_say_what_to_set() {
        let missing = |provider, env: Option<&str>| {
            let s = EmbedderSpec {
                provider,
                api_key_env: env.map(str::to_string),
                ..EmbedderSpec::default()
            };
            build_with_env(&s, |_| None).err().map(|e| e.to_string())
        };
        assert_eq!(
            missing(EmbedProvider::OpenAi, None).as_deref(),
            Some("memory.embedder: openai needs an API key: set OPENAI_API_KEY")
        );
        assert_eq!(
            missing(EmbedProvider::Gemini, None).as_deref(),
            Some("memory.embedder: gemini needs an API key: set GEMINI_API_KEY")
        );
        assert_eq!(
            missing(EmbedProvider::OpenAi, Some("MY_KEY")).as_deref(),
            Some("memory.embedder: openai needs an API key: set MY_KEY")
        );
        assert_eq!(missing(EmbedProvider::Ollama, None), None);

        let keys: HashMap<&str, &str> = HashMap::from([("OPENAI_API_KEY", "sk")]);
        let env = |n: &str| keys.get(n).map(|k| k.to_string());
        let unknown = EmbedderSpec {
            provider: EmbedProvider::OpenAi,
            model: "my-finetune".into(),
            ..EmbedderSpec::default()
        };
        assert_eq!(
            build_with_env(&unknown, env).err().map(|e| e.to_string()).as_deref(),
            Some("memory.embedder: the dimension of openai model `my-finetune` is not known: set memory.embedder.dims")
        );
        let bad_url = EmbedderSpec {
            base_url: Some("not a url".into()),
            ..EmbedderSpec {
                provider: EmbedProvider::Ollama,
                ..EmbedderSpec::default()
            }
        };
        assert!(matches!(
            build_with_env(&bad_url, env),
            Err(EmbedError::BadUrl { .. })
        ));
        let zero = EmbedderSpec {
            dims: Some(0),
            ..unknown
        };
        assert!(matches!(
            build_with_env(&zero, env),
            Err(EmbedError::ZeroDims)
        ));
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        let e = HttpEmbedder::new(
            &spec(EmbedProvider::OpenAi, "", "http://localhost:1", None),
            env_with_key,
        )
        .unwrap();
        assert!(!format!("{e:?}").contains("sk-test"));
    }

    #[test]
    fn providers_parse_from_settings() {
        assert_eq!("OpenAI".parse(), Ok(EmbedProvider::OpenAi));
        assert_eq!("hashed".parse(), Ok(EmbedProvider::Hashed));
        assert!("cohere".parse::<EmbedProvider>().is_err());
    }
}
