//! Retries below async-openai, as a tower service: the client hands us a replayable
//! [`HttpRequestFactory`] and we send it again under the one retry policy of
//! [`crate::http::retry`] (429, 5xx and connection failures, honouring `retry-after-ms` and
//! `Retry-After`).
//!
//! Retrying here rather than around the whole call keeps one request body and one stream parser
//! per call, and lets a retry happen before any byte of the reply is consumed. A stream that
//! breaks half-way is *not* retried: the server may already have billed it.
//!
//! Each call gets its own [`CallState`], shared with the client, so the final error can say how
//! many attempts were made and what status the server last answered.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_openai::error::{ApiError, ApiErrorResponse, OpenAIError, WrappedError};

use crate::providers::http::{rebuilt, status_of_error_in_success, LenientError};
use async_openai::middleware::HttpRequestFactory;
use reqwest::header::AUTHORIZATION;
use reqwest::{Response, StatusCode};

use crate::http::retry::{is_retryable_status, retry, server_delay, Attempted, RetryPolicy};

/// What one call's attempts left behind, read by the client when it maps the final error.
#[derive(Debug)]
pub struct CallState {
    attempts: AtomicU32,
    last_status: AtomicU16,
    /// The cost the server put on its last successful response, as `f64` bits (0 = none).
    reported_cost: AtomicU64,
    /// When the whole call times out: a retry that could not start before then is not made,
    /// so the caller sees the server's error rather than a bare timeout.
    deadline: Option<Instant>,
}

impl CallState {
    pub fn new(deadline: Option<Instant>) -> Self {
        Self {
            attempts: AtomicU32::new(0),
            last_status: AtomicU16::new(0),
            reported_cost: AtomicU64::new(0),
            deadline,
        }
    }

    /// Requests sent so far (at least 1 once the call has begun).
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
    }

    /// What the server said the call cost, in dollars: LiteLLM's proxy sends it as the
    /// `x-litellm-response-cost` header (on whole replies; a stream's headers leave before the
    /// cost is known, and then it sends none or 0).
    pub fn reported_cost(&self) -> Option<f64> {
        match f64::from_bits(self.reported_cost.load(Ordering::Relaxed)) {
            c if c > 0.0 && c.is_finite() => Some(c),
            _ => None,
        }
    }

    /// The HTTP status of the last response, if any came.
    pub fn last_status(&self) -> Option<StatusCode> {
        match self.last_status.load(Ordering::Relaxed) {
            0 => None,
            s => StatusCode::from_u16(s).ok(),
        }
    }
}

/// The tower service async-openai sends every request through.
#[derive(Clone)]
pub struct RetryService {
    http: reqwest::Client,
    policy: RetryPolicy,
    call: Arc<CallState>,
    /// Local servers need no key; sending `Authorization: Bearer ` (empty) upsets some proxies.
    strip_auth: bool,
    provider: &'static str,
}

impl RetryService {
    pub fn new(
        http: reqwest::Client,
        policy: RetryPolicy,
        call: Arc<CallState>,
        strip_auth: bool,
        provider: &'static str,
    ) -> Self {
        Self {
            http,
            policy,
            call,
            strip_auth,
            provider,
        }
    }
}

/// Why one attempt did not give a response to hand back.
#[derive(Debug)]
enum Failed {
    /// A retryable status; the body is read so the connection is freed and the error can be
    /// reported if this was the last attempt.
    Status {
        status: StatusCode,
        body: Vec<u8>,
        server_delay: Option<Duration>,
    },
    /// The connection could not be made: nothing was sent, so a retry cannot double-bill.
    Connect(reqwest::Error),
    /// Not worth retrying.
    Fatal(OpenAIError),
}

impl Attempted for Failed {
    fn is_transient(&self) -> bool {
        !matches!(self, Failed::Fatal(_))
    }

    fn server_delay(&self) -> Option<Duration> {
        match self {
            Failed::Status { server_delay, .. } => *server_delay,
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Failed::Status { status, .. } => format!("status {}", status.as_u16()),
            Failed::Connect(e) => format!("connection failed: {e}"),
            Failed::Fatal(e) => e.to_string(),
        }
    }
}

impl Failed {
    fn into_error(self) -> OpenAIError {
        match self {
            Failed::Status { status, body, .. } => api_error(status, &body),
            Failed::Connect(e) => OpenAIError::Reqwest(e),
            Failed::Fatal(e) => e,
        }
    }
}

/// An error as async-openai would have built it from the response, so the client maps both
/// paths the same way. Server errors are often not JSON; their text becomes the message.
fn api_error(status: StatusCode, body: &[u8]) -> OpenAIError {
    let api_error = match serde_json::from_slice::<WrappedError>(body) {
        Ok(w) => w.error,
        // llama.cpp's and vLLM's error JSON (a numeric `code`, or the fields at the top level).
        Err(_) => match LenientError::read(&String::from_utf8_lossy(body)) {
            Some(e) => ApiError {
                message: e.message,
                code: e.code,
                r#type: e.kind,
                ..ApiError::default()
            },
            None => ApiError {
                message: String::from_utf8_lossy(body).trim().to_string(),
                ..ApiError::default()
            },
        },
    };
    OpenAIError::ApiError(ApiErrorResponse {
        status_code: status,
        api_error,
    })
}

