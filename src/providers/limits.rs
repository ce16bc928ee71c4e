//! Per-provider rate limits (requests and tokens per minute), with `governor`.
//!
//! One [`Limiter`] per provider is shared by every actor of a run (it is a cheap `Clone` of an
//! `Arc`), so parallel roles together stay under the provider's limit instead of each tripping
//! 429s and backing off. Each limit is a GCRA bucket that holds a minute's worth of cells and
//! refills continuously: a burst of up to the per-minute figure goes at once, after which each
//! request waits for its share of the minute (60/rpm seconds apart at `requests_per_minute`).
//!
//! The limit holds for what this run sends; other clients on the same key share the server's
//! limit but not this bucket, and the server's 429s are still retried (see [`super::retry`]).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use ralph_actors::ports::llm::{ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError};

use super::Provider;

/// A provider's limits, as configured (`providers.<name>.requests_per_minute`, ...).
/// `None` (or 0) is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimits {
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u32>,
}

/// governor's clock on tokio's time, so the limiter's waits and its sense of "now" agree (and a
/// test runtime with paused time would drive both).
#[derive(Debug, Clone)]
struct TokioClock {
    origin: tokio::time::Instant,
}

impl Clock for TokioClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::from(self.origin.elapsed())
    }
}

type Bucket = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<Nanos>>;

struct Buckets {
    clock: TokioClock,
    requests: Option<Bucket>,
    /// With its capacity: the most cells one acquisition may take.
    tokens: Option<(Bucket, NonZeroU32)>,
}

/// The requests and tokens a provider may still take this minute; clones share the budget.
#[derive(Clone)]
pub struct Limiter {
    buckets: Arc<Buckets>,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("requests", &self.buckets.requests.is_some())
            .field("tokens", &self.buckets.tokens.as_ref().map(|t| t.1))
            .finish()
    }
}

impl Limiter {
    /// A limiter for `limits`; `None` when neither is set, so an unlimited provider pays nothing.
    pub fn new(limits: &RateLimits) -> Option<Limiter> {
        Self::with_window(limits, Duration::from_secs(60))
    }

    /// The same limits over another window than a minute (tests use short ones).
    pub(crate) fn with_window(limits: &RateLimits, window: Duration) -> Option<Limiter> {
        let requests = limits.requests_per_minute.and_then(NonZeroU32::new);
        let tokens = limits.tokens_per_minute.and_then(NonZeroU32::new);
        if requests.is_none() && tokens.is_none() {
            return None;
        }
        let clock = TokioClock {
            origin: tokio::time::Instant::now(),
        };
        // `n` cells per window: one back every window / n, up to `n` saved. `with_period`
        // refuses only a zero period.
        let bucket = |n: NonZeroU32| {
            Quota::with_period(window / n.get())
                .map(|q| RateLimiter::direct_with_clock(q.allow_burst(n), clock.clone()))
        };
        let requests = match requests {
            Some(n) => Some(bucket(n)?),
            None => None,
        };
        let tokens = match tokens {
            Some(n) => Some((bucket(n)?, n)),
            None => None,
        };
        Some(Limiter {
            buckets: Arc::new(Buckets {
                clock,
                requests,
                tokens,
            }),
        })
    }

    /// Waits until one request and `tokens` tokens may be sent, and takes them.
    ///
    /// Tokens are taken first and the request last, so the request cell is spent right before
    /// the request goes out and the requests-per-minute limit holds exactly as the server
    /// counts it.
    pub async fn acquire(&self, tokens: u32) {
        let b = &*self.buckets;
        if let Some((bucket, capacity)) = &b.tokens {
            // A request may not take more than the bucket holds, or it would never be let
            // through: a prompt larger than a minute's tokens waits for a full bucket and goes
            // alone (the server decides whether it accepts it).
            if let Some(n) = NonZeroU32::new(tokens.min(capacity.get())) {
                wait_for(bucket, n, &b.clock).await;
            }
        }
        if let Some(bucket) = &b.requests {
            wait_for(bucket, NonZeroU32::MIN, &b.clock).await;
        }
    }
}

