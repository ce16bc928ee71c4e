//! What pays for the gateway's calls: the run's budget and price table, and a ledger on them
//! for each iteration (with the iteration's cap, when there is one).

use ralph_actors::events::bus::EventBus;
use ralph_actors::policy::budget::{Budget, Ledger, Prices};
use ralph_actors::schema::state::LedgerSnapshot;

/// What pays for the calls: the run's budget, the price table, and the bus the ledger's
/// warnings go on.
#[derive(Debug, Clone)]
pub struct Purse {
    pub max_cost_usd: f64,
    pub prices: Prices,
    pub events: EventBus,
}

impl Purse {
    /// A ledger on the run's budget with `spent` already spent, and on an iteration's cap.
    pub fn ledger(&self, spent: f64, cap: Option<f64>) -> Ledger {
        let snap = LedgerSnapshot {
            spent,
            ..LedgerSnapshot::default()
        };
        let ledger = Ledger::resume(
            self.max_cost_usd,
            self.prices.clone(),
            self.events.clone(),
            snap,
        );
        match cap {
            Some(cap) => ledger.within(Budget::new(cap, 0.0)),
            None => ledger,
        }
    }
}
