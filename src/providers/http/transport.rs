//! The connection pool every client shares, and the transport the clients over `reqwest` send
//! through: a call's attempts under its deadline, and the one place where what failed becomes an
//! [`LlmError`] kind.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ralph_actors::ports::llm::LlmError;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use reqwest::{Response, StatusCode, Url};

use super::error_body::status_of_error_in_success;
use super::failure::{status_kind, ErrorParser, Failure, Problem};
use crate::http::retry::{self, retry, RetryPolicy};
use crate::http::text::chain;
use crate::providers::options::ClientOptions;

/// Connecting is quick or the host is down; a reply may take minutes, which the call's own
/// deadline covers.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

static SHARED: std::sync::OnceLock<Result<reqwest::Client, String>> = std::sync::OnceLock::new();

fn shared() -> &'static Result<reqwest::Client, String> {
    SHARED.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("ralph-loop/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())
    })
}

/// Builds the shared pool on a thread of its own, so that it is ready by the first call
/// without delaying anything before it: setting up TLS reads and parses every root certificate
/// of the system (300 files here, 5 ms), more than the rest of ralph-loop's start-up. Called
/// when a run's clients are made; the baseline test run hides it.
pub(crate) fn prewarm() {
    if SHARED.get().is_none() {
        let _ = std::thread::Builder::new()
            .name("http-prewarm".into())
            .spawn(|| {
                shared();
            });
    }
}

/// The connection pool every client shares: quick to connect or failing, with no limit of its
/// own on a reply (each call's deadline is that). Built once per process, at its first use or
/// by [`prewarm`], and taken by each call, not by a client when it is made.
pub(crate) fn client(provider: &str) -> Result<reqwest::Client, LlmError> {
    shared().clone().map_err(|e| LlmError::Config {
        model: format!("{provider}/*"),
        message: format!("cannot set up HTTP: {e}"),
    })
}

/// One request, ready to be sent as many times as the retries need.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Outgoing {
    pub fn json(
        url: Url,
        mut headers: HeaderMap,
        body: &impl serde::Serialize,
        provider: &str,
    ) -> Result<Self, LlmError> {
        let body = serde_json::to_vec(body).map_err(|e| LlmError::InvalidReply {
            provider: provider.into(),
            message: format!("cannot encode the request: {e}"),
        })?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Self {
            url,
            headers,
            body: body.into(),
        })
    }
}

/// How many times a call was sent, and how many of those the server had begun to answer when
/// they were given up on (a stream that stalled, then sent again): the provider may bill those.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Attempts {
    pub made: u32,
    pub lost: u32,
}

/// A whole JSON body, not a stream of JSON lines (Ollama's `application/x-ndjson`), which is
/// read as it comes, under the idle timeout.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// A response made again of its status, headers and a body already read (or wrapped).
pub(crate) fn rebuilt(
    status: StatusCode,
    headers: HeaderMap,
    body: impl Into<reqwest::Body>,
) -> Response {
    let mut rebuilt = ::http::Response::new(body.into());
    *rebuilt.status_mut() = status;
    *rebuilt.headers_mut() = headers;
    Response::from(rebuilt)
}

/// Sends a provider's requests: the pool, the patience and the error mapping of one client.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub provider: &'static str,
    /// The variable the key comes from, named in authentication errors.
    pub api_key_env: String,
    pub policy: RetryPolicy,
    pub timeout: Duration,
    pub idle_timeout: Duration,
    parse_error: ErrorParser,
    /// Added to connection failures: what the user should check (Ollama: is it running?).
    network_hint: Option<String>,
}

impl Transport {
    pub fn new(
        provider: &'static str,
        opts: &ClientOptions,
        api_key_env: String,
        parse_error: ErrorParser,
    ) -> Result<Self, LlmError> {
        Ok(Self {
            provider,
            api_key_env,
            policy: RetryPolicy::default().with_max_retries(opts.max_retries),
            timeout: opts.timeout,
            idle_timeout: opts.idle_timeout,
            parse_error,
            network_hint: None,
        })
    }

    pub fn with_network_hint(mut self, hint: String) -> Self {
        self.network_hint = Some(hint);
        self
    }

    /// Sends `out` until an attempt's `read` succeeds, the failure is not worth retrying, the
    /// retries are used up, or the call's deadline passes. Returns the reply and the attempts.
    pub async fn call<T, R, Fut>(&self, out: &Outgoing, read: R) -> Result<(T, Attempts), LlmError>
    where
        R: Fn(Response) -> Fut + Sync,
        Fut: Future<Output = Result<T, Failure>> + Send,
        T: Send,
    {
        let deadline = Instant::now() + self.timeout;
        let http = client(self.provider)?;
        let attempts = AtomicU32::new(0);
        let stalled = AtomicU32::new(0);
        let work = retry(
            &self.policy,
            self.provider,
            Some(deadline),
            &attempts,
            || async {
                let result = self.attempt(&http, out, &read).await;
                if matches!(result, Err(Failure::Stalled)) {
                    stalled.fetch_add(1, Ordering::Relaxed);
                }
                result
            },
        );
        match tokio::time::timeout(self.timeout, work).await {
            Err(_) => Err(LlmError::Timeout {
                provider: self.provider.into(),
                seconds: ceil_secs(self.timeout),
            }),
            Ok(Ok(value)) => Ok((
                value,
                Attempts {
                    made: attempts.load(Ordering::Relaxed).max(1),
                    lost: stalled.load(Ordering::Relaxed),
                },
            )),
            Ok(Err(failure)) => Err(self.error(failure, attempts.load(Ordering::Relaxed).max(1))),
        }
    }