/// Takes `n` cells, sleeping until the bucket has them. `n` never exceeds the capacity
/// ([`Limiter::acquire`] caps it), so governor's capacity error cannot arise; were it to, the
/// call goes ahead rather than wait forever.
async fn wait_for(bucket: &Bucket, n: NonZeroU32, clock: &TokioClock) {
    loop {
        match bucket.check_n(n) {
            Ok(Ok(())) | Err(_) => return,
            Ok(Err(not_until)) => {
                tokio::time::sleep(not_until.wait_time_from(clock.now())).await;
            }
        }
    }
}

/// A provider whose calls wait for the run's rate limits before they are sent.
pub struct Limited<P> {
    inner: P,
    limiter: Limiter,
}

impl<P> Limited<P> {
    pub fn new(inner: P, limiter: Limiter) -> Self {
        Self { inner, limiter }
    }

    pub fn limiter(&self) -> &Limiter {
        &self.limiter
    }
}

/// The tokens a request counts for against a tokens-per-minute limit: prompt bytes / 4 plus
/// `max_tokens`.
///
/// This is how OpenAI and Azure OpenAI themselves charge a request against the limit when it
/// arrives (characters / 4 for the prompt, plus the whole `max_tokens`), so the bucket drains
/// as the server's does. For Anthropic and Gemini, which count output as it is generated, the
/// whole `max_tokens` overcounts, which errs on the safe side. Code runs about 3 to 4 bytes per
/// token, so bytes / 4 may undercount the prompt a little; the `max_tokens` term, far above a
/// typical reply, more than makes up for it.
pub fn estimate_tokens(request: &ChatRequest) -> u32 {
    let bytes: usize = request.messages.iter().map(|m| m.content.len()).sum();
    let prompt = u32::try_from(bytes.div_ceil(4)).unwrap_or(u32::MAX);
    prompt.saturating_add(request.max_tokens)
}

#[async_trait::async_trait]
impl<P: Provider> LlmClient for Limited<P> {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        // A call that cannot be sent (no key) fails now rather than after waiting its turn,
        // and does not spend the turn.
        self.inner.check()?;
        self.limiter.acquire(estimate_tokens(&request)).await;
        self.inner.complete(request).await
    }
}

impl<P: Provider> Provider for Limited<P> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn check(&self) -> Result<(), LlmError> {
        self.inner.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::wire::request;
    use ralph_actors::ports::llm::ChatMessage;
    use ralph_actors::schema::usage::Usage;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Instant;

    /// A window short enough for tests, long enough that scheduling noise stays small beside it.
    const WINDOW: Duration = Duration::from_millis(600);
    /// Sooner than any wait in these tests (the shortest is 120 ms).
    const IMMEDIATE: Duration = Duration::from_millis(100);

    fn limiter(rpm: Option<u32>, tpm: Option<u32>) -> Limiter {
        let limits = RateLimits {
            requests_per_minute: rpm,
            tokens_per_minute: tpm,
        };
        Limiter::with_window(&limits, WINDOW).expect("limited")
    }

