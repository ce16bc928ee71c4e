//! The agent's turn in one iteration, under the Regent: the agent run on the prompt, and run
//! again after a crash or a hang (after a jittered, doubling backoff) until it finishes its turn,
//! fails `regent.max_retries` times in a row, crosses `regent.max_cost_per_iteration`, or the
//! user stops the loop.

use std::time::{Duration, Instant};

use chrono::Utc;
use ralph_actors::events::event::Event;
use ralph_actors::schema::agent::{AgentEvent, AgentTokens};
use ralph_actors::schema::regent::RegentAction;

use super::outcome::{Turn, TurnEnd};
use super::run::LoopRun;
use crate::agents::cost::Meter;
use crate::agents::invoke::{AgentEnding, AgentOutcome, Invocation, OnBusy};
use crate::agents::launch::launch;

/// How often, at most, the state file is rewritten for new output alone.
const OUTPUT_STAMP_EVERY: Duration = Duration::from_secs(1);

impl LoopRun {
    /// Runs the agent on `prompt` until its turn ends (see the module's docs).
    pub(super) async fn agent_turn(&mut self, iteration: u32, prompt: &str) -> Turn {
        let started = Instant::now();
        let mut turn = Turn {
            end: TurnEnd::Finished,
            runs: 0,
            ending: String::new(),
            exit_code: None,
            duration: Duration::ZERO,
            cost_usd: 0.0,
            cost_estimated: false,
            tokens: AgentTokens::default(),
            tokens_estimated: false,
            found: Vec::new(),
            notes: Vec::new(),
        };
        loop {
            turn.runs += 1;
            let (outcome, meter, over_cost) = self.run_agent(iteration, turn.runs, prompt).await;
            let (cost, estimated) = meter.cost();
            turn.cost_usd += cost;
            turn.cost_estimated |= estimated;
            turn.tokens.add(meter.tokens());
            turn.tokens_estimated |= meter.tokens_estimated();
            self.state.total_cost_usd += cost;
            self.state.cost_estimated |= estimated;
            let Some(outcome) = outcome else {
                // It could not be started: as a crash (a binary removed, a full disk).
                turn.ending = "not_started".into();
                if let Some(end) = self.after_failure(iteration, &mut turn).await {
                    turn.end = end;
                    break;
                }
                continue;
            };
            turn.ending = ending_name(outcome.ending, over_cost).into();
            turn.exit_code = match outcome.ending {
                AgentEnding::Exited(code) => code,
                _ => None,
            };
            self.emit(Event::AgentEnded {
                iteration,
                run: turn.runs,
                ending: turn.ending.clone(),
                exit_code: turn.exit_code,
                duration_ms: outcome.duration.as_millis() as u64,
                cost_usd: cost,
                cost_estimated: estimated,
                total_cost_usd: self.state.total_cost_usd,
            });
            turn.found = outcome.found.clone();
            if meter.refused() > 0 {
                self.refused_by_budget(iteration);
                turn.end = TurnEnd::OverCost;
                break;
            }
            if over_cost {
                let cap = self.deps.settings.max_cost_per_iteration.unwrap_or(0.0);
                self.regent(
                    iteration,
                    RegentAction::OverCost,
                    format!("the iteration cost ${cost:.4}, over regent.max_cost_per_iteration (${cap:.2}): the agent was killed"),
                );
                turn.notes.push(format!(
                    "Your last turn was stopped: it cost more than ${cap:.2}. Do less in one turn."
                ));
                turn.end = TurnEnd::OverCost;
                break;
            }
            if outcome.ending == AgentEnding::Cancelled {
                turn.end = TurnEnd::Quit;
                break;
            }
            if outcome.finished() {
                self.state.consecutive_errors = 0;
                self.backoff.reset();
                turn.end = TurnEnd::Finished;
                break;
            }
            let why = failure(&self.deps.agent.name, &outcome, &self.deps.settings);
            let action = match outcome.ending {
                AgentEnding::Hung => RegentAction::Hung,
                AgentEnding::ActiveTimeout => RegentAction::TimedOut,
                _ => RegentAction::Crashed,
            };
            self.regent(iteration, action, why.clone());
            turn.notes.push(format!(
                "An earlier run of this iteration was stopped: {why}."
            ));
            if let Some(end) = self.after_failure(iteration, &mut turn).await {
                turn.end = end;
                break;
            }
        }
        turn.duration = started.elapsed();
        turn
    }

