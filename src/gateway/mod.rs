//! The model gateway: a server on a loopback port that stands between a coding agent and its
//! model, so that LocalGuard and the budget hold for the agent's own calls as they hold for the
//! roles'.
//!
//! The agent is started pointed at the gateway (its definition's `gateway` section says how:
//! a base-URL variable, a flag) with a token made for the run, in place of the user's key,
//! which it never holds. Each request ([`server`]) must carry that token; its body is masked
//! string by string, as any call to a model is; a call that makes the model generate is
//! reserved on the run's ledger before it is sent, its reply cap lowered to what the budget can
//! pay, and refused in the provider's own error shape when nothing is left, so the agent stops
//! as it would at its provider's refusal; the reply comes back with the run's placeholders
//! restored, a streamed one event by event ([`relay`]); and the call is charged from the usage
//! the provider reports.
//!
//! Layout: [`purse`] (what pays: the run's budget, a ledger per iteration), [`protocol`] (what
//! each provider's protocol looks like: keys, errors, caps, usage, streamed pieces), [`relay`]
//! (restoring a reply on its way back), [`sealed`] (masking a request, remembering what was
//! masked), [`server`] (the route).

mod purse;
pub(crate) mod protocol;
pub(crate) mod relay;
pub(crate) mod sealed;
pub(crate) mod server;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use ralph_guard::Guard;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use protocol::Provider;
pub use purse::Purse;
pub use server::Totals;

use server::Shared;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("the model gateway could not listen on a loopback port: {0}")]
    Listen(std::io::Error),
    #[error("the model gateway's HTTP client: {0}")]
    Client(String),
    #[error("{provider}'s base URL `{url}` (from {origin}) is not an http(s) URL")]
    BaseUrl {
        provider: &'static str,
        url: String,
        origin: String,
    },
}

/// Where the gateway forwards to: the real provider, with the user's key.
#[derive(Clone, PartialEq, Eq)]
pub struct Upstream {
    pub provider: Provider,
    /// Without a trailing `/`.
    pub base_url: String,
    pub key: Option<String>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("key", &self.key.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Upstream {
    /// The provider's real base URL and key as `env` (the user's environment) gives them.
    pub fn from_env(
        provider: Provider,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, GatewayError> {
        let (url_envs, default) = provider.base_url();
        let given = url_envs.iter().find_map(|name| {
            Some((
                env(name).filter(|u| !u.trim().is_empty())?,
                name.to_string(),
            ))
        });
        let (url, origin) =
            given.unwrap_or_else(|| (default.to_string(), "the default".to_string()));
        let base_url = url.trim().trim_end_matches('/').to_string();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(GatewayError::BaseUrl {
                provider: provider.name(),
                url,
                origin,
            });
        }
        let key = provider
            .key_envs()
            .iter()
            .find_map(|k| env(k).filter(|v| !v.trim().is_empty()));
        Ok(Self {
            provider,
            base_url,
            key,
        })
    }
}

/// A running gateway; stopped when dropped.
pub struct Gateway {
    url: String,
    shared: Arc<Shared>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("url", &self.url).finish()
    }
}

impl Gateway {
    /// Starts a gateway to `upstream` on a free loopback port, masking with `guard` and paying
    /// from `purse` (nothing spent yet, no cap per iteration: see
    /// [`Gateway::begin_iteration`]).
    pub async fn start(
        upstream: Upstream,
        guard: Arc<Guard>,
        purse: Purse,
    ) -> Result<Self, GatewayError> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(GatewayError::Listen)?;
        let addr = listener.local_addr().map_err(GatewayError::Listen)?;
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| GatewayError::Client(e.to_string()))?;
        let shared = Arc::new(Shared {
            provider: upstream.provider,
            base_url: upstream.base_url,
            key: upstream.key,
            token: token(),
            sealer: sealed::Sealer::new(guard.clone()),
            guard,
            ledger: Mutex::new(Arc::new(purse.ledger(0.0, None))),
            purse,
            client,
            totals: Mutex::new(Totals::default()),
        });
        let app = axum::Router::new()
            .fallback(server::forward)
            .with_state(shared.clone());
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await });
            if let Err(e) = served.await {
                tracing::warn!("the model gateway stopped: {e}");
            }
        });
        Ok(Self {
            url: format!("http://{addr}"),
            shared,
            stop,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing `/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The run's token: what the agent is given as its key.
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// The LocalGuard its calls are masked by.
    pub fn guard(&self) -> &Guard {
        &self.shared.guard
    }

    pub fn provider(&self) -> Provider {
        self.shared.provider
    }

    /// An iteration begins: calls from now on draw on what is left of the budget after
    /// `spent` (the run's spending so far, every part of it), and on `cap` for the iteration
    /// when there is one. Calls under way settle on the ledger they were paid from.
    pub fn begin_iteration(&self, spent: f64, cap: Option<f64>) {
        let next = Arc::new(self.shared.purse.ledger(spent, cap));
        *self.shared.ledger.lock().unwrap_or_else(|e| e.into_inner()) = next;
    }

    /// What the calls so far came to.
    pub fn totals(&self) -> Totals {
        self.shared
            .totals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.stop.cancel();
        self.task.abort();
    }
}

/// A token no one can guess: 192 random bits, with a prefix that says what it is.
fn token() -> String {
    let bytes: [u8; 24] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("ralph-gw-{hex}")
}

#[cfg(test)]
mod tests;