    /// When each of `n` acquisitions of `tokens` got through, from the start, in order.
    async fn burst(limiter: &Limiter, n: usize, tokens: u32) -> Vec<Duration> {
        let start = Instant::now();
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let l = limiter.clone();
                tokio::spawn(async move {
                    l.acquire(tokens).await;
                    start.elapsed()
                })
            })
            .collect();
        let mut times = Vec::new();
        for t in tasks {
            times.push(t.await.expect("task"));
        }
        times.sort();
        times
    }

    fn near(actual: Duration, expected: Duration) -> bool {
        // Loose above: a loaded test machine may wake a task late, never early.
        let slack = Duration::from_millis(120);
        actual + Duration::from_millis(5) >= expected && actual <= expected + slack
    }

    #[test]
    fn no_limits_no_limiter() {
        assert!(Limiter::new(&RateLimits::default()).is_none());
        let zero = RateLimits {
            requests_per_minute: Some(0),
            tokens_per_minute: Some(0),
        };
        assert!(Limiter::new(&zero).is_none());
        assert!(Limiter::new(&RateLimits {
            requests_per_minute: Some(60),
            tokens_per_minute: None
        })
        .is_some());
    }

    #[tokio::test]
    async fn a_burst_spreads_over_the_window() {
        // 4 per window: 4 at once, then one every window / 4.
        let times = burst(&limiter(Some(4), None), 6, 0).await;
        let step = WINDOW / 4;
        for (i, t) in times.iter().enumerate().take(4) {
            assert!(*t < IMMEDIATE, "request {i} waited {t:?}");
        }
        assert!(
            near(times[4], step),
            "5th at {:?}, expected {step:?}",
            times[4]
        );
        assert!(near(times[5], 2 * step), "6th at {:?}", times[5]);
    }

    #[tokio::test]
    async fn tokens_per_minute_spread_likewise() {
        // 1000 tokens per window, 400 per request: two at once, then one per 0.4 window.
        let times = burst(&limiter(None, Some(1000)), 4, 400).await;
        let step = WINDOW * 2 / 5;
        assert!(times[1] < IMMEDIATE, "{times:?}");
        assert!(near(times[2], step - WINDOW / 5), "{times:?}");
        assert!(near(times[3], step + step - WINDOW / 5), "{times:?}");
    }

    #[tokio::test]
    async fn a_request_larger_than_the_bucket_still_goes() {
        let l = limiter(None, Some(100));
        let started = Instant::now();
        l.acquire(5_000).await;
        assert!(started.elapsed() < IMMEDIATE);
        // It took the whole bucket: the next waits for a full refill of what it needs.
        l.acquire(100).await;
        assert!(near(started.elapsed(), WINDOW), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn both_limits_apply() {
        // Requests allow 10, tokens only 2 of 500: the tokens decide.
        let times = burst(&limiter(Some(10), Some(1000)), 3, 500).await;
        assert!(times[1] < IMMEDIATE, "{times:?}");
        assert!(near(times[2], WINDOW / 2), "{times:?}");
    }

    #[tokio::test]
    async fn clones_share_one_budget() {
        let a = limiter(Some(2), None);
        let b = a.clone();
        let started = Instant::now();
        a.acquire(0).await;
        b.acquire(0).await;
        // The third, from either clone, waits for the shared bucket.
        a.acquire(0).await;
        assert!(
            near(started.elapsed(), WINDOW / 2),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn estimates_a_request_like_the_servers_do() {
        let mut r = request("openai/gpt-4.1").into_inner();
        r.messages = vec![
            ChatMessage::system("x".repeat(400)),
            ChatMessage::user("y".repeat(401)),
        ];
        r.max_tokens = 1000;
        assert_eq!(estimate_tokens(&r), 201 + 1000);
        r.max_tokens = u32::MAX;
        assert_eq!(estimate_tokens(&r), u32::MAX);
    }

    /// Counts calls; `check` fails when told to.
    struct Fake {
        calls: AtomicU32,
        broken: bool,
    }

    #[async_trait::async_trait]
    impl LlmClient for Fake {
        async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Ok(ChatReply {
                text: "ok".into(),
                usage: Usage::default(),
                model: request.model.clone(),
                ..ChatReply::default()
            })
        }
    }

    impl Provider for Fake {
        fn describe(&self) -> String {
            "fake".into()
        }
        fn check(&self) -> Result<(), LlmError> {
            if self.broken {
                Err(LlmError::Config {
                    model: "fake/*".into(),
                    message: "broken".into(),
                })
            } else {
                Ok(())
            }
        }
    }

    #[tokio::test]
    async fn limited_waits_then_delegates() {
        let fake = Fake {
            calls: AtomicU32::new(0),
            broken: false,
        };
        let limited = Limited::new(fake, limiter(Some(1), None));
        assert_eq!(limited.describe(), "fake");
        assert!(limited.check().is_ok());
        let started = Instant::now();
        for _ in 0..2 {
            let reply = limited.complete(request("openai/gpt-4.1")).await;
            assert_eq!(reply.map(|r| r.text).ok().as_deref(), Some("ok"));
        }
        assert!(near(started.elapsed(), WINDOW), "{:?}", started.elapsed());
        assert_eq!(limited.inner.calls.load(Ordering::SeqCst), 2);

        // A provider that cannot be called fails at once and spends no turn.
        let broken = Limited::new(
            Fake {
                calls: AtomicU32::new(0),
                broken: true,
            },
            limiter(Some(1), None),
        );
        let started = Instant::now();
        for _ in 0..3 {
            let err = broken.complete(request("openai/gpt-4.1")).await;
            assert!(matches!(err, Err(LlmError::Config { .. })), "{err:?}");
        }
        assert!(started.elapsed() < IMMEDIATE);
        assert_eq!(broken.inner.calls.load(Ordering::SeqCst), 0);
    }
}
