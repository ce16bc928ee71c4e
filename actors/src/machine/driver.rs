//! The driver every loop of ralph-loop runs on. The fix loop's Supervisor
//! ([`crate::supervisor`]) and the Regent's agent loop (`regent` in the binary's crate) are each a
//! [`Machine`]: their own states, stepped one at a time by [`drive`], which holds before each
//! step while the live view pauses the run, tells observers and hooks of every move
//! ([`Machine::moved`]), and ends when a step says [`Next::Stop`].

use std::future::Future;

use crate::machine::state::{Next, StateKind};

/// A loop as states and the one step function that moves between them.
pub trait Machine {
    /// Each state carries what its step needs.
    type State;
    /// How the loop ended.
    type Outcome;

    /// The state's kind, as observers and hooks see it.
    fn kind(state: &Self::State) -> StateKind;

    /// Entering `state`: what the live view is told of it.
    fn enter(&mut self, state: &Self::State);

    /// Before each step: waits while the live view holds the loop paused; `Err` ends the loop
    /// there (a stop that cannot wait).
    fn hold(&mut self) -> impl Future<Output = Result<(), Self::Outcome>>;

    /// The one step function: every state's step passes through here.
    fn step(
        &mut self,
        state: Self::State,
    ) -> impl Future<Output = Next<Self::State, Self::Outcome>>;

    /// After a step decided `next`: observers and hooks are told of the move from `from`.
    /// `Some` ends the loop there instead (a hook's failure that stops it).
    fn moved(
        &mut self,
        from: StateKind,
        next: &Next<Self::State, Self::Outcome>,
    ) -> impl Future<Output = Option<Self::Outcome>>;
}

/// Steps `machine` from `first` until a step (or a hold, or a hook) ends it.
pub async fn drive<M: Machine>(machine: &mut M, first: M::State) -> M::Outcome {
    let mut state = first;
    machine.enter(&state);
    loop {
        if let Err(outcome) = machine.hold().await {
            return outcome;
        }
        let from = M::kind(&state);
        let next = machine.step(state).await;
        if let Some(outcome) = machine.moved(from, &next).await {
            return outcome;
        }
        match next {
            Next::Continue(s) => {
                state = s;
                machine.enter(&state);
            }
            Next::Stop(outcome) => return outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts to a limit; a hook stops it at a kind it is told to.
    struct Counter {
        entered: Vec<u32>,
        moves: Vec<(StateKind, StateKind)>,
        stop_at: Option<u32>,
        held: u32,
    }

    impl Machine for Counter {
        type State = u32;
        type Outcome = String;

        fn kind(state: &u32) -> StateKind {
            match state {
                0 => StateKind::Baseline,
                _ => StateKind::Turn,
            }
        }

        fn enter(&mut self, state: &u32) {
            self.entered.push(*state);
        }

        async fn hold(&mut self) -> Result<(), String> {
            self.held += 1;
            Ok(())
        }

        async fn step(&mut self, state: u32) -> Next<u32, String> {
            match state {
                3 => Next::Stop(format!("stopped at {state}")),
                n => Next::Continue(n + 1),
            }
        }

        async fn moved(&mut self, from: StateKind, next: &Next<u32, String>) -> Option<String> {
            let to = match next {
                Next::Continue(s) => Self::kind(s),
                Next::Stop(_) => StateKind::Done,
            };
            self.moves.push((from, to));
            match next {
                Next::Continue(s) if Some(*s) == self.stop_at => Some(format!("hook at {s}")),
                _ => None,
            }
        }
    }

    fn counter(stop_at: Option<u32>) -> Counter {
        Counter {
            entered: Vec::new(),
            moves: Vec::new(),
            stop_at,
            held: 0,
        }
    }

    #[tokio::test]
    async fn each_state_is_entered_held_stepped_and_told_until_a_stop() {
        let mut m = counter(None);
        assert_eq!(drive(&mut m, 0).await, "stopped at 3");
        assert_eq!(m.entered, [0, 1, 2, 3]);
        assert_eq!(m.held, 4, "a hold before every step");
        assert_eq!(
            m.moves,
            [
                (StateKind::Baseline, StateKind::Turn),
                (StateKind::Turn, StateKind::Turn),
                (StateKind::Turn, StateKind::Turn),
                (StateKind::Turn, StateKind::Done),
            ]
        );
    }

    #[tokio::test]
    async fn a_move_told_may_end_the_loop_before_the_next_state() {
        let mut m = counter(Some(2));
        assert_eq!(drive(&mut m, 0).await, "hook at 2");
        assert_eq!(m.entered, [0, 1], "state 2 is never entered");
    }
}
