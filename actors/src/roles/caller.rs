//! What the model-calling roles share: [`Caller`], which meters every call against the
//! ledger, falls back to a role's next model, and measures each prompt against its model's
//! context window; and [`guarded`], which turns a panic in a role's work into a typed error.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::events::bus::EventBus;
use crate::events::event::Event;
use crate::policy::budget::{Grant, Ledger};
use crate::ports::llm::{
    ByteBoundCounter, ChatMessage, ChatReply, ChatRequest, LlmClient, TokenCounter,
};
use crate::role::Role;
use crate::schema::report::FallbackRecord;
use crate::settings::ModelSpec;

/// What the model-calling roles share: the client, the ledger that meters every call, and the
/// event sink. Built once per run by the Supervisor.
pub struct Caller {
    pub llm: Arc<dyn LlmClient>,
    pub counter: Arc<dyn TokenCounter>,
    pub ledger: Arc<Ledger>,
    pub events: EventBus,
    /// Milliseconds spent waiting on models, for the report's timings.
    pub llm_ms: AtomicU64,
    fallbacks: Mutex<Vec<FallbackRecord>>,
    /// Models that failed for good this run (a refused key, a missing provider): skipped.
    dead: Mutex<BTreeSet<String>>,
    /// Each role's context window, where known: prompts are measured against it.
    windows: BTreeMap<Role, u32>,
    /// The largest share of its window each role's prompt has used.
    context_peak: Mutex<BTreeMap<Role, f64>>,
    /// Roles whose last prompt reached [`CONTEXT_LIMIT`]: their history is to be dropped.
    over_limit: Mutex<BTreeSet<Role>>,
}

/// The share of a context window past which a model leaves its "smart zone": a prompt this
/// large is warned about, and the role starts its next call afresh.
pub const CONTEXT_LIMIT: f64 = 0.40;

impl Caller {
    pub fn new(
        llm: Arc<dyn LlmClient>,
        counter: Arc<dyn TokenCounter>,
        ledger: Arc<Ledger>,
        events: EventBus,
    ) -> Self {
        Self {
            llm,
            counter,
            ledger,
            events,
            llm_ms: AtomicU64::new(0),
            fallbacks: Mutex::new(Vec::new()),
            dead: Mutex::new(BTreeSet::new()),
            windows: BTreeMap::new(),
            context_peak: Mutex::new(BTreeMap::new()),
            over_limit: Mutex::new(BTreeSet::new()),
        }
    }

    /// Measures every prompt against its role's context window.
    pub fn with_windows(mut self, windows: BTreeMap<Role, u32>) -> Self {
        self.windows = windows;
        self
    }

    /// Continues the context-use peaks of a resumed session.
    pub fn with_context_peaks(self, earlier: BTreeMap<Role, f64>) -> Self {
        *lock(&self.context_peak) = earlier;
        self
    }

    /// The largest share of its context window each role's prompt has used.
    pub fn context_peaks(&self) -> BTreeMap<Role, f64> {
        lock(&self.context_peak).clone()
    }

    /// The roles whose prompt reached [`CONTEXT_LIMIT`] since the last call of this, emptied.
    pub fn take_over_limit(&self) -> BTreeSet<Role> {
        std::mem::take(&mut *lock(&self.over_limit))
    }

    /// Records the share of `role`'s window a prompt of `prompt_tokens` used; warns at
    /// [`CONTEXT_LIMIT`].
    fn measure(&self, iteration: u32, role: Role, model: &str, prompt_tokens: u64) -> Option<f64> {
        let window = *self.windows.get(&role)?;
        if window == 0 {
            return None;
        }
        let used = prompt_tokens as f64 / f64::from(window);
        let mut peaks = lock(&self.context_peak);
        let peak = peaks.entry(role).or_insert(0.0);
        *peak = peak.max(used);
        drop(peaks);
        if used >= CONTEXT_LIMIT {
            lock(&self.over_limit).insert(role);
            self.events.emit(Event::ContextHigh {
                iteration,
                role,
                model: model.to_string(),
                used,
            });
        }
        Some(used)
    }

    /// Continues the fallback log of a resumed session.
    pub fn with_fallbacks(self, earlier: Vec<FallbackRecord>) -> Self {
        *lock(&self.fallbacks) = earlier;
        self
    }

    pub fn fallbacks(&self) -> Vec<FallbackRecord> {
        lock(&self.fallbacks).clone()
    }

