//! What the model-calling roles share: [`Caller`], which meters every call against the
//! ledger, falls back to a role's next model, and measures each prompt against its model's
//! context window; and `guarded`, which turns a panic in a role's work into a typed error.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::events::bus::EventBus;
use crate::events::event::Event;
use crate::policy::budget::{Grant, Ledger};
use crate::ports::llm::{
    ByteBoundCounter, ChatMessage, ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError,
    TokenCounter,
};
use crate::ports::stream;
use crate::role::Role;
use crate::roles::local_guard::{LocalGuard, Seal};
use crate::roles::switch::ModelSwitch;
use crate::roles::thought::Thoughts;
use crate::roles::waits::Waits;
use crate::schema::report::FallbackRecord;
use crate::schema::usage::Usage;
use crate::settings::{ModelSpec, RunSettings};

/// A role's model as the run's settings give it, called through the run's [`Caller`]: what a
/// role actor's handler calls, so each call names only its iteration, messages and stop.
pub(crate) struct RoleModel {
    caller: Arc<Caller>,
    role: Role,
    settings: Arc<RunSettings>,
}

impl RoleModel {
    pub(crate) fn of(role: Role, caller: &Arc<Caller>, settings: &Arc<RunSettings>) -> Self {
        Self {
            caller: caller.clone(),
            role,
            settings: settings.clone(),
        }
    }

    /// The model is looked up at the call, inside the handler's guarded future: a missing one
    /// is caught there as the role's panic.
    pub(crate) async fn call(
        &self,
        iteration: u32,
        messages: Vec<ChatMessage>,
        cancel: &CancellationToken,
    ) -> Result<ChatReply> {
        let spec = self.settings.model(self.role);
        self.caller
            .call(iteration, self.role, spec, messages, cancel)
            .await
    }
}

/// What the model-calling roles share: the client, the ledger that meters every call, and the
/// event sink. Built once per run by the Supervisor.
pub struct Caller {
    pub llm: Arc<dyn LlmClient>,
    /// Every request passes LocalGuard before it is sent.
    guard: actix::Addr<LocalGuard>,
    pub counter: Arc<dyn TokenCounter>,
    pub ledger: Arc<Ledger>,
    pub events: EventBus,
    /// When calls were in flight, for the report's timings; the Supervisor adds its test runs.
    pub waits: Waits,
    fallbacks: Mutex<Vec<FallbackRecord>>,
    /// Models that failed for good this run (a refused key, a missing provider): skipped.
    dead: Mutex<BTreeSet<String>>,
    /// Each role's context window, where known: prompts are measured against it.
    windows: BTreeMap<Role, u32>,
    /// The largest share of its window each role's prompt has used.
    context_peak: Mutex<BTreeMap<Role, f64>>,
    /// Roles whose last prompt reached [`CONTEXT_LIMIT`]: their history is to be dropped.
    over_limit: Mutex<BTreeSet<Role>>,
    /// Models already warned about for replies without usage.
    estimated_warned: Mutex<BTreeSet<String>>,
    /// How long each role's last answered call took: what `critic.mode: auto` expects a
    /// review to take.
    last_call: Mutex<BTreeMap<Role, Duration>>,
    /// The models a person chose for roles during the run: each role's first candidate.
    switch: ModelSwitch,
    /// The chosen model each role has been told of (a note when it changes).
    switched: Mutex<BTreeMap<Role, String>>,
}

/// The share of a context window past which a model leaves its "smart zone": a prompt this
/// large is warned about, and the role starts its next call afresh.
pub const CONTEXT_LIMIT: f64 = 0.40;

impl Caller {
    pub fn new(
        llm: Arc<dyn LlmClient>,
        guard: actix::Addr<LocalGuard>,
        counter: Arc<dyn TokenCounter>,
        ledger: Arc<Ledger>,
        events: EventBus,
    ) -> Self {
        Self {
            llm,
            guard,
            counter,
            ledger,
            events,
            waits: Waits::default(),
            fallbacks: Mutex::new(Vec::new()),
            dead: Mutex::new(BTreeSet::new()),
            windows: BTreeMap::new(),
            context_peak: Mutex::new(BTreeMap::new()),
            over_limit: Mutex::new(BTreeSet::new()),
            estimated_warned: Mutex::new(BTreeSet::new()),
            last_call: Mutex::new(BTreeMap::new()),
            switch: ModelSwitch::new(),
            switched: Mutex::new(BTreeMap::new()),
        }
    }

    /// Reads each role's model from `switch` before every call (the view's model picker).
    pub fn with_switch(mut self, switch: ModelSwitch) -> Self {
        self.switch = switch;
        self
    }