    async fn attempt<T, R, Fut>(
        &self,
        http: &reqwest::Client,
        out: &Outgoing,
        read: &R,
    ) -> Result<T, Failure>
    where
        R: Fn(Response) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let response = http
            .post(out.url.clone())
            .headers(out.headers.clone())
            .body(out.body.clone())
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    Failure::Connect(chain(&e))
                } else {
                    Failure::Network(chain(&e))
                }
            })?;
        let status = response.status();
        if status.is_success() && !is_json(response.headers()) {
            return read(response).await;
        }
        if status.is_success() {
            let headers = response.headers().clone();
            let body = response
                .bytes()
                .await
                .map_err(|e| Failure::Network(format!("the reply broke off: {}", chain(&e))))?;
            let Some(code) = status_of_error_in_success(&body) else {
                return read(rebuilt(status, headers, body)).await;
            };
            // A gateway answered for a failing server: its error, as its status would have.
            let server_delay = (self.parse_error)(&body).and_then(|p| p.retry_delay);
            return Err(Failure::Status {
                status: StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                body,
                server_delay,
            });
        }
        let header_delay = retry::server_delay(response.headers());
        // The body only feeds the error message; a body that cannot be read leaves the status.
        let body = response.bytes().await.unwrap_or_default();
        let server_delay =
            header_delay.or_else(|| (self.parse_error)(&body).and_then(|p| p.retry_delay));
        Err(Failure::Status {
            status,
            body,
            server_delay,
        })
    }

    /// The error a call ends with, after `attempts` attempts.
    fn error(&self, failure: Failure, attempts: u32) -> LlmError {
        let provider = self.provider.to_string();
        match failure {
            Failure::Status {
                status,
                body,
                server_delay,
            } => {
                let problem =
                    (self.parse_error)(&body).unwrap_or_else(|| Problem::from_text(status, &body));
                self.status_error(status.as_u16(), problem, attempts, server_delay)
            }
            Failure::InStream {
                status, message, ..
            } => self.status_error(status, Problem::message(message), attempts, None),
            Failure::Connect(message) => LlmError::Network {
                provider,
                message: match &self.network_hint {
                    Some(hint) => format!("{message} ({hint})"),
                    None => message,
                },
            },
            Failure::Network(message) => LlmError::BrokeOff { provider, message },
            Failure::Stalled => LlmError::Stalled {
                provider,
                seconds: ceil_secs(self.idle_timeout),
                attempts,
            },
            Failure::Invalid(message) => LlmError::InvalidReply { provider, message },
        }
    }

    /// Every provider's statuses mean the same to a user; only the body's words differ.
    pub fn status_error(
        &self,
        status: u16,
        problem: Problem,
        attempts: u32,
        server_delay: Option<Duration>,
    ) -> LlmError {
        status_kind(
            self.provider,
            &self.api_key_env,
            status,
            attempts,
            server_delay,
            problem,
        )
    }
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport() -> Transport {
        Transport::new("acme", &ClientOptions::default(), "ACME_KEY".into(), |_| {
            None
        })
        .expect("transport")
    }

    #[test]
    fn statuses_map_to_kinds() {
        let t = transport();
        let p = |m: &str| Problem::message(m);
        assert!(matches!(
            t.status_error(401, p("bad key"), 1, None),
            LlmError::Auth { env_var, .. } if env_var == "ACME_KEY"
        ));
        assert!(matches!(
            t.status_error(403, p("no"), 1, None),
            LlmError::Auth { .. }
        ));
        assert!(matches!(
            t.status_error(
                400,
                Problem {
                    auth: true,
                    ..p("API key not valid")
                },
                1,
                None
            ),
            LlmError::Auth { .. }
        ));
        assert!(matches!(
            t.status_error(429, p("slow"), 3, Some(Duration::from_millis(1500))),
            LlmError::RateLimited {
                attempts: 3,
                retry_after_ms: Some(1500),
                ..
            }
        ));
        assert!(matches!(
            t.status_error(
                400,
                p("prompt is too long: 210000 tokens > 200000 maximum"),
                1,
                None
            ),
            LlmError::ContextTooLong { .. }
        ));
        assert!(matches!(
            t.status_error(413, p("request_too_large"), 1, None),
            LlmError::ContextTooLong { .. }
        ));
        assert!(matches!(
            t.status_error(400, p("temperature: must be at most 1"), 1, None),
            LlmError::Request { status: 400, .. }
        ));
        assert!(matches!(
            t.status_error(529, p("Overloaded"), 4, None),
            LlmError::Server {
                status: 529,
                attempts: 4,
                ..
            }
        ));
    }
}
