//! The gateway's one route: every request, whatever its path, checked for the run's token,
//! masked, paid for, forwarded to the real provider with the user's key, and its reply sent
//! back with the run's placeholders restored.

use std::sync::{Arc, Mutex};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use eventsource_stream::{EventStreamError, Eventsource};
use futures::stream::{BoxStream, StreamExt};
use ralph_actors::policy::budget::{BudgetExceeded, Grant, Ledger};
use ralph_actors::role::Role;
use ralph_actors::schema::usage::Usage;
use ralph_guard::{Guard, GuardError};
use serde_json::Value;

use super::protocol::{Call, Provider};
use super::purse::Purse;
use super::relay::{restore_strings, Relay};
use super::sealed::Sealer;

/// The largest request body read: a conversation with its files and images.
const MAX_BODY: usize = 64 << 20;

/// What the route shares: who may call, where to, and what pays.
pub(super) struct Shared {
    pub provider: Provider,
    /// The real base URL, without a trailing `/`.
    pub base_url: String,
    /// The user's key; the agent never sees it.
    pub key: Option<String>,
    /// The run's token: the only key the gateway takes.
    pub token: String,
    pub guard: Arc<Guard>,
    /// Masks requests, remembering what it masked.
    pub sealer: Sealer,
    /// The ledger calls are paid from now: one per iteration.
    pub ledger: Mutex<Arc<Ledger>>,
    pub purse: Purse,
    pub client: reqwest::Client,
    pub totals: Mutex<Totals>,
}

/// What the calls through the gateway came to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Paid calls answered.
    pub calls: u32,
    /// Calls refused for the budget.
    pub refused: u32,
    pub usage: Usage,
    pub cost: f64,
}

impl Shared {
    pub(super) fn ledger(&self) -> Arc<Ledger> {
        self.ledger
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn add(&self, usage: &Usage, cost: f64) {
        let mut t = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        t.calls += 1;
        t.usage += *usage;
        t.cost += cost;
    }

    fn refused(&self) {
        self.totals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .refused += 1;
    }

    /// A refusal in the provider's own shape.
    fn error(&self, status: StatusCode, kind: &str, message: &str) -> Response {
        let body = self.provider.error(status, kind, message);
        (status, axum::Json(body)).into_response()
    }
}

/// Every request goes here.
pub(super) async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().map(str::to_string);
    if shared.provider.key_sent(&parts.headers, query.as_deref()) != Some(shared.token.as_str()) {
        return shared.error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "ralph-loop's gateway takes only the token of the run it serves",
        );
    }
    let bytes = match to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return shared.error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                &e.to_string(),
            )
        }
    };
    let call = Call::of(&path);
    let mut body = match Masked::of(&shared, &bytes) {
        Ok(body) => body,
        Err(e) => {
            return shared.error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &e.to_string(),
            )
        }
    };
    let grant = match (&mut body, call.generates()) {
        (Masked::Json(value), true) => match pay(&shared, &call, value, bytes.len()) {
            Ok(grant) => Some(grant),
            Err(why) => {
                shared.refused();
                let message = format!("ralph-loop's budget refuses this call: {why}");
                return shared.error(StatusCode::BAD_REQUEST, "invalid_request_error", &message);
            }
        },
        _ => None,
    };
    let outgoing = match body {
        Masked::Json(value) => value.to_string().into_bytes(),
        Masked::Text(text) => text.into_bytes(),
    };
    let url = upstream_url(&shared, &path, query.as_deref());
    let sent = shared
        .client
        .request(parts.method.clone(), url)
        .headers(
            shared
                .provider
                .upstream_headers(&parts.headers, shared.key.as_deref()),
        )
        .body(outgoing)
        .send()
        .await;
    let reply = match sent {
        Ok(r) => r,
        Err(e) => {
            if let Some(paid) = grant {
                paid.release();
            }
            return shared.error(
                StatusCode::BAD_GATEWAY,
                "api_error",
                &format!(
                    "ralph-loop's gateway could not reach {}: {e}",
                    shared.provider.name()
                ),
            );
        }
    };
    answer(shared, call, grant, reply).await
}

/// A request's body, masked.
enum Masked {
    Json(Value),
    /// Not JSON (a form, a file, nothing): masked as text.
    Text(String),
}

impl Masked {
    /// `bytes` masked: every string of a JSON body, else the whole as text; `Err` in block mode
    /// when it holds a value.
    fn of(shared: &Shared, bytes: &[u8]) -> Result<Masked, GuardError> {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(mut value) => {
                shared.sealer.seal(&mut value)?;
                Ok(Masked::Json(value))
            }
            Err(_) if bytes.is_empty() => Ok(Masked::Text(String::new())),
            Err(_) => Ok(Masked::Text(
                shared.guard.seal(&String::from_utf8_lossy(bytes))?.text,
            )),
        }
    }
}

/// A call paid for: its reservation, on the ledger it was made on.
pub(super) struct Paid {
    ledger: Arc<Ledger>,
    grant: Grant,
}

impl Paid {
    /// Replaces the reservation by what `usage` costs; returns the cost.
    fn settle(self, usage: &Usage) -> f64 {
        self.ledger.settle_call(self.grant, usage, None).cost
    }

    /// Charges the whole reservation: no usage came.
    fn abandon(self) -> f64 {
        self.ledger.charge_abandoned(self.grant)
    }

    fn release(self) {
        self.ledger.release(self.grant);
    }
}