    /// The role's models in the order they are tried: the one chosen in the view (said once,
    /// when it changes), then the role's own model and its fallbacks.
    fn candidates(&self, role: Role, spec: &ModelSpec) -> Vec<String> {
        let chosen = self.switch.get(role).map(|c| c.model);
        if let Some(model) = &chosen {
            let mut told = lock(&self.switched);
            if told.get(&role) != Some(model) {
                told.insert(role, model.clone());
                drop(told);
                self.events.emit(Event::Note {
                    message: format!("the {role} now runs on {model}, as chosen in the view"),
                });
            }
        }
        let mut models: Vec<String> = Vec::new();
        let own = std::iter::once(&spec.model).chain(&spec.fallbacks).cloned();
        for model in chosen.into_iter().chain(own) {
            if !models.contains(&model) && !lock(&self.dead).contains(&model) {
                models.push(model);
            }
        }
        models
    }

    /// How long a review is expected to take: the Critic's last call, else the shortest last
    /// call of any role (a review's reply is among the shortest); `None` before any call.
    pub fn expected_review(&self) -> Option<Duration> {
        let calls = lock(&self.last_call);
        calls
            .get(&Role::Critic)
            .copied()
            .or_else(|| calls.values().min().copied())
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
        let chosen = self.switch.get(role).filter(|c| c.model == model);
        let window = match chosen {
            Some(c) => c.context_window?,
            None => *self.windows.get(&role)?,
        };
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
        let candidates = self.candidates(role, spec);
        let Some(last) = candidates.len().checked_sub(1) else {
            return Err(Error::RoleFailed {
                role,
                message: format!("every model of the {role} failed earlier in this run"),
            });
        };
        for (i, model) in candidates.iter().enumerate() {
            let mut result = self
                .call_one(iteration, role, model, spec, messages.clone(), cancel)
                .await;
            // A call past its time limit is tried once more, as a stalled stream is, before
            // the role falls back: a slow local model is often just slow.
            if let Err(Error::Llm(e @ LlmError::Timeout { .. })) = &result {
                if !cancel.is_cancelled() {
                    self.events.emit(Event::Warning {
                        message: format!("{role}: {e}; trying {model} once more"),
                    });
                    result = self
                        .call_one(iteration, role, model, spec, messages.clone(), cancel)
                        .await;
                }
            }
            match result {
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
                        on_bus = true,
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
        let request = self
            .seal(
                iteration,
                ChatRequest {
                    role,
                    model: model.to_string(),
                    messages,
                    temperature: spec.temperature,
                    max_tokens: spec.max_tokens,
                },
            )
            .await?;
        let (grant, prompt_bound) =
            self.authorize(role, model, spec.max_tokens, &request.messages)?;
        let request = request.with_max_tokens(grant.max_tokens);
        let started = Instant::now();
        let thoughts = Thoughts::new(self.events.clone(), iteration, role);
        let call = AssertUnwindSafe(stream::scope(thoughts.sink(), self.llm.complete(request)))
            .catch_unwind();
        let result = tokio::select! {
            r = call => match r {
                Ok(r) => r,
                Err(panic) => {
                    // Free the reservation, then let `guarded` report the panic.
                    self.ledger.release(grant);
                    thoughts.finish(None);
                    std::panic::resume_unwind(panic);
                }
            },
            _ = cancel.cancelled() => {
                thoughts.finish(None);
                self.waits.call(started);
                // The provider may still bill a request we abandoned, and no usage will come:
                // it keeps its reservation.
                let charged = self.ledger.charge_abandoned(grant);
                self.events.emit(Event::Warning {
                    message: format!(
                        "{role} call on {model} abandoned as the run stopped; charged the ${charged:.4} reserved for it, as the provider may bill it"
                    ),
                });
                return Err(Error::Cancelled);
            }
        };
        thoughts.finish(result.as_ref().ok().map(|r| r.text.as_str()));
        let took = started.elapsed();
        let duration_ms = took.as_millis() as u64;
        self.waits.call(started);
        let mut reply = match result {
            Ok(reply) => {
                lock(&self.last_call).insert(role, took);
                reply
            }
            Err(e) => {
                self.close_failed(role, model, grant, &e);
                return Err(e.into());
            }
        };
        self.charge_lost_attempts(role, model, &grant, reply.lost_attempts);
        if let Some(estimate) = self.estimate_if_unreported(model, &reply, prompt_bound, &grant) {
            reply.usage = estimate;
        }
        let granted = grant.max_tokens;
        let settled = self.ledger.settle_call(grant, &reply.usage, reply.cost_usd);
        // The provider's own count of the whole prompt (`input_tokens` includes the cached
        // tokens).
        let context_used = self.measure(iteration, role, model, reply.usage.input_tokens);
        self.events.emit(Event::LlmCallFinished {
            iteration,
            role,
            model: model.to_string(),
            usage: reply.usage,
            cost_usd: settled.cost,
            total_cost_usd: self.ledger.spent(),
            duration_ms,
            context_used,
        });
        if let Some(overrun) = settled.overrun {
            // The provider billed more than could be reserved for: later calls cannot be
            // bounded either, so the run stops here.
            let out = reply.usage.output_tokens;
            let why = if out > u64::from(granted) {
                format!("the reply was billed {out} output tokens where {granted} were allowed")
            } else {
                format!(
                    "the prompt was billed {} tokens where {prompt_bound} were reserved",
                    reply.usage.input_tokens
                )
            };
            return Err(Error::Budget(format!(
                "{overrun}: {why}; the run stops at once"
            )));
        }
        if let Some(why) = reply.budget_refused.take() {
            return Err(Error::Budget(why));
        }
        Ok(reply)
    }

    /// Closes the grant of a call that failed: charged its reservation when the server took
    /// the request and was answering when the reply was lost, else released.
    fn close_failed(&self, role: Role, model: &str, grant: Grant, e: &LlmError) {
        if !e.may_be_billed() {
            self.ledger.release(grant);
            return;
        }
        let charged = self.ledger.charge_abandoned(grant);
        self.events.emit(Event::Warning {
            message: format!(
                "{role} call on {model} abandoned ({e}); charged the ${charged:.4} reserved for it, as the provider may bill it"
            ),
        });
    }

    /// Charges the attempts of a call given up on mid-reply before its reply came (stalled
    /// streams sent again) the call's reservation each.
    fn charge_lost_attempts(&self, role: Role, model: &str, grant: &Grant, lost: u32) {
        if lost == 0 {
            return;
        }
        let charged = self.ledger.charge_lost_attempts(grant, lost);
        self.events.emit(Event::Warning {
            message: format!(
                "{role} call on {model}: {lost} earlier attempt(s) given up on mid-reply; charged the ${charged:.4} reserved for them, as the provider may bill them"
            ),
        });
    }

    /// `request` as LocalGuard seals it: masked, or refused (`block` mode).
    async fn seal(&self, iteration: u32, request: ChatRequest) -> Result<GuardedRequest> {
        let role = request.role;
        match self.guard.send(Seal { iteration, request }).await {
            Ok(sealed) => Ok(sealed?),
            Err(e) => Err(Error::Stopped {
                role,
                message: format!("LocalGuard did not answer: {e}"),
            }),
        }
    }

    /// The usage to charge a reply by when its provider reported none, or reported zero for a
    /// reply with text (seen with Gemini's final stream chunk behind LiteLLM): the prompt at the
    /// bound it was reserved at, the reply at its byte count (at most what was granted). Warns
    /// once per model.
    fn estimate_if_unreported(
        &self,
        model: &str,
        reply: &ChatReply,
        prompt_bound: u64,
        grant: &Grant,
    ) -> Option<Usage> {
        let zero = reply.usage.output_tokens == 0 && !reply.text.trim().is_empty();
        if !(reply.usage_estimated || zero) || reply.cost_usd.is_some() {
            return None;
        }
        let usage = Usage {
            input_tokens: reply.usage.input_tokens.max(prompt_bound),
            output_tokens: (reply.text.len() as u64).min(u64::from(grant.max_tokens)),
            ..reply.usage
        };
        self.ledger.note_estimated();
        if lock(&self.estimated_warned).insert(model.to_string()) {
            self.events.emit(Event::Warning {
                message: format!(
                    "{model} reported no token usage for a reply; charged by estimate ({} in, {} out, upper bounds), here and for its later replies like it",
                    usage.input_tokens, usage.output_tokens
                ),
            });
        }
        Some(usage)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Caller {
    /// Reserves the call's cost, and returns the prompt count it was reserved at. The prompt's
    /// byte count bounds its tokens from above (a BPE token covers at least one byte) and costs
    /// nothing to compute. Only for a model whose tokenizer is known exactly, and only when that
    /// bound would not fit in the budget as it stands, is the prompt counted exactly, which
    /// needs the tokenizer's tables (a few hundred milliseconds and tens of megabytes the first
    /// time). An estimate by ratio could undercount (a llama.cpp server counted 2,948 tokens
    /// where o200k × 1.15 gave 2,770), so for every other model the bound is what is reserved.
    fn authorize(
        &self,
        role: Role,
        model: &str,
        max_tokens: u32,
        messages: &[ChatMessage],
    ) -> Result<(Grant, u64)> {
        let bound = ByteBoundCounter.count(model, messages);
        let first = self.ledger.authorize(role, model, bound, max_tokens);
        if !self.counter.is_exact(model) {
            return first.map(|g| (g, bound)).map_err(|e| Error::Budget(e.0));
        }
        match first {
            Ok(grant) if grant.max_tokens == max_tokens => return Ok((grant, bound)),
            Ok(grant) => self.ledger.release(grant),
            Err(_) => {}
        }
        let exact = self.counter.count(model, messages);
        self.ledger
            .authorize(role, model, exact, max_tokens)
            .map(|g| (g, exact))
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
