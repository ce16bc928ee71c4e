//! Error bodies as servers other than OpenAI write them, read leniently.

use serde_json::Value;

/// An error body read leniently: OpenAI's `{"error": {"message", "type", "code"}}` with `code`
/// a string or a number (llama.cpp, vLLM), vLLM's `{"object": "error", "message", "code"}` at
/// the top level, or `{"error": "text"}`.
#[derive(Debug, PartialEq)]
pub(crate) struct LenientError {
    pub message: String,
    /// `code` as text, or the `type` when it names the kind (llama.cpp's
    /// `exceed_context_size_error`).
    pub code: Option<String>,
    pub kind: Option<String>,
}

impl LenientError {
    pub fn read(body: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(body.trim()).ok()?;
        let inner = match v.get("error") {
            Some(Value::String(message)) => {
                return Some(Self {
                    message: message.clone(),
                    code: None,
                    kind: None,
                })
            }
            Some(e @ Value::Object(_)) => e,
            _ if v.get("message").is_some() => &v,
            _ => return None,
        };
        let text = |key: &str| match inner.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        Some(Self {
            message: text("message").unwrap_or_default(),
            code: text("code"),
            kind: text("type"),
        })
    }

    /// The server says the prompt does not fit.
    pub fn too_long(&self) -> bool {
        [self.code.as_deref(), self.kind.as_deref()]
            .into_iter()
            .flatten()
            .any(|c| c == "context_length_exceeded" || c == "exceed_context_size_error")
    }
}

/// The status an error object stands for when a server sends it under a success status, as a
/// gateway in front of an overloaded server does: the object's own numeric `code` when that is
/// an error status, else 401 for a refused key, 400 for a prompt too long, 529 for Anthropic's
/// `overloaded_error`, else 500. `None`: the body holds no error object at its top level, as no
/// provider's reply does.
pub(crate) fn status_of_error_in_success(body: &[u8]) -> Option<u16> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("error")?;
    let e = LenientError::read(&String::from_utf8_lossy(body))?;
    let own = e.code.as_deref().and_then(|c| c.parse::<u16>().ok());
    let names = |word: &str| {
        [e.code.as_deref(), e.kind.as_deref()]
            .into_iter()
            .flatten()
            .any(|c| c.contains(word))
    };
    Some(match own {
        Some(code) if (400..600).contains(&code) => code,
        _ if names("api_key") || names("authentication") => 401,
        _ if e.too_long() => 400,
        _ if names("overloaded") => 529,
        _ => 500,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_object_under_a_success_status_stands_for_its_error_status() {
        let cases: [(&str, Option<u16>); 7] = [
            (
                r#"{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}"#,
                Some(500),
            ),
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                Some(529),
            ),
            (
                r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
                Some(503),
            ),
            (
                r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
                Some(401),
            ),
            (
                r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
                Some(400),
            ),
            (
                r#"{"error":"model runner has unexpectedly stopped"}"#,
                Some(500),
            ),
            // A reply: no error object at its top level.
            (
                r#"{"model":"m","message":{"role":"assistant","content":"hi"},"done":true}"#,
                None,
            ),
        ];
        for (body, status) in cases {
            assert_eq!(
                status_of_error_in_success(body.as_bytes()),
                status,
                "{body}"
            );
        }
    }

    #[test]
    fn reads_llama_cpp_vllm_and_openai_error_bodies() {
        // llama.cpp's server, a prompt past its context.
        let llama = LenientError::read(
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4301,"n_ctx":4096}}"#,
        )
        .expect("llama.cpp");
        assert_eq!(llama.code.as_deref(), Some("400"));
        assert!(llama.too_long());
        assert!(llama.message.starts_with("the request exceeds"));
        // vLLM: the fields at the top level, a numeric code.
        let vllm = LenientError::read(
            r#"{"object":"error","message":"This model's maximum context length is 2048 tokens.","type":"BadRequestError","param":null,"code":400}"#,
        )
        .expect("vLLM");
        assert_eq!(vllm.code.as_deref(), Some("400"));
        assert_eq!(vllm.kind.as_deref(), Some("BadRequestError"));
        assert!(vllm.message.contains("maximum context length"));
        let openai = LenientError::read(
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        )
        .expect("OpenAI");
        assert_eq!(openai.code.as_deref(), Some("invalid_api_key"));
        assert_eq!(
            LenientError::read(r#"{"error":"model not loaded"}"#).map(|e| e.message),
            Some("model not loaded".into())
        );
        assert_eq!(LenientError::read("<html>502</html>"), None);
        assert_eq!(LenientError::read(r#"{"choices":[]}"#), None);
    }
}
