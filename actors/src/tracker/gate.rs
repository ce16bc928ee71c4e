//! The agent loop's exit gate: the seed's two conditions (at least `indicators` completion
//! indicators over the loop, and the agent's `EXIT_SIGNAL: true` in its last status block of the
//! iteration), and a third of ralph-loop's own: the tests agree. An agent that asks to stop
//! while the tests fail is told so and goes on; when that happens `disagreements` iterations in a
//! row the loop stops with `gate_disagreement` rather than spend more.

use serde::{Deserialize, Serialize};

use super::status::{Found, Status};

/// The gate's settings (`regent.exit_gate` in config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateSettings {
    /// Completion indicators needed over the loop (STATUS: COMPLETE blocks count as one each).
    pub indicators: u32,
    /// Iterations in a row the agent may ask to stop while the tests fail.
    pub disagreements: u32,
}

impl Default for GateSettings {
    fn default() -> Self {
        GateSettings {
            indicators: 2,
            disagreements: 3,
        }
    }
}

/// The gate's counts, saved with the Regent's state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitGate {
    pub completion_indicators: u32,
    pub consecutive_disagreements: u32,
}

/// What the gate says after an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateVerdict {
    /// Go on: the agent has not asked to stop (or has too few indicators).
    Continue,
    /// Both conditions hold and the tests agree: the loop is done.
    Exit,
    /// The agent asked to stop while the tests fail; the next prompt says so.
    Disagree,
    /// They disagreed too many times in a row: the loop stops (`gate_disagreement`).
    Stop,
}

/// What one iteration's output said, for the gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Said {
    pub indicators: u32,
    /// The last well-formed block's EXIT_SIGNAL (false without one).
    pub exit_signal: bool,
}

impl Said {
    /// Counts what the status scanner found in one iteration's output.
    pub fn from_found(found: &[Found]) -> Said {
        let mut said = Said::default();
        for f in found {
            match f {
                Found::Indicator(_) => said.indicators += 1,
                Found::Block(block) => {
                    if block.status == Status::Complete {
                        said.indicators += 1;
                    }
                    said.exit_signal = block.exit_signal;
                }
                Found::Malformed(_) => {}
            }
        }
        said
    }
}

impl ExitGate {
    /// Judges an iteration: what the agent said, and whether the tests pass.
    pub fn judge(&mut self, said: Said, tests_pass: bool, s: &GateSettings) -> GateVerdict {
        self.completion_indicators += said.indicators;
        if !said.exit_signal || self.completion_indicators < s.indicators {
            self.consecutive_disagreements = 0;
            return GateVerdict::Continue;
        }
        if tests_pass {
            self.consecutive_disagreements = 0;
            return GateVerdict::Exit;
        }
        self.consecutive_disagreements += 1;
        if self.consecutive_disagreements >= s.disagreements.max(1) {
            GateVerdict::Stop
        } else {
            GateVerdict::Disagree
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::tracker::status::StatusBlock;

    fn block(status: Status, exit_signal: bool) -> Found {
        Found::Block(StatusBlock {
            exit_signal,
            ..StatusBlock::new(status)
        })
    }

    #[test]
    fn exit_needs_two_indicators_the_signal_and_passing_tests() {
        let s = GateSettings::default();
        // The signal with one indicator: not yet.
        let mut gate = ExitGate::default();
        let said = Said::from_found(&[block(Status::Complete, true)]);
        assert_eq!(
            said,
            Said {
                indicators: 1,
                exit_signal: true
            }
        );
        assert_eq!(gate.judge(said, true, &s), GateVerdict::Continue);
        // Two indicators over the loop, and the signal: done.
        assert_eq!(gate.judge(said, true, &s), GateVerdict::Exit);

        // Indicators without the signal: never.
        let mut gate = ExitGate::default();
        let said = Said::from_found(&[
            Found::Indicator("all tasks done".into()),
            Found::Indicator("nothing left to do".into()),
            block(Status::Complete, false),
        ]);
        assert_eq!(gate.judge(said, true, &s), GateVerdict::Continue);
        assert_eq!(gate.completion_indicators, 3);
    }

    /// The last block of an iteration decides the signal; a malformed block says nothing.
    #[test]
    fn the_last_block_decides_the_signal() {
        let said = Said::from_found(&[
            block(Status::Complete, true),
            block(Status::InProgress, false),
            Found::Malformed("x".into()),
        ]);
        assert_eq!(
            said,
            Said {
                indicators: 1,
                exit_signal: false
            }
        );
    }

    #[test]
    fn three_disagreements_in_a_row_stop_and_agreement_resets_the_count() {
        let s = GateSettings::default();
        let mut gate = ExitGate::default();
        let done = Said {
            indicators: 2,
            exit_signal: true,
        };
        assert_eq!(gate.judge(done, false, &s), GateVerdict::Disagree);
        assert_eq!(gate.judge(done, false, &s), GateVerdict::Disagree);
        assert_eq!(
            gate.judge(Said::default(), false, &s),
            GateVerdict::Continue
        );
        assert_eq!(gate.consecutive_disagreements, 0);
        assert_eq!(gate.judge(done, false, &s), GateVerdict::Disagree);
        assert_eq!(gate.judge(done, false, &s), GateVerdict::Disagree);
        assert_eq!(gate.judge(done, false, &s), GateVerdict::Stop);
    }
}
