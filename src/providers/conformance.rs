//! What every provider client must do the same way, as one table run against each of them:
//! a wait the server asks for is waited, a failing server is given up on after the retries, a
//! page that is no provider's JSON is an invalid reply, a stream that stalls is sent again and
//! then reported, and a silent server times out. Each provider's module gives its [`Wire`] (how
//! its server answers); what only one provider does stays in that module's own tests.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::future::join_all;
use ralph_actors::ports::llm::{LlmClient, LlmError};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::options::ClientOptions;
use crate::testkit::server;
use crate::testkit::wire::{failure, garbage, request, serving};

/// A change to a client's options.
pub type Tweak = fn(&mut ClientOptions);

/// How one provider's server answers, for the table.
pub struct Wire {
    pub name: &'static str,
    /// A model of this provider (`provider/model`).
    pub model: &'static str,
    /// A client of this provider for a server at `base` (the server's own address).
    pub client: fn(&str, Tweak) -> Box<dyn LlmClient>,
    /// A streamed reply of these pieces of text, with its usage.
    pub stream: fn(&[&str]) -> ResponseTemplate,
    /// The first event of a stream alone, and the stream's content type: what a server that
    /// then stalls sends.
    pub first: fn() -> (String, &'static str),
    /// An error with this status and message, in the provider's own shape.
    pub error: fn(u16, &str) -> ResponseTemplate,
}

/// The provider's own name for an error of `status`: `busy` for a 429 (too many requests),
/// `failed` for any other.
pub fn kind_of(status: u16, busy: &'static str, failed: &'static str) -> &'static str {
    if status == 429 {
        busy
    } else {
        failed
    }
}

/// Every provider of the table.
fn wires() -> Vec<Wire> {
    vec![
        crate::testkit::wire::openai_wire(),
        super::anthropic::tests::wire(),
        super::gemini::tests::wire(),
        super::ollama::tests::wire(),
        super::azure::tests::wire(),
    ]
}

/// Runs `case` against every provider at once.
async fn each<F>(case: impl Fn(Wire) -> F)
where
    F: std::future::Future<Output = ()>,
{
    join_all(wires().into_iter().map(case)).await;
}

#[tokio::test]
async fn every_provider_waits_as_long_as_its_server_asks_then_succeeds() {
    each(|w| async move {
        let server = MockServer::start().await;
        let busy = (w.error)(429, "slow down").insert_header("retry-after", "1");
        Mock::given(method("POST"))
            .respond_with(busy)
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with((w.stream)(&["ok"]))
            .expect(1)
            .mount(&server)
            .await;
        let started = Instant::now();
        let reply = (w.client)(&server.uri(), |_| {})
            .complete(request(w.model))
            .await
            .unwrap_or_else(|e| panic!("{}: no reply after a retry: {e:?}", w.name));
        assert_eq!(reply.text, "ok", "{}", w.name);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(950),
            "{}: waited only {waited:?}",
            w.name
        );
    })
    .await;
}

#[tokio::test]
async fn every_provider_gives_up_on_a_failing_server_after_its_retries() {
    each(|w| async move {
        let server = serving((w.error)(500, "the upstream exploded"), 4).await;
        let err = failure(&*(w.client)(&server.uri(), |o| o.max_retries = 3), w.model).await;
        assert!(
            matches!(&err, LlmError::Server { status: 500, attempts: 4, message, .. }
                if message.contains("upstream exploded")),
            "{}: {err:?}",
            w.name
        );
    })
    .await;
}

#[tokio::test]
async fn every_provider_calls_a_page_that_is_not_its_json_an_invalid_reply() {
    each(|w| async move {
        let server = serving(garbage(), ..).await;
        let err = failure(&*(w.client)(&server.uri(), |o| o.stream = false), w.model).await;
        assert!(
            matches!(&err, LlmError::InvalidReply { message, .. } if message.contains("not json")),
            "{}: {err:?}",
            w.name
        );
        // Streamed, the same page holds no event at all.
        let err = failure(&*(w.client)(&server.uri(), |_| {}), w.model).await;
        assert!(
            matches!(err, LlmError::InvalidReply { .. }),
            "{}: {err:?}",
            w.name
        );
    })
    .await;
}

#[tokio::test]
async fn every_provider_calls_a_stream_that_ends_early_broken_off_and_sends_it_once() {
    each(|w| async move {
        // The stream's first chunk, then a proper end of the body: no terminator of the
        // protocol's own came.
        let (first, content_type) = (w.first)();
        let server = serving(
            wiremock::ResponseTemplate::new(200).set_body_raw(first, content_type),
            1,
        )
        .await;
        let err = failure(&*(w.client)(&server.uri(), |_| {}), w.model).await;
        assert!(
            matches!(err, LlmError::BrokeOff { .. }),
            "{}: {err:?}",
            w.name
        );
    })
    .await;
}

#[tokio::test]
async fn every_provider_sends_a_stalled_stream_again_then_reports_it() {
    each(|w| async move {
        let (first, content_type) = (w.first)();
        let (url, served) = server::stalling(content_type, &first).await;
        let stalls_briefly = (w.client)(&url, |o| {
            o.idle_timeout = Duration::from_millis(200);
            o.max_retries = 1;
        });
        let err = failure(&*stalls_briefly, w.model).await;
        assert!(
            matches!(
                err,
                LlmError::Stalled {
                    attempts: 2,
                    seconds: 1,
                    ..
                }
            ),
            "{}: {err:?}",
            w.name
        );
        assert_eq!(served.load(Ordering::SeqCst), 2, "{}", w.name);
    })
    .await;
}

#[tokio::test]
async fn every_provider_times_out_on_a_silent_server_without_waiting_for_it() {
    each(|w| async move {
        let late = (w.stream)(&["late"]).set_delay(Duration::from_secs(5));
        let server = serving(late, ..).await;
        let started = Instant::now();
        let err = (w.client)(&server.uri(), |o| o.timeout = Duration::from_millis(300))
            .complete(request(w.model))
            .await;
        assert!(
            matches!(err, Err(LlmError::Timeout { seconds: 1, .. })),
            "{}: {err:?}",
            w.name
        );
        assert!(started.elapsed() < Duration::from_secs(2), "{}", w.name);
    })
    .await;
}