/// Reserves what the call may cost and lowers its reply cap to what is left; `Err`: why the
/// budget refuses it.
///
/// The prompt is counted from `bytes`, the request as it came: JSON's punctuation makes bytes
/// outnumber tokens by far more than any text's tokens outnumber its bytes / 3, and masking
/// changes a body's length by a few bytes a value, which the margin covers (a placeholder is at
/// most a few tokens).
fn pay(
    shared: &Shared,
    call: &Call,
    body: &mut Value,
    bytes: usize,
) -> Result<Paid, BudgetExceeded> {
    let model = call.model(body).unwrap_or_default();
    let prompt_tokens = (bytes / 3) as u64;
    let priced = format!("{}/{model}", shared.provider.name());
    let ledger = shared.ledger();
    let grant = ledger.authorize(Role::Artisan, &priced, prompt_tokens, call.max_output(body))?;
    call.limit(body, grant.max_tokens);
    Ok(Paid { ledger, grant })
}

fn upstream_url(shared: &Shared, path: &str, query: Option<&str>) -> String {
    let mut url = format!("{}{}", shared.base_url, shared.provider.upstream_path(path));
    // Gemini's clients may send the key in the query: it is the token, never forwarded.
    let query: Vec<&str> = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|pair| !pair.starts_with("key=") && !pair.is_empty())
        .collect();
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query.join("&"));
    }
    url
}

/// The reply, restored, and the call paid for from its usage.
async fn answer(
    shared: Arc<Shared>,
    call: Call,
    grant: Option<Paid>,
    reply: reqwest::Response,
) -> Response {
    let status = StatusCode::from_u16(reply.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut headers = HeaderMap::new();
    for (name, value) in reply.headers() {
        let dropped = [
            header::CONTENT_LENGTH,
            header::TRANSFER_ENCODING,
            header::CONNECTION,
        ];
        if !dropped.contains(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    let streamed = reply
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if streamed && status.is_success() {
        let body = Body::from_stream(relayed(shared, call, grant, reply));
        return (status, headers, body).into_response();
    }
    let bytes = reply.bytes().await.unwrap_or_default();
    let mut usage = Usage::default();
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut value) => {
            call.read_usage(&value, &mut usage);
            restore_strings(&shared.guard, &mut value, &[]);
            value.to_string().into_bytes()
        }
        Err(_) => shared
            .guard
            .restore(&String::from_utf8_lossy(&bytes))
            .into_bytes(),
    };
    if let Some(paid) = grant {
        if status.is_success() && usage != Usage::default() {
            let cost = paid.settle(&usage);
            shared.add(&usage, cost);
        } else if status.is_success() {
            // A reply with no usage: what it may have cost is all that is known.
            let cost = paid.abandon();
            shared.add(&usage, cost);
        } else {
            paid.release();
        }
    }
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    (status, headers, body).into_response()
}

/// Settles a streamed call when its stream ends or is dropped (the agent hung up): by the
/// usage its events reported, else by its whole reservation.
struct Settle {
    shared: Arc<Shared>,
    grant: Option<Paid>,
    usage: Option<Usage>,
}

impl Drop for Settle {
    fn drop(&mut self) {
        let Some(paid) = self.grant.take() else {
            return;
        };
        match self.usage {
            Some(usage) => {
                let cost = paid.settle(&usage);
                self.shared.add(&usage, cost);
            }
            None => {
                let cost = paid.abandon();
                self.shared.add(&Usage::default(), cost);
            }
        }
    }
}

/// The reply's events, restored, as the bytes of a server-sent-events stream.
/// The server-sent events of an upstream reply's body, read whole line by whole line.
pub(crate) fn events_of(
    bytes: BoxStream<'static, Result<bytes::Bytes, std::io::Error>>,
) -> BoxStream<'static, Result<eventsource_stream::Event, EventStreamError<std::io::Error>>> {
    let too_long = || std::io::Error::other("a line of the reply is over 16 MiB");
    crate::http::sse::whole_lines(bytes, too_long)
        .eventsource()
        .boxed()
}

fn relayed(
    shared: Arc<Shared>,
    call: Call,
    grant: Option<Paid>,
    reply: reqwest::Response,
) -> BoxStream<'static, Result<bytes::Bytes, std::io::Error>> {
    struct State {
        events:
            BoxStream<'static, Result<eventsource_stream::Event, EventStreamError<std::io::Error>>>,
        relay: Relay,
        settle: Settle,
        done: bool,
    }
    let relay = Relay::new(call, shared.guard.clone());
    let bytes = reply
        .bytes_stream()
        .map(|b| b.map_err(std::io::Error::other));
    let events = events_of(bytes.boxed());
    let state = State {
        events,
        relay,
        settle: Settle {
            shared,
            grant,
            usage: None,
        },
        done: false,
    };
    futures::stream::unfold(state, |mut s| async move {
        if s.done {
            return None;
        }
        let out = match s.events.next().await {
            Some(Ok(event)) => {
                let name = if event.event == "message" {
                    ""
                } else {
                    event.event.as_str()
                };
                s.relay.event(name, &event.data)
            }
            Some(Err(e)) => {
                tracing::warn!("the provider's stream broke off: {e}");
                s.done = true;
                s.relay.finish()
            }
            None => {
                s.done = true;
                s.relay.finish()
            }
        };
        s.settle.usage = s.relay.usage();
        let mut bytes = String::new();
        for (name, data) in out {
            if !name.is_empty() {
                bytes.push_str("event: ");
                bytes.push_str(&name);
                bytes.push('\n');
            }
            for line in data.lines() {
                bytes.push_str("data: ");
                bytes.push_str(line);
                bytes.push('\n');
            }
            bytes.push('\n');
        }
        Some((Ok(bytes::Bytes::from(bytes)), s))
    })
    .boxed()
}