    /// One run of the agent: its outcome (`None` when it could not start), its meter, and
    /// whether it was killed for the iteration's cost cap.
    /// Says, as it happens, that the agent was silent for the hang timeout but its processes
    /// were at work, so it was left to work rather than killed.
    fn on_busy(&self, iteration: u32) -> OnBusy {
        let events = self.deps.events.clone();
        let message = format!(
            "{} was silent for the hang timeout ({:.0}s), but its processes used CPU or did I/O: left to work",
            self.deps.agent.name,
            self.deps.settings.limits.hang.as_secs_f64()
        );
        OnBusy(std::sync::Arc::new(move || {
            tracing::info!(target: "regent", "{message}");
            events.emit(Event::Regent {
                iteration,
                action: RegentAction::SilentButWorking,
                message: message.clone(),
            });
        }))
    }

    async fn run_agent(
        &mut self,
        iteration: u32,
        run: u32,
        prompt: &str,
    ) -> (Option<AgentOutcome>, Meter, bool) {
        self.emit(Event::AgentStarted {
            iteration,
            run,
            agent: self.deps.agent.name.clone(),
            model: self.deps.model.clone(),
        });
        let (def, env) = crate::agents::wire::pointed(
            &self.deps.agent,
            &self.deps.env,
            self.deps.gateway.as_deref(),
        );
        let invocation = Invocation {
            def,
            binary: self.deps.binary.clone(),
            prompt: prompt.to_string(),
            model: self.deps.model.clone(),
            cwd: self.deps.root.clone(),
            env,
            limits: self.deps.settings.limits,
            reaper: self.deps.reaper.clone(),
            on_busy: Some(self.on_busy(iteration)),
        };
        let cap = self.deps.settings.max_cost_per_iteration;
        let spent_before = self.spent_this_iteration;
        let stop = self.deps.quit.child_token();
        let mut meter = Meter::new(self.deps.price, prompt);
        if let Some(gateway) = &self.deps.gateway {
            meter = meter.on_wire(gateway.clone());
        }
        let mut over_cost = false;
        // The first output is stamped at once.
        let mut stamped = Instant::now()
            .checked_sub(OUTPUT_STAMP_EVERY)
            .unwrap_or_else(Instant::now);
        let events = self.deps.events.clone();
        let file = self.state_file.clone();
        let state = &mut self.state;
        let groups = self.deps.groups.clone();
        let result = launch(invocation, stop.clone(), &groups, |event: &AgentEvent| {
            meter.see(event);
            events.emit(Event::AgentOutput {
                iteration,
                event: event.clone(),
            });
            state.last_output_at = Some(Utc::now());
            if stamped.elapsed() >= OUTPUT_STAMP_EVERY {
                stamped = Instant::now();
                state.updated_at = Utc::now();
                if let Err(e) = file.save(state) {
                    tracing::warn!("{e}");
                }
            }
            if let Some(cap) = cap {
                if spent_before + meter.cost().0 > cap && !over_cost {
                    over_cost = true;
                    stop.cancel();
                }
            }
        })
        .await;
        let outcome = match result {
            Ok(outcome) => Some(outcome),
            Err(e) => {
                let why = format!("{} could not be started: {e}", self.deps.agent.name);
                self.regent(iteration, RegentAction::Crashed, why);
                None
            }
        };
        self.spent_this_iteration += meter.cost().0;
        self.save_state();
        (outcome, meter, over_cost)
    }

