//! Requests to the web dashboard, through its router and its guard: whatever they ask, the
//! dashboard answers without a panic and never with a file from outside `.ralph/`.

use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::input::{block_on, file, pick, scratch, text};
use crate::views::web::guard::COOKIE;
use crate::views::web::routes::{router, Shared};
use crate::views::web::tail::Hub;

/// What no answer may hold: it is written beside `.ralph/` and outside the project.
pub const CANARY: &str = "CANARY-outside-dot-ralph-3f9a";
const TOKEN: &str = "00112233445566778899aabbccddeeff";
const PORT: u16 = 8642;
const SESSION: &str = "session-0f0f0f0f-0000-4000-8000-000000000000";
/// The most of an answer read: the dashboard's answers to these requests are far smaller.
const MOST_READ: usize = 4 << 20;

fn dashboard() -> Router {
    static ROUTER: OnceLock<Router> = OnceLock::new();
    ROUTER
        .get_or_init(|| {
            let root = scratch().join("web-project");
            file("secret.txt", CANARY.as_bytes());
            file("web-project/secret.txt", CANARY.as_bytes());
            file("web-project/.ralph/config.json", CANARY.as_bytes());
            let events = include_bytes!("../views/tui/testdata/median-js.events.jsonl");
            file(
                &format!("web-project/.ralph/{SESSION}/events.jsonl"),
                events,
            );
            router(Shared {
                root: root.into(),
                token: TOKEN.to_string().into(),
                port: PORT,
                hub: Hub::new().into(),
                stop: CancellationToken::new(),
            })
        })
        .clone()
}

/// One request: the first byte picks the method (and whether the right Host and token cookie
/// come with it); the rest is its target, then a header per line (`name: value`).
pub fn dashboard_request(data: &[u8]) {
    let (choice, rest) = pick(data, 8);
    let request = text(rest);
    let mut lines = request.split('\n');
    let target = lines.next().unwrap_or("/");
    let method = ["GET", "POST", "HEAD", "OPTIONS"][choice % 4];
    let mut builder = http::Request::builder().method(method).uri(target);
    if choice >= 4 {
        builder = builder
            .header(http::header::HOST, format!("127.0.0.1:{PORT}"))
            .header(http::header::COOKIE, format!("{COOKIE}={TOKEN}"));
    }
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            builder = builder.header(name.trim(), value.trim());
        }
    }
    // What hyper would refuse before the router sees it.
    let Ok(request) = builder.body(Body::empty()) else {
        return;
    };
    block_on(async {
        let Ok(response) = dashboard().oneshot(request).await;
        let streams = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream"));
        let body = response.into_body();
        // An event stream goes on while the run does: its first events are enough.
        let read = axum::body::to_bytes(body, MOST_READ);
        let wait = if streams {
            Duration::from_millis(1)
        } else {
            Duration::from_secs(10)
        };
        if let Ok(Ok(bytes)) = tokio::time::timeout(wait, read).await {
            if bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()) {
                panic!("the dashboard served a file from outside .ralph/");
            }
        }
    });
}
