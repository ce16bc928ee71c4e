//! What the provider clients share. All of them: one connection pool per client ([`client`]),
//! the end of a call ([`finish`]: usage reported or estimated, the log line, the reply), and the
//! quoting of bodies and errors. The clients written directly over `reqwest` (Anthropic, Gemini,
//! Ollama) share the rest: their setup ([`Endpoint`]), the retry loop, the stream readers with
//! their idle timeout, and the one place where an HTTP failure becomes an [`LlmError`] kind.
//!
//! A call is a series of attempts under one deadline (`timeout`). An attempt sends the request
//! and reads the whole reply, streamed or not. The clients buffer the reply before returning it,
//! so an attempt that fails half-way can be made again without the caller ever seeing two
//! replies. Retried, with exponential backoff and jitter (`backon`) or the delay the server asks
//! for: 429, 500, 502, 503, 504 and 529 (Anthropic's "overloaded"), connection failures, a stream
//! silent for longer than `idle_timeout`, and an error the provider reports inside a stream before
//! any text. A connection that breaks half-way for another reason is not: the server may already
//! have billed the reply, and it would likely break again.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::stream::{BoxStream, StreamExt};
use ralph_actors::ports::llm::{
    ChatMessage, ChatReply, ChatRequest, LlmError, Speaker, TokenCounter,
};
use ralph_actors::schema::usage::Usage;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Response, StatusCode, Url};
use serde::de::DeserializeOwned;

use super::options::ClientOptions;
use super::tokens::TiktokenCounter;
use crate::http::retry::{self, is_retryable_status, retry, Attempted, RetryPolicy};
pub(crate) use crate::http::text::{chain, shorten};

/// Connecting is quick or the host is down; a reply may take minutes, which the call's own
/// deadline covers.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The connection pool every client shares: quick to connect or failing, with no limit of its
/// own on a reply (each call's deadline is that). Built once per process, because setting up TLS
/// reads and parses the system's root certificates, which costs more than everything else
/// ralph-loop does before its first call.
pub(crate) fn client(provider: &str) -> Result<reqwest::Client, LlmError> {
    static SHARED: std::sync::OnceLock<Result<reqwest::Client, String>> =
        std::sync::OnceLock::new();
    let shared = SHARED.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("ralph-loop/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())
    });
    shared.clone().map_err(|e| LlmError::Config {
        model: format!("{provider}/*"),
        message: format!("cannot set up HTTP: {e}"),
    })
}

/// Whether an error message says the prompt does not fit the model. Providers say so in a 400
/// with their own words, and no status or code of their own marks it.
pub(crate) fn says_too_long(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "prompt is too long",
        "context length",
        "context window",
        "maximum context",
        "exceeds the maximum number of tokens",
        "input token count",
        "too many tokens",
        "too many input tokens",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// What a provider's error body says, as its parser reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Problem {
    pub message: String,
    /// The provider says the key is bad, whatever the status (Gemini answers 400).
    pub auth: bool,
    /// The provider's own error code says the prompt is too long.
    pub too_long: bool,
    /// A delay the body asks for (Gemini's `RetryInfo`), used when no header names one.
    pub retry_delay: Option<Duration>,
}

impl Problem {
    pub fn message(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            ..Self::default()
        }
    }

    /// A body the provider's parser did not recognise (a proxy's page, say): its text.
    fn from_text(status: StatusCode, body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(body);
        let message = if text.trim().is_empty() {
            status.to_string()
        } else {
            shorten(&text)
        };
        Self::message(message)
    }
}

/// Reads a provider's error body; `None` when it is not the provider's error shape.
pub(crate) type ErrorParser = fn(&[u8]) -> Option<Problem>;

/// Why one attempt gave no reply.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A status other than success, with the body for the error message.
    Status {
        status: StatusCode,
        body: Bytes,
        server_delay: Option<Duration>,
    },
    /// The connection could not be made: nothing was sent, so a retry cannot double-bill.
    Connect(String),
    /// The stream went silent for longer than the idle timeout.
    Stalled,
    /// The provider reported an error inside a successful response (Anthropic's `error` event,
    /// Ollama's `{"error":..}` line). `status` is the HTTP status it stands for.
    InStream {
        status: u16,
        message: String,
        retryable: bool,
    },
    /// The connection broke after the request was sent.
    Network(String),
    /// The reply is not what the protocol promises.
    Invalid(String),
}

