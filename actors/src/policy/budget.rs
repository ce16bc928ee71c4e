//! The money: what a run has spent, by role and model, and the check before every call that
//! keeps spending at or under the cap.
//!
//! Before a call the ledger *reserves* the most it could cost: the prompt (counted, plus a margin)
//! at the input price and the output at the output price for at most `max_tokens`. When the
//! remaining budget cannot pay a useful reply, the call is refused; otherwise `max_tokens` is
//! lowered to what the budget can pay, so a provider that honours `max_tokens` cannot make the run
//! cross the cap. After the call the reservation is replaced by what the call cost: the cost the
//! provider reported for it, else its usage at the configured or bundled price. A call abandoned
//! before its reply (Ctrl+C, the time limit, a stall) may still be billed, so it is charged its
//! whole reservation. A call that cost more than its reservation (a provider that ignores
//! `max_tokens`) is recorded as an [`Overrun`]: the one case no client can prevent.
//!
//! A [`Ledger`] keeps one run's accounts (by role, model and tokens, saved with the session) and
//! draws on one or more [`Budget`]s: its own cap, and a budget shared with other runs when
//! several run under one total (a batch). A call must fit every budget the ledger draws on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::events::bus::EventBus;
use crate::events::event::Event;
use crate::role::Role;
use crate::schema::state::LedgerSnapshot;
use crate::schema::usage::Overrun;
use crate::schema::usage::Usage;

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Cached input tokens read; defaults to `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Input tokens written to a cache; defaults to `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Price {
    pub const FREE: Price = Price {
        input: 0.0,
        output: 0.0,
        cache_read: None,
        cache_write: None,
    };

    /// `input_tokens` counts every prompt token; the cached ones among them are priced apart.
    pub fn cost(&self, u: &Usage) -> f64 {
        let cached = u.cache_read_tokens + u.cache_write_tokens;
        let plain = u.input_tokens.saturating_sub(cached);
        (plain as f64 * self.input
            + u.cache_read_tokens as f64 * self.cache_read.unwrap_or(self.input)
            + u.cache_write_tokens as f64 * self.cache_write.unwrap_or(self.input)
            + u.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Prices by model name (`provider/model`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices(pub BTreeMap<String, Price>);

impl Prices {
    /// Looks a model up as named, then without a trailing date (`gpt-4.1-2025-04-14` → `gpt-4.1`).
    pub fn get(&self, model: &str) -> Option<Price> {
        if let Some(p) = self.0.get(model) {
            return Some(*p);
        }
        // A local Ollama model costs nothing, whatever its name.
        if model.starts_with("ollama/") {
            return Some(Price::FREE);
        }
        let undated = strip_date_suffix(model)?;
        self.0.get(undated).copied()
    }
}

fn strip_date_suffix(model: &str) -> Option<&str> {
    let (head, tail) = model.rsplit_once('-')?;
    if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) {
        return Some(head);
    }
    // `-2025-04-14`
    let bytes = model.as_bytes();
    if model.len() > 11 && bytes[model.len() - 11] == b'-' {
        let date = &model[model.len() - 10..];
        let ok = date.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
        if ok {
            return Some(&model[..model.len() - 11]);
        }
    }
    None
}

/// The fewest output tokens worth asking for; below this the run stops rather than buy a reply
/// too short to hold a fix.
pub const MIN_USEFUL_OUTPUT: u32 = 256;

/// How much the token count before a call may undercount the provider's, as a fraction.
pub const PROMPT_MARGIN: f64 = 0.05;

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct BudgetExceeded(pub String);

/// Permission for one call, holding its reservation until settled.
#[derive(Debug)]
#[must_use = "a grant must be settled or released"]
pub struct Grant {
    pub role: Role,
    pub model: String,
    /// The output cap the call must send.
    pub max_tokens: u32,
    reserved: f64,
    price: Price,
    /// The model has a known price: what the call may cost is bounded by the reservation.
    priced: bool,
}

impl Grant {
    /// The most the call was allowed to cost.
    pub fn reserved(&self) -> f64 {
        self.reserved
    }

    /// The model's price, as the grant was reserved at.
    pub fn price(&self) -> Price {
        self.price
    }
}

/// What settling a call came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    pub cost: f64,
    /// Set when the call cost more than was reserved for it.
    pub overrun: Option<Overrun>,
}

/// A sum of money calls draw on: a cap, what has been spent against it and what is reserved for
/// calls under way. One run has its own; runs that share a total draw on one more, shared.
#[derive(Debug)]
pub struct Budget {
    cap: f64,
    money: Mutex<Money>,
}

#[derive(Debug, Default)]
struct Money {
    spent: f64,
    reserved: f64,
}

impl Budget {
    /// A budget of `cap` dollars, `spent` of them already (a resumed session's spend).
    pub fn new(cap: f64, spent: f64) -> Arc<Self> {
        Arc::new(Self {
            cap,
            money: Mutex::new(Money {
                spent,
                reserved: 0.0,
            }),
        })
    }

    pub fn cap(&self) -> f64 {
        self.cap
    }

    /// Settled spending against this budget, by every ledger that draws on it.
    pub fn spent(&self) -> f64 {
        self.lock().spent
    }

    fn lock(&self) -> MutexGuard<'_, Money> {
        // A poisoned lock only means another thread panicked mid-update of plain numbers;
        // the figures are still the best we have.
        self.money.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Debug)]
struct Accounts {
    snap: LedgerSnapshot,
    unpriced_warned: BTreeSet<String>,
}

/// One run's accounts, drawing on its budgets.
#[derive(Debug)]
pub struct Ledger {
    /// Its own budget first, then any shared one; always at least one.
    budgets: Vec<Arc<Budget>>,
    prices: Prices,
    events: EventBus,
    accounts: Mutex<Accounts>,
    /// Grants given and not yet settled, charged or released: calls under way.
    open_grants: AtomicUsize,
}

impl Ledger {
    pub fn new(cap: f64, prices: Prices, events: EventBus) -> Self {
        Self::resume(cap, prices, events, LedgerSnapshot::default())
    }

    /// A ledger that starts from what an interrupted session had spent, capped at `cap` in all.
    pub fn resume(cap: f64, prices: Prices, events: EventBus, snap: LedgerSnapshot) -> Self {
        Self {
            budgets: vec![Budget::new(cap, snap.spent)],
            prices,
            events,
            accounts: Mutex::new(Accounts {
                snap,
                unpriced_warned: BTreeSet::new(),
            }),
            open_grants: AtomicUsize::new(0),
        }
    }

    /// Draws on `shared` as well: every call must then fit both this run's cap and what is
    /// left of the shared budget, and what it costs counts against both.
    pub fn within(mut self, shared: Arc<Budget>) -> Self {
        self.budgets.push(shared);
        self
    }

    /// This run's own cap.
    pub fn cap(&self) -> f64 {
        self.budgets[0].cap
    }

    fn accounts(&self) -> MutexGuard<'_, Accounts> {
        self.accounts.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn price_of(&self, model: &str) -> Price {
        self.lookup(model).0
    }

    /// The model's price, and whether it is known.
    fn lookup(&self, model: &str) -> (Price, bool) {
        match self.prices.get(model) {
            Some(p) => (p, true),
            None => {
                let first = self.accounts().unpriced_warned.insert(model.to_string());
                if first {
                    self.events.emit(Event::Warning {
                        message: format!(
                            "no price known for {model}: its calls count as $0 unless the provider reports their cost; set one under `prices:` in ralph.config.yaml"
                        ),
                    });
                }
                (Price::FREE, false)
            }
        }
    }

    /// Every budget locked, in one global order (by address) so that two ledgers sharing a
    /// budget never wait on each other in opposite orders.
    fn lock_budgets(&self) -> Vec<(&Budget, MutexGuard<'_, Money>)> {
        let mut order: Vec<&Arc<Budget>> = self.budgets.iter().collect();
        order.sort_by_key(|b| Arc::as_ptr(b) as usize);
        order.dedup_by_key(|b| Arc::as_ptr(b) as usize);
        order.into_iter().map(|b| (&**b, b.lock())).collect()
    }

    /// Reserves the most a call could cost, lowering `max_tokens` to what the budget can pay.
    pub fn authorize(
        &self,
        role: Role,
        model: &str,
        prompt_tokens: u64,
        max_tokens: u32,
    ) -> Result<Grant, BudgetExceeded> {
        let (price, priced) = self.lookup(model);
        let mut locked = self.lock_budgets();
        // The budget with the least left decides; its figures go in a refusal.
        let (tightest, available) = locked
            .iter()
            .map(|(b, m)| (*b, b.cap - m.spent - m.reserved))
            .fold(None, |best: Option<(&Budget, f64)>, (b, left)| match best {
                Some((_, l)) if l <= left => best,
                _ => Some((b, left)),
            })
            .unwrap_or((&self.budgets[0], 0.0));
        let (spent, cap) = (
            locked
                .iter()
                .find(|(b, _)| std::ptr::eq(*b, tightest))
                .map_or(0.0, |(_, m)| m.spent),
            tightest.cap,
        );
        let prompt_cost = prompt_tokens as f64 * (1.0 + PROMPT_MARGIN) * price.input / 1_000_000.0;
        let refuse = |why: String| {
            Err(BudgetExceeded(format!(
                "cost limit reached: ${spent:.4} spent of ${cap:.2}; {why}"
            )))
        };
        if prompt_cost > available {
            return refuse(format!(
                "the next {role} call's prompt alone would cost ${prompt_cost:.4}"
            ));
        }
        let affordable = if price.output > 0.0 {
            ((available - prompt_cost) * 1_000_000.0 / price.output).floor()
        } else {
            f64::INFINITY
        };
        let granted = if affordable >= max_tokens as f64 {
            max_tokens
        } else {
            affordable as u32
        };
        if granted < MIN_USEFUL_OUTPUT.min(max_tokens) {
            return refuse(format!(
                "the next {role} call could not be paid a useful reply ({granted} output tokens)"
            ));
        }
        let reserved = prompt_cost + granted as f64 * price.output / 1_000_000.0;
        for (_, money) in locked.iter_mut() {
            money.reserved += reserved;
        }
        self.open_grants.fetch_add(1, Ordering::SeqCst);
        Ok(Grant {
            role,
            model: model.to_string(),
            max_tokens: granted,
            reserved,
            price,
            priced,
        })
    }

    /// Replaces a grant's reservation by the reported usage at the model's price; returns the
    /// call's cost.
    pub fn settle(&self, grant: Grant, usage: &Usage) -> f64 {
        self.settle_call(grant, usage, None).cost
    }

    /// Replaces a grant's reservation by what the call cost: `reported` (the provider's own
    /// figure) when it gave one, else `usage` at the model's price. A priced call that cost
    /// more than its reservation is recorded as an overrun and returned as one.
    pub fn settle_call(&self, grant: Grant, usage: &Usage, reported: Option<f64>) -> Settled {
        let cost = reported
            .filter(|c| c.is_finite() && *c >= 0.0)
            .unwrap_or_else(|| grant.price.cost(usage));
        // A relative slack for the float arithmetic of the reservation itself.
        let overrun =
            (grant.priced && cost > grant.reserved * (1.0 + 1e-9) + 1e-12).then(|| Overrun {
                role: grant.role.to_string(),
                model: grant.model.clone(),
                reserved_usd: grant.reserved,
                cost_usd: cost,
                excess_usd: cost - grant.reserved,
            });
        self.book(&grant, cost, usage);
        if let Some(o) = &overrun {
            self.accounts().snap.overruns.push(o.clone());
        }
        Settled { cost, overrun }
    }

    /// Charges a call abandoned before its reply (Ctrl+C, the time limit, a stall, a timeout)
    /// its whole reservation: the provider may bill what it generated, and no usage will come.
    /// Returns the charge.
    pub fn charge_abandoned(&self, grant: Grant) -> f64 {
        let cost = grant.reserved;
        self.book(&grant, cost, &Usage::default());
        self.accounts().snap.abandoned_calls += 1;
        cost
    }

    /// Counts one reply charged by estimate.
    pub fn note_estimated(&self) {
        self.accounts().snap.estimated_calls += 1;
    }

    /// Charges `attempts` earlier attempts of a call still under way (a stream that stalled and
    /// was sent again) the call's reservation each: the provider may bill what each generated,
    /// and no usage came for them. The call's own grant stays open. Returns the charge.
    pub fn charge_lost_attempts(&self, grant: &Grant, attempts: u32) -> f64 {
        let cost = grant.reserved * f64::from(attempts);
        for (_, money) in self.lock_budgets().iter_mut() {
            money.spent += cost;
        }
        self.record(grant, cost, &Usage::default());
        self.accounts().snap.abandoned_calls += attempts;
        cost
    }

    fn book(&self, grant: &Grant, cost: f64, usage: &Usage) {
        self.close_grant();
        for (_, money) in self.lock_budgets().iter_mut() {
            money.reserved = (money.reserved - grant.reserved).max(0.0);
            money.spent += cost;
        }
        self.record(grant, cost, usage);
    }

    /// Adds `cost` and `usage` to the run's accounts, under the grant's role and model.
    fn record(&self, grant: &Grant, cost: f64, usage: &Usage) {
        let mut accounts = self.accounts();
        let s = &mut accounts.snap;
        s.spent += cost;
        *s.by_role.entry(grant.role.to_string()).or_default() += cost;
        *s.by_model.entry(grant.model.clone()).or_default() += cost;
        s.tokens += *usage;
        *s.tokens_by_role.entry(grant.role.to_string()).or_default() += *usage;
    }

    /// Drops a grant whose call failed before any usage was reported.
    pub fn release(&self, grant: Grant) {
        self.close_grant();
        for (_, money) in self.lock_budgets().iter_mut() {
            money.reserved = (money.reserved - grant.reserved).max(0.0);
        }
    }

    fn close_grant(&self) {
        let _ = self
            .open_grants
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// Waits, at most `within`, until every call under way has been settled, charged or
    /// released. A run that ends while calls are cancelled waits here so that their charges
    /// reach its state and report; the calls hear the cancel and settle within moments.
    pub async fn calls_settled(&self, within: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while self.open_grants.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// What this run has spent.
    pub fn spent(&self) -> f64 {
        self.accounts().snap.spent
    }

    pub fn snapshot(&self) -> LedgerSnapshot {
        self.accounts().snap.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ledger(cap: f64, input: f64, output: f64) -> Ledger {
        Ledger::new(cap, priced(input, output), EventBus::discard())
    }

    /// What `ledger` grants a call of `role` on `openai/m`; a refusal fails the test.
    fn grant(ledger: &Ledger, role: Role, prompt_tokens: u64, max_tokens: u32) -> Grant {
        ledger
            .authorize(role, "openai/m", prompt_tokens, max_tokens)
            .expect("grant")
    }

    fn tokens(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        }
    }

    #[test]
    fn cost_prices_cached_tokens_apart() {
        let p = Price {
            input: 2.0,
            output: 8.0,
            cache_read: Some(0.5),
            cache_write: None,
        };
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 500_000,
            cache_write_tokens: 0,
        };
        assert!((p.cost(&u) - (1.0 + 0.25 + 8.0)).abs() < 1e-9);
    }

    #[test]
    fn dated_model_names_find_their_price() {
        let l = ledger(1.0, 1.0, 1.0);
        assert!(l.prices.get("openai/m-2025-04-14").is_some());
        assert!(l.prices.get("openai/m-20250414").is_some());
        assert!(l.prices.get("openai/other").is_none());
    }

    #[test]
    fn lowers_max_tokens_to_what_the_budget_pays() {
        // $0.01 left at $10/M output buys 1000 tokens.
        let l = ledger(0.01, 0.0, 10.0);
        let g = grant(&l, Role::Artisan, 100, 4096);
        assert_eq!(g.max_tokens, 1000);
        l.release(g);
    }

    #[test]
    fn refuses_when_a_useful_reply_is_unaffordable() {
        let l = ledger(0.001, 0.0, 10.0);
        let err = l
            .authorize(Role::Critic, "openai/m", 100, 4096)
            .expect_err("refused");
        assert!(err.0.contains("critic"), "{err}");
    }

    #[test]
    fn unpriced_models_cost_nothing_and_warn_once() {
        let bus = EventBus::discard();
        let mut rx = bus.subscribe();
        let l = Ledger::new(1.0, Prices::default(), bus);
        for _ in 0..3 {
            let g = l
                .authorize(Role::Artisan, "openai/unknown", 10, 100)
                .expect("grant");
            assert_eq!(l.settle(g, &tokens(10, 100)), 0.0);
        }
        let mut warnings = 0;
        while let Some(e) = rx.try_recv() {
            if matches!(e.event, Event::Warning { .. }) {
                warnings += 1;
            }
        }
        assert_eq!(warnings, 1);
    }

    fn priced(input: f64, output: f64) -> Prices {
        Prices(BTreeMap::from([(
            "openai/m".to_string(),
            Price {
                input,
                output,
                cache_read: None,
                cache_write: None,
            },
        )]))
    }

    #[test]
    fn a_shared_budget_binds_every_ledger_on_it() {
        // At $1 a token (whole dollars keep the arithmetic exact): each run may spend $10,000,
        // the two together $1,500; the second run gets what the first left.
        let shared = Budget::new(1500.0, 0.0);
        let a = ledger(1e4, 0.0, 1e6).within(shared.clone());
        let b = ledger(1e4, 0.0, 1e6).within(shared.clone());
        let g = grant(&a, Role::Artisan, 0, 1000);
        assert_eq!(g.max_tokens, 1000);
        a.settle(g, &tokens(0, 1000));
        let g = grant(&b, Role::Artisan, 0, 1000);
        assert_eq!(g.max_tokens, 500, "what the shared budget has left");
        b.settle(g, &tokens(0, 500));
        let err = a
            .authorize(Role::Critic, "openai/m", 0, 1000)
            .expect_err("the shared budget is spent");
        assert!(err.0.contains("$1500.0000 spent of $1500.00"), "{err}");
        assert_eq!(shared.spent(), 1500.0);
        assert_eq!((a.spent(), b.spent()), (1000.0, 500.0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// A batch's parallel entries: three runs on three threads at once, each with random
        /// calls (prompt, output cap, what the reply used, a call abandoned), drawing on one
        /// total. Whatever the interleaving, the total is never overdrawn.
        #[test]
        fn parallel_runs_never_overdraw_a_shared_total(
            total in 0.01f64..1.0,
            runs in proptest::collection::vec(
                proptest::collection::vec((1u64..60_000, 1u32..8_000, 0.0f64..=1.0, 0u8..10), 1..40),
                3..=3,
            ),
        ) {
            let shared = Budget::new(total, 0.0);
            std::thread::scope(|scope| {
                for calls in &runs {
                    let ledger = ledger(10.0, 3.0, 15.0)
                        .within(shared.clone());
                    scope.spawn(move || {
                        for (prompt, max_tokens, used, abandon) in calls {
                            if let Ok(g) = ledger.authorize(Role::Artisan, "openai/m", *prompt, *max_tokens) {
                                if *abandon == 0 {
                                    ledger.charge_abandoned(g);
                                } else {
                                    let out = (g.max_tokens as f64 * used) as u64;
                                    ledger.settle(g, &tokens(*prompt, out));
                                }
                            }
                        }
                    });
                }
            });
            prop_assert!(shared.spent() <= total + 1e-9, "spent {} of {}", shared.spent(), total);
        }
    }

    proptest! {
        /// Runs sharing a budget, their calls interleaved, never cross it together, nor each
        /// its own cap.
        #[test]
        fn shared_spend_never_exceeds_the_shared_cap(
            shared_cap in 0.0f64..2.0,
            caps in proptest::collection::vec(0.0f64..2.0, 1..4),
            calls in proptest::collection::vec((0usize..4, 1u64..100_000, 1u32..8_000, 0.0f64..=1.0), 1..80),
        ) {
            let shared = Budget::new(shared_cap, 0.0);
            let ledgers: Vec<Ledger> = caps
                .iter()
                .map(|cap| ledger(*cap, 3.0, 15.0).within(shared.clone()))
                .collect();
            for (which, prompt, max_tokens, out_frac) in calls {
                let l = &ledgers[which % ledgers.len()];
                if let Ok(g) = l.authorize(Role::Artisan, "openai/m", prompt, max_tokens) {
                    let out = (g.max_tokens as f64 * out_frac) as u64;
                    l.settle(g, &tokens(prompt, out));
                }
                prop_assert!(shared.spent() <= shared_cap + 1e-9);
                prop_assert!(l.spent() <= l.cap() + 1e-9);
            }
        }
    }

    proptest! {
        /// Whatever the prices, prompts and reported usages (within what the grant allowed and the
        /// counter's margin), the spend never crosses the cap.
        #[test]
        fn spend_never_exceeds_the_cap(
            cap in 0.0f64..5.0,
            input in 0.0f64..100.0,
            output in 0.0f64..300.0,
            calls in proptest::collection::vec((1u64..200_000, 1u32..16_000, 0.0f64..=1.0, 0.0f64..=1.0), 1..60),
        ) {
            let l = ledger(cap, input, output);
            for (prompt, max_tokens, in_frac, out_frac) in calls {
                if let Ok(g) = l.authorize(Role::Artisan, "openai/m", prompt, max_tokens) {
                    let reported_in = (prompt as f64 * (1.0 + PROMPT_MARGIN * in_frac)) as u64;
                    let reported_out = (g.max_tokens as f64 * out_frac) as u64;
                    l.settle(g, &tokens(reported_in, reported_out));
                }
                prop_assert!(l.spent() <= cap + 1e-9, "spent {} > cap {}", l.spent(), cap);
            }
        }
    }

    proptest! {
        /// A provider may ignore `max_tokens` or bill a longer reply than asked for. Whatever
        /// the usages, a call within its grant is never an overrun; one beyond it is recorded
        /// with its excess, and a run that stops at its first overrun (as the Caller does) ends
        /// over the cap by no more than that one call's excess.
        #[test]
        fn overruns_are_recorded_and_bounded_by_one_call(
            cap in 0.0f64..5.0,
            input in 0.01f64..100.0,
            output in 0.01f64..300.0,
            calls in proptest::collection::vec((1u64..200_000, 1u32..16_000, 0.0f64..=3.0), 1..60),
        ) {
            let l = ledger(cap, input, output);
            for (prompt, max_tokens, out_frac) in calls {
                let Ok(g) = l.authorize(Role::Artisan, "openai/m", prompt, max_tokens) else { continue };
                let (granted, reserved) = (g.max_tokens, g.reserved());
                let out = (granted as f64 * out_frac) as u64;
                let before = l.spent();
                let settled = l.settle_call(g, &tokens(prompt, out), None);
                let within = out <= u64::from(granted);
                prop_assert_eq!(settled.overrun.is_some(), !within && settled.cost > reserved * (1.0 + 1e-9) + 1e-12);
                match settled.overrun {
                    Some(o) => {
                        prop_assert!((o.excess_usd - (settled.cost - reserved)).abs() < 1e-12);
                        let snap = l.snapshot();
                        prop_assert_eq!(snap.overruns.last(), Some(&o));
                        prop_assert!(l.spent() <= before + reserved + o.excess_usd + 1e-9);
                        prop_assert!(l.spent() <= cap + o.excess_usd + 1e-9);
                        break;
                    }
                    None => prop_assert!(l.spent() <= cap + 1e-9),
                }
            }
        }
    }

    #[test]
    fn the_provider_s_cost_outranks_the_price_and_abandoned_calls_keep_their_reservation() {
        let l = ledger(1.0, 1.0, 10.0);
        let g = grant(&l, Role::Artisan, 1000, 1000);
        let usage = tokens(1000, 10);
        let settled = l.settle_call(g, &usage, Some(0.0042));
        assert_eq!(settled.cost, 0.0042);
        assert!(settled.overrun.is_none());
        let g = grant(&l, Role::Critic, 1000, 1000);
        let reserved = g.reserved();
        assert!(reserved > 0.0);
        assert_eq!(l.charge_abandoned(g), reserved);
        let snap = l.snapshot();
        assert_eq!(snap.abandoned_calls, 1);
        assert!((snap.spent - (0.0042 + reserved)).abs() < 1e-12);
        assert!((snap.by_role["critic"] - reserved).abs() < 1e-12);
    }

    #[test]
    fn an_unpriced_model_s_reported_cost_counts_without_an_overrun() {
        let l = Ledger::new(1.0, Prices::default(), EventBus::discard());
        let g = l
            .authorize(Role::Artisan, "openai/local", 10, 100)
            .expect("grant");
        let settled = l.settle_call(g, &Usage::default(), Some(0.25));
        assert_eq!((settled.cost, settled.overrun), (0.25, None));
        assert_eq!(l.spent(), 0.25);
    }
}
