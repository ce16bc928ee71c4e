//! The thought stream: a model's reply as it arrives, for the live views.
//!
//! A provider that streams its reply calls [`delta`] with each piece of text; the caller of the
//! model set the sink for that call with [`scope`]. The sink is task-local rather than a
//! parameter of [`crate::ports::llm::LlmClient::complete`] so that the router, the retries and
//! the replay between the caller and a provider carry it without knowing of it, and a client
//! that does not stream (a mock, a recording) simply never calls it.

use std::future::Future;
use std::sync::Arc;

/// Where a call's text goes as it streams.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

tokio::task_local! {
    static SINK: Sink;
}

/// Runs `call` with `sink` receiving every piece of text a provider streams during it.
pub async fn scope<F: Future>(sink: Sink, call: F) -> F::Output {
    SINK.scope(sink, call).await
}

/// One more piece of the reply under way; nothing when no one listens.
pub fn delta(text: &str) {
    if text.is_empty() {
        return;
    }
    let _ = SINK.try_with(|sink| sink(text));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[tokio::test]
    async fn deltas_reach_the_sink_of_their_call_only() {
        let got = Arc::new(Mutex::new(String::new()));
        let into = got.clone();
        let sink: Sink = Arc::new(move |t| into.lock().expect("lock").push_str(t));
        delta("before");
        scope(sink, async {
            delta("a");
            delta("");
            tokio::task::yield_now().await;
            delta("b");
        })
        .await;
        delta("after");
        assert_eq!(*got.lock().expect("lock"), "ab");
    }
}