impl Attempted for Failure {
    fn is_transient(&self) -> bool {
        match self {
            Failure::Status { status, .. } => is_retryable_status(status.as_u16()),
            Failure::Connect(_) | Failure::Stalled => true,
            Failure::InStream { retryable, .. } => *retryable,
            Failure::Network(_) | Failure::Invalid(_) => false,
        }
    }

    fn server_delay(&self) -> Option<Duration> {
        match self {
            Failure::Status { server_delay, .. } => *server_delay,
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Failure::Status { status, .. } => format!("status {}", status.as_u16()),
            Failure::Connect(m) => format!("connection failed: {m}"),
            Failure::Stalled => "the reply stream stalled".into(),
            Failure::InStream { message, .. } => format!("error in the stream: {message}"),
            Failure::Network(m) | Failure::Invalid(m) => m.clone(),
        }
    }
}

impl Failure {
    /// An error reported inside a stream: retried when it is transient and no text has come.
    pub fn in_stream(status: u16, message: String, text_so_far: &str) -> Self {
        Failure::InStream {
            status,
            retryable: text_so_far.is_empty() && is_retryable_status(status),
            message,
        }
    }
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

/// Sends a provider's requests: the pool, the patience and the error mapping of one client.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    http: reqwest::Client,
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
            http: client(provider)?,
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
    pub async fn call<T, R, Fut>(&self, out: &Outgoing, read: R) -> Result<(T, u32), LlmError>
    where
        R: Fn(Response) -> Fut + Sync,
        Fut: Future<Output = Result<T, Failure>> + Send,
        T: Send,
    {
        let deadline = Instant::now() + self.timeout;
        let attempts = AtomicU32::new(0);
        let work = retry(
            &self.policy,
            self.provider,
            Some(deadline),
            &attempts,
            || self.attempt(out, &read),
        );
        match tokio::time::timeout(self.timeout, work).await {
            Err(_) => Err(LlmError::Timeout {
                provider: self.provider.into(),
                seconds: ceil_secs(self.timeout),
            }),
            Ok(Ok(value)) => Ok((value, attempts.load(Ordering::Relaxed).max(1))),
            Ok(Err(failure)) => Err(self.error(failure, attempts.load(Ordering::Relaxed).max(1))),
        }
    }

    async fn attempt<T, R, Fut>(&self, out: &Outgoing, read: &R) -> Result<T, Failure>
    where
        R: Fn(Response) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let response = self
            .http
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
        if status.is_success() {
            return read(response).await;
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
            Failure::Network(message) => LlmError::Network { provider, message },
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
        let provider = self.provider.to_string();
        let Problem {
            message,
            auth,
            too_long,
            ..
        } = problem;
        match status {
            _ if auth => LlmError::Auth {
                provider,
                env_var: self.api_key_env.clone(),
                message,
            },
            401 | 403 => LlmError::Auth {
                provider,
                env_var: self.api_key_env.clone(),
                message,
            },
            429 => LlmError::RateLimited {
                provider,
                attempts,
                retry_after_ms: server_delay.map(|d| d.as_millis() as u64),
                message,
            },
            // Only the prompt makes a request body too large.
            413 => LlmError::ContextTooLong { provider, message },
            400 if too_long || says_too_long(&message) => {
                LlmError::ContextTooLong { provider, message }
            }
            s if s >= 500 => LlmError::Server {
                provider,
                status: s,
                attempts,
                message,
            },
            s => LlmError::Request {
                provider,
                status: s,
                message,
            },
        }
    }
}

/// What is fixed about a provider over `reqwest`, for [`Endpoint::new`].
#[derive(Debug)]
pub(crate) struct Site {
    pub provider: &'static str,
    /// The variable the base URL comes from when the options give none.
    pub base_url_env: &'static str,
    pub default_base_url: &'static str,
    /// The provider's own host, which needs a key where a proxy in front of it may not; `None`
    /// when no host needs one (Ollama).
    pub official_host: Option<&'static str>,
    /// The header the key goes in, and what stands before the key there (`Bearer `).
    pub key_header: HeaderName,
    pub key_prefix: &'static str,
    pub parse_error: ErrorParser,
}