/// OpenAI answers 429 both for "slow down" and for "the account has no credit left"; only the
/// first passes with time.
fn is_quota_exhausted(body: &[u8]) -> bool {
    serde_json::from_slice::<WrappedError>(body)
        .map(|w| {
            w.error.code.as_deref() == Some("insufficient_quota")
                || w.error.r#type.as_deref() == Some("insufficient_quota")
        })
        .unwrap_or(false)
}

/// The header a LiteLLM proxy prices each reply in (dollars, a decimal string).
pub const RESPONSE_COST_HEADER: &str = "x-litellm-response-cost";

fn response_cost(headers: &reqwest::header::HeaderMap) -> Option<f64> {
    headers
        .get(RESPONSE_COST_HEADER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|c| c.is_finite() && *c > 0.0)
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"))
}

/// A whole JSON reply whose `usage.cost` (OpenRouter's, in dollars) is kept as the call's
/// reported cost, unless a header already gave one. The body is read here and handed on
/// unchanged: async-openai's types have no field for it.
async fn read_body_cost(response: Response, call: &CallState) -> Result<Response, Failed> {
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .bytes()
        .await
        .map_err(|e| Failed::Fatal(OpenAIError::Reqwest(e)))?;
    if let Some(code) = status_of_error_in_success(&body) {
        // A gateway answered for a failing server: its error, as its status would have.
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = body.to_vec();
        return Err(match is_retryable_status(code) {
            true => Failed::Status {
                status,
                body,
                server_delay: None,
            },
            false => Failed::Fatal(api_error(status, &body)),
        });
    }
    if call.reported_cost().is_none() {
        let cost = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("usage")?.get("cost")?.as_f64())
            .filter(|c| c.is_finite() && *c > 0.0);
        if let Some(cost) = cost {
            call.reported_cost.store(cost.to_bits(), Ordering::Relaxed);
        }
    }
    Ok(rebuilt(status, headers, body))
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream"))
}

/// A stream of server-sent events handed on a whole line at a time: async-openai's parser
/// (`eventsource-stream`) costs the square of a chunk's lines otherwise (`crate::http::sse`:
/// minutes for 10 MB in one chunk).
pub(crate) fn by_lines(response: Response) -> Response {
    use futures::StreamExt;
    let status = response.status();
    let headers = response.headers().clone();
    let too_long = || std::io::Error::other("a line of the stream is over 16 MiB");
    let bytes = response
        .bytes_stream()
        .map(|b| b.map_err(std::io::Error::other))
        .boxed();
    let body = reqwest::Body::wrap_stream(crate::http::sse::whole_lines(bytes, too_long));
    rebuilt(status, headers, body)
}

async fn attempt(
    factory: HttpRequestFactory,
    http: reqwest::Client,
    call: Arc<CallState>,
    strip_auth: bool,
) -> Result<Response, Failed> {
    let mut request = factory.build().await.map_err(Failed::Fatal)?;
    if strip_auth {
        request.headers_mut().remove(AUTHORIZATION);
    }
    let response = match http.execute(request).await {
        Ok(r) => r,
        Err(e) if e.is_connect() => return Err(Failed::Connect(e)),
        Err(e) => return Err(Failed::Fatal(OpenAIError::Reqwest(e))),
    };
    let status = response.status();
    call.last_status.store(status.as_u16(), Ordering::Relaxed);
    if !is_retryable_status(status.as_u16()) {
        if let Some(cost) = response_cost(response.headers()) {
            call.reported_cost.store(cost.to_bits(), Ordering::Relaxed);
        }
        if status.is_success() && is_json(&response) {
            return read_body_cost(response, &call).await;
        }
        if status.is_success() && is_event_stream(&response) {
            return Ok(by_lines(response));
        }
        return Ok(response);
    }
    let server_delay = server_delay(response.headers());
    let body = response
        .bytes()
        .await
        .map_err(|e| Failed::Fatal(OpenAIError::Reqwest(e)))?
        .to_vec();
    if status == StatusCode::TOO_MANY_REQUESTS && is_quota_exhausted(&body) {
        return Err(Failed::Fatal(api_error(status, &body)));
    }
    Err(Failed::Status {
        status,
        body,
        server_delay,
    })
}

impl tower::Service<HttpRequestFactory> for RetryService {
    type Response = Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<Response, OpenAIError>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let RetryService {
                http,
                policy,
                call,
                strip_auth,
                provider,
            } = this;
            let result = retry(&policy, provider, call.deadline, &call.attempts, || {
                attempt(factory.clone(), http.clone(), call.clone(), strip_auth)
            })
            .await;
            result.map_err(Failed::into_error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_exhaustion_is_not_a_rate_limit() {
        let body = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert!(is_quota_exhausted(body));
        assert!(!is_quota_exhausted(
            br#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#
        ));
        assert!(!is_quota_exhausted(b"Too Many Requests"));
    }
}
