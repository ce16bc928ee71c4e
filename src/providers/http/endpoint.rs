//! What the clients over `reqwest` set up alike ([`Endpoint`]): the base URL and the key as the
//! options, the environment or the defaults give them, the key in its header, and the check that
//! a call could be sent at all. OpenAI and Azure resolve their URL and key with the same helpers.

use std::future::Future;
use std::time::Duration;

use ralph_actors::ports::llm::LlmError;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Response, Url};

use super::failure::{ErrorParser, Failure};
use super::transport::{Attempts, Outgoing, Transport};
use crate::providers::options::ClientOptions;

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

    /// What [`Provider::describe`](crate::providers::Provider::describe) says of a provider
    /// whose models are `models` (`Claude`): where it calls them, and the key's variable.
    pub fn describe(&self, models: &str) -> String {
        format!(
            "{} ({models} via {}, key in {})",
            self.transport.provider, self.base_url, self.transport.api_key_env
        )
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
    ) -> Result<(T, Attempts), LlmError>
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

/// The authentication error for a missing key, before anything is sent.
pub(crate) fn missing_key(provider: &str, env_var: &str, host: &str) -> LlmError {
    LlmError::Auth {
        provider: provider.into(),
        env_var: env_var.into(),
        message: format!("no API key for {host}: {env_var} is not set"),
    }
}