/// What the clients over `reqwest` set up alike: where to call, the key in its header, the
/// transport, and whether a call could be sent at all.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub transport: Transport,
    /// Without a trailing `/`.
    pub base_url: String,
    /// Sent with every request: the key (when there is one) and any the provider adds.
    pub headers: HeaderMap,
    /// The site's official host, when the base URL is on it.
    official: Option<&'static str>,
    pub has_key: bool,
    pub stream: bool,
}

impl Endpoint {
    /// Resolves the base URL (`base_url`, else the site's variable, else its default) and the key
    /// (the options', else the one in `api_key_env`). A missing key is not an error here: a run
    /// whose roles never call this provider must not need one; the first call (or
    /// [`Endpoint::check`]) fails instead, before any request.
    pub fn new(
        site: &Site,
        opts: &ClientOptions,
        base_url: Option<String>,
        api_key_env: String,
    ) -> Result<Self, LlmError> {
        let (base_url, parsed) = resolve_base_url(
            site.provider,
            base_url,
            site.base_url_env,
            site.default_base_url,
        )?;
        let key = resolve_key(opts.api_key.clone(), &api_key_env);
        let mut headers = HeaderMap::new();
        if let Some(key) = &key {
            let value = format!("{}{key}", site.key_prefix);
            headers.insert(
                site.key_header.clone(),
                secret_header(site.provider, &value)?,
            );
        }
        Ok(Self {
            transport: Transport::new(site.provider, opts, api_key_env, site.parse_error)?,
            base_url,
            headers,
            official: site
                .official_host
                .filter(|host| parsed.host_str() == Some(host)),
            has_key: key.is_some(),
            stream: opts.stream,
        })
    }

    /// Fails with the error a call would give when the provider's own host has no key.
    pub fn check(&self) -> Result<(), LlmError> {
        match self.official {
            Some(host) if !self.has_key => Err(missing_key(
                self.transport.provider,
                &self.transport.api_key_env,
                host,
            )),
            _ => Ok(()),
        }
    }

    /// The client's `Debug`: where it calls and whether it has a key, never the key.
    pub fn fmt_debug(&self, f: &mut std::fmt::Formatter<'_>, name: &str) -> std::fmt::Result {
        f.debug_struct(name)
            .field("base_url", &self.base_url)
            .field("has_key", &self.has_key)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }

    /// Sends `body` as JSON to `url` with the endpoint's headers, through the transport; each
    /// attempt's reply is read by `streamed` (with the idle timeout) or `whole`. Returns the
    /// reply and the attempts made.
    pub async fn send<T, W, WF, S, SF>(
        &self,
        url: Url,
        body: &impl serde::Serialize,
        whole: W,
        streamed: S,
    ) -> Result<(T, u32), LlmError>
    where
        W: Fn(Response) -> WF + Sync,
        WF: Future<Output = Result<T, Failure>> + Send,
        S: Fn(Response, Duration) -> SF + Sync,
        SF: Future<Output = Result<T, Failure>> + Send,
        T: Send,
    {
        let out = Outgoing::json(url, self.headers.clone(), body, self.transport.provider)?;
        let (idle, stream) = (self.transport.idle_timeout, self.stream);
        let (whole, streamed) = (&whole, &streamed);
        self.transport
            .call(&out, move |response| async move {
                if stream {
                    streamed(response, idle).await
                } else {
                    whole(response).await
                }
            })
            .await
    }
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil() as u64
}

/// The body's bytes, each chunk awaited for at most `idle`: a silence that long ends the stream
/// with [`Failure::Stalled`]. Pings and keep-alive comments count as life.
fn idle_bytes(response: Response, idle: Duration) -> BoxStream<'static, Result<Bytes, Failure>> {
    futures::stream::unfold(
        Some(response.bytes_stream().boxed()),
        move |state| async move {
            let mut bytes = state?;
            match tokio::time::timeout(idle, bytes.next()).await {
                Err(_) => Some((Err(Failure::Stalled), None)),
                Ok(None) => None,
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(bytes))),
                Ok(Some(Err(e))) => Some((
                    Err(Failure::Network(format!(
                        "the reply broke off: {}",
                        chain(&e)
                    ))),
                    None,
                )),
            }
        },
    )
    .boxed()
}

