//! The dashboard's HTTP API and page, behind [`super::guard::check`]:
//!
//! - `GET /`, `/app.js`, `/style.css`: the page (compiled in);
//! - `GET /api/sessions`: the project's runs ([`super::sessions::list`]);
//! - `GET /api/sessions/{id}/events`: its events as server-sent events ([`super::tail`]),
//!   from after the `Last-Event-ID` a reconnecting browser sends; `?speed=N` paces a replay;
//! - `GET /api/sessions/{id}/view`: its view (`views::state::ViewState`, the events folded)
//!   as server-sent events, one after each batch of events: what the page renders; the same
//!   `Last-Event-ID` and `?speed=N`;
//! - `GET /api/sessions/{id}/diff/{n}`: iteration n's change;
//! - `POST /api/sessions/{id}/pause|resume|abort`: asked of the run ([`crate::remote`]);
//! - `POST /api/sessions/{id}/breaker/reset`: the agent loop's breaker closed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::page::{APP_JS, INDEX, STYLE};
use super::{guard, sessions, tail};
use crate::remote::{self, Request};

/// What every handler shares.
#[derive(Clone)]
pub struct Shared {
    pub root: Arc<PathBuf>,
    pub token: Arc<String>,
    /// The port bound: the only one a request's Host may name.
    pub port: u16,
    pub hub: Arc<tail::Hub>,
    /// Ends every stream (the dashboard closes).
    pub stop: CancellationToken,
}

pub fn router(shared: Shared) -> Router {
    Router::new()
        .route("/", get(|| asset("text/html; charset=utf-8", INDEX)))
        .route(
            "/app.js",
            get(|| asset("text/javascript; charset=utf-8", APP_JS)),
        )
        .route(
            "/style.css",
            get(|| asset("text/css; charset=utf-8", STYLE)),
        )
        .route("/api/sessions", get(list))
        .route("/api/sessions/{id}/events", get(events))
        .route("/api/sessions/{id}/view", get(view))
        .route("/api/sessions/{id}/diff/{n}", get(diff))
        .route("/api/sessions/{id}/breaker/reset", post(reset))
        .route("/api/sessions/{id}/{action}", post(control))
        .layer(axum::middleware::from_fn_with_state(
            guard::Guard {
                token: shared.token.clone(),
                port: shared.port,
            },
            guard::check,
        ))
        .with_state(shared)
}

async fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            // The page runs only its own script: no inline code, nothing from elsewhere.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:",
            ),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn list(State(s): State<Shared>) -> Response {
    let root = s.root.clone();
    match tokio::task::spawn_blocking(move || sessions::list(&root)).await {
        Ok(listed) => Json(listed).into_response(),
        Err(e) => said(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `?speed=N` on the events: a replay, each event at its recorded pace divided by N.
#[derive(serde::Deserialize)]
struct Pace {
    speed: Option<f64>,
}

async fn events(
    State(s): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(pace): Query<Pace>,
    headers: HeaderMap,
) -> Response {
    stream(s, &id, tail::Shape::Events, pace, &headers)
}

async fn view(
    State(s): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(pace): Query<Pace>,
    headers: HeaderMap,
) -> Response {
    stream(s, &id, tail::Shape::View, pace, &headers)
}

/// Run `id`'s log as server-sent events of `shape`, from after the `Last-Event-ID` sent.
fn stream(s: Shared, id: &str, shape: tail::Shape, pace: Pace, headers: &HeaderMap) -> Response {
    let Some(dir) = sessions::folder(&s.root, id) else {
        return said(StatusCode::NOT_FOUND, format!("no run {id} here"));
    };
    let after: u64 = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let rx = s.hub.follow(
        dir.join(crate::printers::event_log::FILE),
        shape,
        after,
        pace.speed,
        s.stop.clone(),
    );
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

async fn diff(State(s): State<Shared>, UrlPath((id, n)): UrlPath<(String, u32)>) -> Response {
    let Some(dir) = sessions::folder(&s.root, &id) else {
        return said(StatusCode::NOT_FOUND, format!("no run {id} here"));
    };
    let root = s.root.clone();
    match tokio::task::spawn_blocking(move || sessions::diff(&root, &dir, n)).await {
        Ok(Ok(text)) => {
            ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
        }
        Ok(Err(why)) if why.is_absent() => said(StatusCode::NOT_FOUND, why.to_string()),
        Ok(Err(why)) => said(StatusCode::INTERNAL_SERVER_ERROR, why.to_string()),
        Err(e) => said(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn control(
    State(s): State<Shared>,
    UrlPath((id, action)): UrlPath<(String, String)>,
) -> Response {
    let Some(dir) = sessions::folder(&s.root, &id) else {
        return said(StatusCode::NOT_FOUND, format!("no run {id} here"));
    };
    let (request, done) = match action.as_str() {
        "pause" => (Request::Pause, "pausing before the next step"),
        "resume" => (Request::Resume, "resumed"),
        "abort" if id.starts_with("loop-") => (
            Request::Stop,
            "stopping: the iteration under way finishes, its commit included; then the loop stops",
        ),
        "abort" => (
            Request::Stop,
            "stopping: the step under way ends, the run is saved and can be resumed",
        ),
        _ => return said(StatusCode::NOT_FOUND, format!("no action {action}")),
    };
    match remote::send(&dir, request) {
        Ok(_) => said(StatusCode::OK, done.to_string()),
        Err(e) => said(StatusCode::CONFLICT, e.to_string()),
    }
}

async fn reset(State(s): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    if sessions::folder(&s.root, &id).is_none() || !id.starts_with("loop-") {
        return said(
            StatusCode::NOT_FOUND,
            "only an agent loop has a breaker".to_string(),
        );
    }
    let ralph = s.root.join(crate::session::RALPH_DIR);
    match tokio::task::spawn_blocking(move || crate::regent::state::reset_breaker(&ralph)).await {
        Ok(Ok(done)) => {
            let breaker = match done {
                crate::regent::state::BreakerReset::Done { .. } => Some("CLOSED"),
                _ => None,
            };
            Json(json!({ "message": done.to_string(), "breaker": breaker })).into_response()
        }
        Ok(Err(why)) => said(StatusCode::CONFLICT, why.to_string()),
        Err(e) => said(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// A reply the page shows as it is: `{"message": …}`.
fn said(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "message": message }))).into_response()
}
