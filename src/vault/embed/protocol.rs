//! What differs between the providers' embedding APIs: where a batch is sent, how the key is
//! sent, the request body and the reply's form ([`Api`]), and where an error body puts the
//! server's message ([`error_text`]). The sending and the retries are the same for all, in
//! [`super::http`].

use reqwest::header::{HeaderName, AUTHORIZATION};
use reqwest::Url;
use serde::Deserialize;
use serde_json::{json, Value};

use super::spec::{EmbedError, EmbedProvider};
use crate::http::text::shorten;

/// One provider's embeddings endpoint for one model.
#[derive(Debug)]
pub(super) struct Api {
    pub(super) provider: EmbedProvider,
    pub(super) url: Url,
    pub(super) model: String,
    pub(super) dims: usize,
    /// Whether the settings chose the dimension, so it is asked of the server.
    pub(super) ask_dims: bool,
}

/// The header that carries the key, and its value.
pub(super) fn key_header(provider: EmbedProvider, key: &str) -> (HeaderName, String) {
    match provider {
        EmbedProvider::Gemini => (HeaderName::from_static("x-goog-api-key"), key.to_string()),
        _ => (AUTHORIZATION, format!("Bearer {key}")),
    }
}

impl Api {
    /// The endpoint of `provider` under `base` (the API root, without a trailing `/`).
    pub(super) fn new(
        provider: EmbedProvider,
        base: &str,
        model: String,
        dims: usize,
        ask_dims: bool,
    ) -> Result<Self, EmbedError> {
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
        Ok(Self {
            provider,
            url,
            model,
            dims,
            ask_dims,
        })
    }

    /// The request body of one batch, as the provider's API documents it.
    pub(super) fn body(&self, texts: &[String]) -> Value {
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
    pub(super) fn parse(&self, body: &[u8], n: usize) -> Result<Vec<Vec<f32>>, String> {
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
}

/// The server's own words from an error body: `error.message` (OpenAI, Gemini), `error`
/// (Ollama), else the body's text; shortened.
pub(super) fn error_text(body: &[u8]) -> String {
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