/// A server-sent-events reply, event by event, under the idle timeout.
pub(crate) fn sse(
    response: Response,
    idle: Duration,
) -> BoxStream<'static, Result<Event, Failure>> {
    idle_bytes(response, idle)
        .eventsource()
        .map(|event| {
            event.map_err(|e| match e {
                EventStreamError::Transport(failure) => failure,
                EventStreamError::Utf8(e) => {
                    Failure::Invalid(format!("the stream is not UTF-8: {e}"))
                }
                EventStreamError::Parser(e) => {
                    Failure::Invalid(format!("the stream is not server-sent events: {e}"))
                }
            })
        })
        .boxed()
}

/// A newline-delimited JSON reply (Ollama), line by line without blank lines, under the idle
/// timeout.
pub(crate) fn ndjson(
    response: Response,
    idle: Duration,
) -> BoxStream<'static, Result<String, Failure>> {
    struct Lines {
        bytes: BoxStream<'static, Result<Bytes, Failure>>,
        buffer: Vec<u8>,
        /// Where the unread part of `buffer` starts: lines are read off by moving it, and the
        /// read part is dropped once per chunk, so a long reply arriving at once is not moved
        /// again for every line.
        read: usize,
        ended: bool,
    }
    fn line(bytes: &[u8]) -> Result<String, Failure> {
        std::str::from_utf8(bytes)
            .map(|s| s.trim().to_string())
            .map_err(|e| Failure::Invalid(format!("the stream is not UTF-8: {e}")))
    }
    let start = Lines {
        bytes: idle_bytes(response, idle),
        buffer: Vec::new(),
        read: 0,
        ended: false,
    };
    futures::stream::unfold(start, |mut s| async move {
        loop {
            let unread = &s.buffer[s.read..];
            if let Some(end) = unread.iter().position(|&b| b == b'\n') {
                let result = line(&unread[..end]);
                s.read += end + 1;
                match result {
                    Ok(text) if text.is_empty() => continue,
                    other => return Some((other, s)),
                }
            }
            if s.ended {
                // A last line without its newline still counts.
                let rest = std::mem::take(&mut s.buffer).split_off(s.read);
                s.read = 0;
                if rest.iter().all(u8::is_ascii_whitespace) {
                    return None;
                }
                return Some((line(&rest), s));
            }
            match s.bytes.next().await {
                Some(Ok(chunk)) => {
                    s.buffer.drain(..s.read);
                    s.read = 0;
                    s.buffer.extend_from_slice(&chunk);
                }
                Some(Err(failure)) => {
                    s.buffer.clear();
                    s.read = 0;
                    s.ended = true;
                    return Some((Err(failure), s));
                }
                None => s.ended = true,
            }
        }
    })
    .boxed()
}

/// A whole JSON reply.
pub(crate) async fn read_json<T: DeserializeOwned>(response: Response) -> Result<T, Failure> {
    let body = response
        .bytes()
        .await
        .map_err(|e| Failure::Network(format!("the reply broke off: {}", chain(&e))))?;
    serde_json::from_slice(&body).map_err(|e| {
        Failure::Invalid(format!(
            "{e} in `{}`",
            shorten(&String::from_utf8_lossy(&body))
        ))
    })
}

/// One JSON event or line of a stream.
pub(crate) fn parse_chunk<T: DeserializeOwned>(data: &str) -> Result<T, Failure> {
    serde_json::from_str(data).map_err(|e| Failure::Invalid(format!("{e} in `{}`", shorten(data))))
}

pub(crate) fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// The key variable the options name, else `default`.
pub(crate) fn key_env_or(given: &str, default: &str) -> String {
    if given.trim().is_empty() {
        default.to_string()
    } else {
        given.to_string()
    }
}

/// The key given in the options, else the one in the environment variable `env`.
pub(crate) fn resolve_key(given: Option<String>, env: &str) -> Option<String> {
    non_empty(given).or_else(|| {
        if env.is_empty() {
            None
        } else {
            non_empty(std::env::var(env).ok())
        }
    })
}

