//! The Supervisor: steps a session's state machine ([`crate::machine`]) through its
//! iterations and decides when it ends.
//!
//! - [`run`]: a run as a value: its parts ([`run::RunDeps`], the ledger, the event bus and the
//!   stop signal passed in) and its bookkeeping;
//! - `driver`: [`run::Run::execute`], the one loop that steps every state;
//! - `steps`: what each state does and which comes next; `testing`: the test runs; `memory`: recall and record;
//!   `review`: the Critic's review beside the tests (and beside Chaos's round); `binding`: the
//!   review beside the tests that stops them when it rejects; `analysis`: the
//!   Librarian's analysis beside the Artisan's call; `pending`: a role's answer under way
//!   while the run goes on; `chaos`: Chaos's rounds on a passing fix; `coverage`: the coverage of the changed lines and
//!   the rounds that run the lines no test runs; `mutation`: the mutation score of the changed lines and the rounds that kill its
//!   survivors; `replay`: counterexamples kept as named regression tests; `breaker`: asking the user before the circuit breaker stops a run;
//!   `hook_points`: where the hooks are called; `ask`: the models as hooks ask them; `checkpoints`: the best state kept on disk, a
//!   worse proposal undone, the file a failed run leaves; `finish`: the report, with
//!   `next_steps` (what to try next) and `promise` (the checks its success stands on);
//! - [`actor`]: the same run behind an actix mailbox (`StartRun`, `Interrupt`).

pub mod actor;
mod analysis;
mod ask;
mod binding;
mod breaker;
mod chaos;
mod checkpoints;
mod coverage;
mod driver;
mod finish;
mod hook_points;
mod judgement;
mod memory;
mod mutation;
mod next_steps;
mod pending;
mod promise;
mod replay;
mod review;
pub mod run;
mod steps;
mod testing;
