//! Retries below async-openai, as a tower service: the client hands us a replayable
//! [`HttpRequestFactory`] and we send it again on 429, 500, 502, 503, 504 and connection
//! failures, with exponential backoff and jitter (`backon`), honouring `retry-after-ms` and
//! `Retry-After` when the server sends them.
//!
//! Retrying here rather than around the whole call keeps one request body and one stream parser
//! per call, and lets a retry happen before any byte of the reply is consumed. A stream that
//! breaks half-way is *not* retried: the server may already have billed it.
//!
//! Each call gets its own [`CallState`], shared with the client, so the final error can say how
//! many attempts were made and what status the server last answered.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_openai::error::{ApiError, ApiErrorResponse, OpenAIError, WrappedError};
use async_openai::middleware::HttpRequestFactory;
use backon::{ExponentialBuilder, Retryable};
use reqwest::header::{HeaderMap, AUTHORIZATION, RETRY_AFTER};
use reqwest::{Response, StatusCode};

/// How hard to try before giving up on a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts in all).
    pub max_retries: u32,
    /// The first backoff delay; each next one doubles, plus up to as much again of jitter.
    pub base_delay: Duration,
    /// The longest backoff delay of our own choosing.
    pub max_delay: Duration,
    /// The longest delay a server may ask for; a longer `Retry-After` is cut to this.
    pub max_server_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_server_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    fn backoff(&self) -> ExponentialBuilder {
        ExponentialBuilder::new()
            .with_min_delay(self.base_delay)
            .with_factor(2.0)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_retries as usize)
            .with_jitter()
    }
}

/// What one call's attempts left behind, read by the client when it maps the final error.
#[derive(Debug)]
pub struct CallState {
    attempts: AtomicU32,
    last_status: AtomicU16,
    /// When the whole call times out: a retry that could not start before then is not made,
    /// so the caller sees the server's error rather than a bare timeout.
    deadline: Option<Instant>,
}

impl CallState {
    pub fn new(deadline: Option<Instant>) -> Self {
        Self {
            attempts: AtomicU32::new(0),
            last_status: AtomicU16::new(0),
            deadline,
        }
    }

    /// Requests sent so far (at least 1 once the call has begun).
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
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

impl Failed {
    fn retryable(&self) -> bool {
        !matches!(self, Failed::Fatal(_))
    }

    fn into_error(self) -> OpenAIError {
        match self {
            Failed::Status { status, body, .. } => api_error(status, &body),
            Failed::Connect(e) => OpenAIError::Reqwest(e),
            Failed::Fatal(e) => e,
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

/// The statuses worth another try: rate limits and transient server or gateway failures.
pub fn is_retryable_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 500 | 502 | 503 | 504)
}

/// An error as async-openai would have built it from the response, so the client maps both
/// paths the same way. Server errors are often not JSON; their text becomes the message.
fn api_error(status: StatusCode, body: &[u8]) -> OpenAIError {
    let api_error = match serde_json::from_slice::<WrappedError>(body) {
        Ok(w) => w.error,
        Err(_) => ApiError {
            message: String::from_utf8_lossy(body).trim().to_string(),
            ..ApiError::default()
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

/// The delay the server asked for: `retry-after-ms` (OpenAI, milliseconds) first, then
/// `Retry-After` in seconds or as an HTTP date.
pub fn server_delay(headers: &HeaderMap) -> Option<Duration> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let value = text(RETRY_AFTER.as_str())?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    // A date in the past means "now".
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

async fn attempt(
    factory: HttpRequestFactory,
    http: reqwest::Client,
    call: Arc<CallState>,
    strip_auth: bool,
) -> Result<Response, Failed> {
    call.attempts.fetch_add(1, Ordering::Relaxed);
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
    if !is_retryable_status(status) {
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
            let deadline = call.deadline;
            let max_server_delay = policy.max_server_delay;
            let counter = call.clone();
            let result = (|| attempt(factory.clone(), http.clone(), call.clone(), strip_auth))
                .retry(policy.backoff())
                .sleep(tokio::time::sleep)
                .when(Failed::retryable)
                .adjust(move |failed, backoff| {
                    // `None` from the backoff means the retries are used up.
                    let ours = backoff?;
                    let wait = match failed {
                        Failed::Status {
                            server_delay: Some(d),
                            ..
                        } => (*d).min(max_server_delay),
                        _ => ours,
                    };
                    match deadline {
                        Some(end) if Instant::now() + wait >= end => None,
                        _ => Some(wait),
                    }
                })
                .notify(move |failed, wait| {
                    tracing::warn!(
                        provider,
                        attempt = counter.attempts(),
                        wait_ms = wait.as_millis() as u64,
                        "{provider}: {}; retrying in {:.1}s",
                        failed.describe(),
                        wait.as_secs_f64()
                    );
                })
                .await;
            result.map_err(Failed::into_error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("header"));
        }
        h
    }

    #[test]
    fn reads_server_delays() {
        assert_eq!(
            server_delay(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            server_delay(&headers(&[("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        // The millisecond header is the more precise and wins.
        assert_eq!(
            server_delay(&headers(&[
                ("retry-after", "9"),
                ("retry-after-ms", "1500")
            ])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            server_delay(&headers(&[(
                "retry-after",
                "Wed, 21 Oct 2015 07:28:00 GMT"
            )])),
            Some(Duration::ZERO)
        );
        let later = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc2822();
        let d = server_delay(&headers(&[("retry-after", &later)])).expect("a date");
        assert!(
            d > Duration::from_secs(25) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        assert_eq!(server_delay(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(server_delay(&HeaderMap::new()), None);
    }

    #[test]
    fn retries_only_transient_statuses() {
        for s in [429, 500, 502, 503, 504] {
            assert!(
                is_retryable_status(StatusCode::from_u16(s).expect("status")),
                "{s}"
            );
        }
        for s in [400, 401, 403, 404, 422, 501] {
            assert!(
                !is_retryable_status(StatusCode::from_u16(s).expect("status")),
                "{s}"
            );
        }
    }

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