/// The base URL from the options, else the variable `env`, else `default`; without a trailing
/// slash, and checked to be http(s).
pub(crate) fn resolve_base_url(
    provider: &str,
    given: Option<String>,
    env: &str,
    default: &str,
) -> Result<(String, Url), LlmError> {
    let (base, origin) = match non_empty(given) {
        Some(u) => (u, format!("the providers.{provider}.base_url setting")),
        None => match non_empty(std::env::var(env).ok()) {
            Some(u) => (u, env.to_string()),
            None => (default.to_string(), "the default".to_string()),
        },
    };
    let base = base.trim_end_matches('/').to_string();
    let config = |message: String| LlmError::Config {
        model: format!("{provider}/*"),
        message,
    };
    let url = Url::parse(&base)
        .map_err(|e| config(format!("invalid base URL `{base}` (from {origin}): {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(config(format!(
            "base URL `{base}` (from {origin}) must start with http:// or https://"
        )));
    }
    Ok((base, url))
}

/// `{base}{path}` as a URL.
pub(crate) fn join(provider: &str, base: &str, path: &str) -> Result<Url, LlmError> {
    let full = format!("{base}{path}");
    Url::parse(&full).map_err(|e| LlmError::Config {
        model: format!("{provider}/*"),
        message: format!("invalid URL `{full}`: {e}"),
    })
}

/// A secret header value, kept out of debug output.
pub(crate) fn secret_header(provider: &str, value: &str) -> Result<HeaderValue, LlmError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| LlmError::Config {
        model: format!("{provider}/*"),
        message: "the API key contains characters an HTTP header cannot carry".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// The model id the provider knows: `anthropic/claude-x` → `claude-x`; a bare name as is.
pub(crate) fn model_id<'a>(provider: &str, model: &'a str) -> Result<&'a str, LlmError> {
    match model.split_once('/') {
        Some((p, id)) if p == provider && !id.is_empty() => Ok(id),
        None if !model.is_empty() => Ok(model),
        _ => Err(LlmError::Config {
            model: model.into(),
            message: format!("the {provider} client cannot serve this model"),
        }),
    }
}

/// The temperature as the user wrote it: `0.2f32` would serialise as `0.20000000298023224`.
pub(crate) fn temperature(t: f32) -> f64 {
    t.to_string().parse().unwrap_or(f64::from(t))
}

/// The system messages joined, and the others as alternating turns: consecutive messages of
/// one speaker are merged, since Anthropic and Gemini want user and model turns to alternate.
pub(crate) fn split_system(messages: &[ChatMessage]) -> (Option<String>, Vec<(Speaker, String)>) {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<(Speaker, String)> = Vec::new();
    for m in messages {
        match (m.speaker, turns.last_mut()) {
            (Speaker::System, _) => system.push(&m.content),
            (s, Some((last, text))) if *last == s => {
                text.push_str("\n\n");
                text.push_str(&m.content);
            }
            (s, _) => turns.push((s, m.content.clone())),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, turns)
}

/// Usage by estimate, when the provider reported none, with a warning.
pub(crate) fn estimate_usage(model: &str, messages: &[ChatMessage], reply: &str) -> Usage {
    let counter = TiktokenCounter::new();
    let usage = Usage {
        input_tokens: counter.count(model, messages),
        output_tokens: counter.count_text(model, reply),
        ..Usage::default()
    };
    tracing::warn!(
        "{model}: the server reported no token usage; counting {} in and {} out by estimate",
        usage.input_tokens,
        usage.output_tokens
    );
    usage
}

/// What a call brought back, in any provider's terms, before its usage is settled.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub text: String,
    /// The model the server says answered; empty when it names none.
    pub model: String,
    /// The usage the server reported; without it, the usage is estimated.
    pub usage: Option<Usage>,
    /// The reply stopped at `max_tokens`.
    pub cut_short: bool,
}

