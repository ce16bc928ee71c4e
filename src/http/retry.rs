//! One retry policy for every call to a remote service: the model providers (the
//! OpenAI-compatible clients' tower service and the clients written over `reqwest`) and the
//! embedders of the MemoryVault.
//!
//! A call is retried, with exponential backoff and jitter (`backon`), when its attempt failed in
//! a way that passes with time ([`Attempted::is_transient`]: 429, 500, 502, 503, 504, 529, a
//! connection that could not be made, a stream that went silent). A delay the server asks for
//! (`retry-after-ms`, `Retry-After`, a body's own hint) replaces ours, up to
//! [`RetryPolicy::max_server_delay`]. A retry that could not start before the call's deadline
//! is not made, so the caller sees the server's error rather than a bare timeout.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use reqwest::header::{HeaderMap, RETRY_AFTER};

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

    pub fn with_base_delay(mut self, base_delay: Duration) -> Self {
        self.base_delay = base_delay;
        self
    }

    pub fn with_max_server_delay(mut self, max_server_delay: Duration) -> Self {
        self.max_server_delay = max_server_delay;
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

/// What the policy needs to know of a failed attempt.
pub trait Attempted {
    /// Whether another attempt may succeed.
    fn is_transient(&self) -> bool;
    /// The delay the server asked for, if it named one.
    fn server_delay(&self) -> Option<Duration> {
        None
    }
    /// The failure in a few words, for the log line of a retry.
    fn describe(&self) -> String;
}

/// The statuses worth another try: rate limits, transient server and gateway failures, and
/// Anthropic's 529 "overloaded".
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
}

/// Runs `attempt` until it succeeds, fails for good, the retries are used up, or the next try
/// could not start before `deadline`. `attempts` counts the tries made; `service` names the
/// remote side in the log line of each retry.
pub async fn retry<T, E, F, Fut>(
    policy: &RetryPolicy,
    service: &str,
    deadline: Option<Instant>,
    attempts: &AtomicU32,
    mut attempt: F,
) -> Result<T, E>
where
    E: Attempted,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let max_server_delay = policy.max_server_delay;
    (move || {
        attempts.fetch_add(1, Ordering::Relaxed);
        attempt()
    })
    .retry(policy.backoff())
    .sleep(tokio::time::sleep)
    .when(E::is_transient)
    .adjust(move |failure: &E, ours| {
        // `None` from the backoff means the retries are used up.
        let ours = ours?;
        let wait = failure
            .server_delay()
            .map_or(ours, |d| d.min(max_server_delay));
        match deadline {
            Some(end) if Instant::now() + wait >= end => None,
            _ => Some(wait),
        }
    })
    .notify(|failure: &E, wait| {
        let attempt = attempts.load(Ordering::Relaxed);
        // Said to the run through its own observer (`observe_retries`).
        tracing::warn!(
            on_bus = true,
            service,
            attempt,
            wait_ms = wait.as_millis() as u64,
            "{service}: {}; retrying in {:.1}s",
            failure.describe(),
            wait.as_secs_f64()
        );
        tell_observer(format!(
            "{service}: {} (attempt {attempt}); retrying in {:.1}s",
            failure.describe(),
            wait.as_secs_f64()
        ));
    })
    .await
}

type Observer = std::sync::Arc<dyn Fn(String) + Send + Sync>;

/// Who hears of each retry besides the log: the run's event stream, so that a user sees a
/// provider being retried in the live view and the report. Set at the binary's edge.
static OBSERVER: std::sync::RwLock<Option<Observer>> = std::sync::RwLock::new(None);

/// Tells `observer` of every retry until the returned guard is dropped.
pub fn observe_retries(observer: impl Fn(String) + Send + Sync + 'static) -> RetryObserver {
    *OBSERVER.write().unwrap_or_else(|e| e.into_inner()) = Some(std::sync::Arc::new(observer));
    RetryObserver(())
}

/// Stops the retry observer when dropped.
#[derive(Debug)]
#[must_use = "retries are observed until this is dropped"]
pub struct RetryObserver(());

impl Drop for RetryObserver {
    fn drop(&mut self) {
        *OBSERVER.write().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

fn tell_observer(message: String) {
    let observer = OBSERVER.read().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(observer) = observer {
        observer(message);
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::AtomicU32;

    use reqwest::header::HeaderValue;

    use super::*;

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
        for s in [429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 422, 501] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    /// A scripted attempt's failure.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Fail {
        transient: bool,
        delay: Option<Duration>,
    }

    impl Fail {
        /// A failure that may pass, retried after `delay` when the server asks for one.
        fn transient(delay: Option<Duration>) -> Fail {
            Fail {
                transient: true,
                delay,
            }
        }
    }

    /// How many attempts `retry` makes, under `policy` and before `deadline`, of a call that
    /// always fails with `fail`.
    async fn attempts_failing(policy: &RetryPolicy, deadline: Option<Instant>, fail: Fail) -> u32 {
        let attempts = AtomicU32::new(0);
        let result: Result<(), Fail> =
            retry(
                policy,
                "test",
                deadline,
                &attempts,
                || async move { Err(fail) },
            )
            .await;
        assert_eq!(result, Err(fail));
        attempts.load(Ordering::Relaxed)
    }

    impl Attempted for Fail {
        fn is_transient(&self) -> bool {
            self.transient
        }
        fn server_delay(&self) -> Option<Duration> {
            self.delay
        }
        fn describe(&self) -> String {
            format!("{self:?}")
        }
    }

    fn quick(retries: u32) -> RetryPolicy {
        RetryPolicy::default()
            .with_max_retries(retries)
            .with_base_delay(Duration::from_millis(1))
    }

    #[tokio::test]
    async fn transient_failures_are_retried_until_the_retries_run_out() {
        assert_eq!(
            attempts_failing(&quick(2), None, Fail::transient(None)).await,
            3,
            "the first try and 2 retries"
        );
    }

    #[tokio::test]
    async fn a_lasting_failure_is_not_retried_and_a_success_ends_the_call() {
        let lasting = Fail {
            transient: false,
            delay: None,
        };
        assert_eq!(attempts_failing(&quick(5), None, lasting).await, 1);

        let tries = AtomicU32::new(0);
        let result = retry(&quick(5), "test", None, &tries, || async {
            match tries.load(Ordering::Relaxed) {
                1 => Err(Fail::transient(None)),
                n => Ok(n),
            }
        })
        .await;
        assert_eq!(result, Ok(2));
    }

    #[tokio::test]
    async fn the_server_delay_is_honoured_and_a_retry_past_the_deadline_is_not_made() {
        let started = Instant::now();
        let policy = quick(1).with_max_server_delay(Duration::from_millis(120));
        let hour = Fail::transient(Some(Duration::from_secs(3600)));
        attempts_failing(&policy, None, hour).await;
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(120) && waited < Duration::from_secs(5),
            "the server's hour was cut to the policy's 120 ms: {waited:?}"
        );

        let deadline = Instant::now() + Duration::from_millis(50);
        let second = Fail::transient(Some(Duration::from_secs(1)));
        assert_eq!(
            attempts_failing(&quick(3), Some(deadline), second).await,
            1,
            "no retry after the deadline"
        );
    }
}