    /// The gateway refused the agent a call the budget could not pay: the iteration's cap
    /// (the next iteration has its own), or the run's budget (the loop stops after this
    /// iteration). Said either way.
    fn refused_by_budget(&mut self, iteration: u32) {
        let s = &self.deps.settings;
        let run_left = s.max_cost_usd - self.state.total_cost_usd;
        let capped = s
            .max_cost_per_iteration
            .filter(|cap| cap - self.spent_this_iteration < run_left);
        let agent = &self.deps.agent.name;
        let why = match capped {
            Some(cap) => format!(
                "the iteration has spent ${:.4} of regent.max_cost_per_iteration (${cap:.2}): the gateway refused {agent} its next call",
                self.spent_this_iteration
            ),
            None => {
                let why = format!(
                    "${:.4} spent of a ${:.2} budget: the gateway refused {agent} a call the rest could not pay",
                    self.state.total_cost_usd, s.max_cost_usd
                );
                self.budget_spent = Some(why.clone());
                why
            }
        };
        self.regent(iteration, RegentAction::OverCost, why);
    }

    /// After a crash or a hang: count it, then stop for good or wait out the backoff. `None`:
    /// run the agent again.
    async fn after_failure(&mut self, iteration: u32, turn: &mut Turn) -> Option<TurnEnd> {
        self.state.consecutive_errors += 1;
        self.save_state();
        let errors = self.state.consecutive_errors;
        let max = self.deps.settings.max_retries;
        if errors > max {
            return Some(TurnEnd::Failed(format!(
                "{} failed {errors} times in a row (regent.max_retries is {max}); the last: {}",
                self.deps.agent.name, turn.ending
            )));
        }
        let delay = self.backoff.next_delay();
        self.regent(
            iteration,
            RegentAction::Waiting,
            format!(
                "restarting {} in {:.1}s (failure {errors} in a row, at most {max} restarts)",
                self.deps.agent.name,
                delay.as_secs_f64()
            ),
        );
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = self.deps.drain.cancelled() => return Some(TurnEnd::Interrupted),
            _ = self.deps.quit.cancelled() => return Some(TurnEnd::Quit),
        }
        self.regent(
            iteration,
            RegentAction::Restarted,
            format!("{} restarted (run {})", self.deps.agent.name, turn.runs + 1),
        );
        None
    }
}

/// The report's name for an ending.
fn ending_name(ending: AgentEnding, over_cost: bool) -> &'static str {
    match ending {
        _ if over_cost => "over_cost",
        AgentEnding::Exited(_) => "exited",
        AgentEnding::Hung => "hung",
        AgentEnding::ActiveTimeout => "active_timeout",
        AgentEnding::StoppedAfterResult => "stopped_after_result",
        AgentEnding::Cancelled => "cancelled",
        AgentEnding::OverMemory => "over_memory",
    }
}

/// Why a run that did not finish its turn counts as a failure, in words.
fn failure(agent: &str, outcome: &AgentOutcome, s: &super::run::LoopSettings) -> String {
    let error = outcome.events.iter().rev().find_map(|e| match e {
        AgentEvent::Result {
            is_error: true,
            text,
            ..
        } => Some(text.as_str()),
        AgentEvent::Error { message } => Some(message.as_str()),
        _ => None,
    });
    let said = error
        .map(|e| format!(": {}", first_line(e)))
        .unwrap_or_default();
    match outcome.ending {
        AgentEnding::Exited(Some(0)) => format!("{agent} reported an error{said}"),
        AgentEnding::Exited(Some(code)) => format!("{agent} exited with code {code}{said}"),
        AgentEnding::Exited(None) => format!("{agent} ended without an exit status{said}"),
        AgentEnding::Hung => format!(
            "{agent} printed nothing for {:.0}s and its processes used no CPU and did no I/O: killed as hung",
            s.limits.hang.as_secs_f64()
        ),
        AgentEnding::ActiveTimeout => format!(
            "{agent} ran for {:.0} minutes (regent.active_timeout_minutes) without finishing: killed",
            s.limits.active.as_secs_f64() / 60.0
        ),
        AgentEnding::OverMemory => format!("{agent} passed the memory limit: killed"),
        AgentEnding::StoppedAfterResult | AgentEnding::Cancelled => {
            format!("{agent} was stopped{said}")
        }
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    crate::http::text::shorten(line)
}