/// The reply to `request` after `attempts` attempts since `started`: the usage reported or an
/// estimate, and `model` (the id that was asked for) when the server named none.
pub(crate) fn finish(
    provider: &str,
    request: &ChatRequest,
    model: &str,
    outcome: Outcome,
    attempts: u32,
    started: Instant,
) -> ChatReply {
    if outcome.cut_short {
        tracing::warn!(
            "{}: the reply reached max_tokens ({}) and is cut short",
            request.model,
            request.max_tokens
        );
    }
    let usage = outcome
        .usage
        .unwrap_or_else(|| estimate_usage(&request.model, &request.messages, &outcome.text));
    tracing::debug!(
        model = %request.model,
        attempts,
        elapsed_ms = started.elapsed().as_millis() as u64,
        input = usage.input_tokens,
        output = usage.output_tokens,
        cache_read = usage.cache_read_tokens,
        cache_write = usage.cache_write_tokens,
        "{provider} call done"
    );
    ChatReply {
        text: outcome.text,
        usage,
        model: if outcome.model.is_empty() {
            model.to_string()
        } else {
            outcome.model
        },
    }
}

/// The authentication error for a missing key, before anything is sent.
pub(crate) fn missing_key(provider: &str, env_var: &str, host: &str) -> LlmError {
    LlmError::Auth {
        provider: provider.into(),
        env_var: env_var.into(),
        message: format!("no API key for {host}: {env_var} is not set"),
    }
}

#[cfg(test)]
pub(crate) mod test_server {
    //! A server that answers with headers and a first chunk, then says nothing: the stalled
    //! stream wiremock cannot produce.

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// Reads one request: its headers and a `Content-Length` body.
    async fn read_request(socket: &mut TcpStream) -> std::io::Result<()> {
        let mut seen = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = socket.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if seen.len() >= end + 4 + length {
                    return Ok(());
                }
            }
        }
    }

    /// Serves every connection a 200 with `content_type`, then `first` as one chunk, then
    /// silence for a minute. Returns the base URL and the count of connections served.
    pub async fn stalling(content_type: &str, first: &str) -> (String, Arc<AtomicUsize>) {
        stalling_then(content_type, first, usize::MAX, "").await
    }

    /// As [`stalling`] for the first `stalls` connections; the later ones get `whole` in full.
    pub async fn stalling_then(
        content_type: &str,
        first: &str,
        stalls: usize,
        whole: &str,
    ) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let served = Arc::new(AtomicUsize::new(0));
        let count = served.clone();
        let stalled = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n",
            first.len()
        );
        let complete = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{whole}",
            whole.len()
        );
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let n = count.fetch_add(1, Ordering::SeqCst);
                let (answer, stall) = if n < stalls {
                    (stalled.clone(), true)
                } else {
                    (complete.clone(), false)
                };
                tokio::spawn(async move {
                    if read_request(&mut socket).await.is_ok() {
                        let _ = socket.write_all(answer.as_bytes()).await;
                        let _ = socket.flush().await;
                        if stall {
                            tokio::time::sleep(Duration::from_secs(60)).await;
                        }
                    }
                });
            }
        });
        (url, served)
    }
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

    #[test]
    fn retries_transient_statuses_only() {
        for s in [429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 408, 409, 413, 501] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn merges_turns_and_joins_system_prompts() {
        let (system, turns) = split_system(&[
            ChatMessage::system("a"),
            ChatMessage::user("u1"),
            ChatMessage::user("u2"),
            ChatMessage::system("b"),
            ChatMessage::assistant("x"),
            ChatMessage::user("u3"),
        ]);
        assert_eq!(system.as_deref(), Some("a\n\nb"));
        assert_eq!(
            turns,
            vec![
                (Speaker::User, "u1\n\nu2".to_string()),
                (Speaker::Assistant, "x".to_string()),
                (Speaker::User, "u3".to_string()),
            ]
        );
        assert_eq!(split_system(&[ChatMessage::user("u")]).0, None);
    }

    #[test]
    fn small_helpers() {
        assert_eq!(temperature(0.2), 0.2);
        assert_eq!(model_id("acme", "acme/m-1").ok(), Some("m-1"));
        assert_eq!(model_id("acme", "m-1").ok(), Some("m-1"));
        assert!(model_id("acme", "other/m").is_err());
        assert!(says_too_long("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."));
        assert!(!says_too_long("invalid temperature"));
        assert!(resolve_base_url("acme", Some("localhost:1".into()), "X", "http://d").is_err());
        let (base, _) =
            resolve_base_url("acme", Some(" http://h:1/ ".into()), "X", "http://d").expect("url");
        assert_eq!(base, "http://h:1");
    }
}