    /// One metered call on the role's model, or on its fallbacks in turn when the model's
    /// provider refuses, cannot be reached or keeps failing. Every attempt passes the budget
    /// check on its own model's prices.
    pub async fn call(
        &self,
        iteration: u32,
        role: Role,
        spec: &ModelSpec,
        messages: Vec<ChatMessage>,
        cancel: &CancellationToken,
    ) -> Result<ChatReply> {
        let candidates: Vec<&str> = std::iter::once(spec.model.as_str())
            .chain(spec.fallbacks.iter().map(String::as_str))
            .filter(|m| !lock(&self.dead).contains(*m))
            .collect();
        let Some(last) = candidates.len().checked_sub(1) else {
            return Err(Error::RoleFailed {
                role,
                message: format!("every model of the {role} failed earlier in this run"),
            });
        };
        for (i, model) in candidates.iter().enumerate() {
            match self
                .call_one(iteration, role, model, spec, messages.clone(), cancel)
                .await
            {
                Err(Error::Llm(e)) if e.falls_back() && i < last => {
                    if e.is_permanent() {
                        lock(&self.dead).insert(model.to_string());
                    }
                    let record = FallbackRecord {
                        iteration,
                        role,
                        from: model.to_string(),
                        to: candidates[i + 1].to_string(),
                        reason: e.to_string(),
                    };
                    tracing::warn!(
                        "{role}: {} failed ({}); falling back to {}",
                        record.from,
                        record.reason,
                        record.to
                    );
                    self.events.emit(Event::Fallback(record.clone()));
                    lock(&self.fallbacks).push(record);
                }
                other => return other,
            }
        }
        Err(Error::RoleFailed {
            role,
            message: "no model left to try".into(),
        })
    }

    /// One metered call: budget check, the call (abandoned on `cancel`), settlement, an event.
    async fn call_one(
        &self,
        iteration: u32,
        role: Role,
        model: &str,
        spec: &ModelSpec,
        messages: Vec<ChatMessage>,
        cancel: &CancellationToken,
    ) -> Result<ChatReply> {
        let grant = self.authorize(role, model, spec.max_tokens, &messages)?;
        let request = ChatRequest {
            role,
            model: model.to_string(),
            messages,
            temperature: spec.temperature,
            max_tokens: grant.max_tokens,
        };
        let started = Instant::now();
        let call = AssertUnwindSafe(self.llm.complete(request)).catch_unwind();
        let result = tokio::select! {
            r = call => match r {
                Ok(r) => r,
                Err(panic) => {
                    // Free the reservation, then let `guarded` report the panic.
                    self.ledger.release(grant);
                    std::panic::resume_unwind(panic);
                }
            },
            _ = cancel.cancelled() => {
                // The provider may still bill a request we abandoned; we cannot know its usage.
                self.ledger.release(grant);
                return Err(Error::Cancelled);
            }
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        self.llm_ms.fetch_add(duration_ms, Ordering::Relaxed);
        match result {
            Ok(reply) => {
                let cost = self.ledger.settle(grant, &reply.usage);
                // The provider's own count of the whole prompt (`input_tokens` includes the
                // cached tokens).
                let context_used = self.measure(iteration, role, model, reply.usage.input_tokens);
                self.events.emit(Event::LlmCallFinished {
                    iteration,
                    role,
                    model: model.to_string(),
                    usage: reply.usage,
                    cost_usd: cost,
                    total_cost_usd: self.ledger.spent(),
                    duration_ms,
                    context_used,
                });
                Ok(reply)
            }
            Err(e) => {
                self.ledger.release(grant);
                Err(e.into())
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Caller {
    /// Reserves the call's cost. The prompt's byte count bounds its tokens from above (a BPE token
    /// covers at least one byte) and costs nothing to compute; only when that bound would not fit
    /// in the budget as it stands is the prompt counted exactly, which needs the tokenizer's
    /// tables (a few hundred milliseconds and tens of megabytes the first time).
    fn authorize(
        &self,
        role: Role,
        model: &str,
        max_tokens: u32,
        messages: &[ChatMessage],
    ) -> Result<Grant> {
        let bound = ByteBoundCounter.count(model, messages);
        match self.ledger.authorize(role, model, bound, max_tokens) {
            Ok(grant) if grant.max_tokens == max_tokens => return Ok(grant),
            Ok(grant) => self.ledger.release(grant),
            Err(_) => {}
        }
        let exact = self.counter.count(model, messages);
        self.ledger
            .authorize(role, model, exact, max_tokens)
            .map_err(|e| Error::Budget(e.0))
    }
}

/// Runs a handler's future, turning a panic into a typed error so the Supervisor hears of it
/// (actix would otherwise drop the reply and the message with it).
pub(crate) async fn guarded<T>(role: Role, fut: impl Future<Output = Result<T>>) -> Result<T> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(panic) => Err(Error::RolePanicked {
            role,
            message: panic_message(&*panic),
        }),
    }
}

/// Waits for `work` unless `cancel` fires first: every await on a port goes through here or
/// through a `select!` of its own, so Ctrl+C and the time limit are heard at once.
pub async fn watched<T, E>(
    cancel: &CancellationToken,
    work: impl Future<Output = std::result::Result<T, E>>,
) -> Result<T>
where
    Error: From<E>,
{
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Error::Cancelled),
        r = work => r.map_err(Error::from),
    }
}

/// The text of a panic's payload.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
