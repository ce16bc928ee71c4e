//! [`ViewState::apply`]: one event folded into the view, each arm of it in one place for every
//! view that shows it (the TUI's list, header and signs, the dashboard's timeline, costs and
//! panels).

use chrono::{DateTime, Utc};
use ralph_actors::events::event::{Envelope, Event};
use ralph_actors::schema::agent::AgentEvent;
use ralph_actors::schema::report::{Report, Status, TestsSnapshot};

use super::{clean, ended, Finding, Mark, Recall, ViewState};

impl ViewState {
    /// Folds one more event in.
    pub fn apply(&mut self, envelope: &Envelope) {
        if !self.session.is_empty()
            && envelope.session != self.session
            && matches!(envelope.event, Event::SessionStarted { .. })
        {
            self.next_session();
        }
        let t = envelope.time;
        self.started.get_or_insert(t);
        self.last = Some(t);
        self.seq = envelope.seq;
        if self.session.is_empty() {
            self.session = envelope.session.clone();
        }
        self.log_lines(envelope);
        let event = &envelope.event;
        match event {
            Event::SessionStarted { .. } | Event::LoopStarted { .. } => self.started(event),
            Event::IterationStarted {
                iteration,
                max_iterations,
            } => {
                self.begin(*iteration);
                self.row(*iteration);
                self.max_iterations = *max_iterations;
            }
            Event::PhaseChanged { iteration, phase } => {
                self.phase = Some(phase.as_str().to_string());
                self.row(*iteration)
                    .phases
                    .push((phase.as_str().to_string(), t));
            }
            Event::LlmCallFinished { .. } => self.answered(event),
            Event::AgentStarted {
                iteration, model, ..
            } => {
                self.begin(*iteration);
                // A loop's phases: the agent's turn, then its work checked (below).
                self.phase = Some("agent".into());
                self.row(*iteration).phases.push(("agent".into(), t));
                if let Some(model) = model {
                    self.set_model("model", model);
                }
            }
            Event::AgentEnded { .. } => self.agent_ended(event, t),
            Event::Thought { role, text, .. } => self.think(&role.to_string(), text),
            Event::AgentOutput { event, .. } => self.agent_said(event),
            Event::CriticVerdict {
                approved, reasons, ..
            } if !approved => {
                let first = reasons.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                self.settle(Mark::Failed, format!("rejected: {}", clean(first.trim())));
            }
            Event::TestIntegrity { .. } => self.settle(Mark::Failed, "tests edited".into()),
            Event::TestsFinished { iteration, tests } => self.tested(*iteration, tests),
            Event::ProgressMeasured { .. } => self.progressed(event),
            Event::BreakerChanged { to, reason, .. } => {
                self.breaker = Some((*to, reason.as_str().to_string()));
            }
            &Event::MemoryRecalled {
                iteration,
                attempts,
                worked,
                best_similarity,
            } => self.recalls.push(Recall {
                iteration,
                attempts,
                worked,
                best_similarity,
            }),
            Event::MemoryRecorded { .. } => self.recorded += 1,
            Event::ChaosJudged { kept, .. } => self.chaos_kept(kept),
            Event::ChaosRecheck { open, .. } => {
                let open: Vec<String> = open.iter().map(|k| clean(k)).collect();
                for finding in &mut self.chaos {
                    finding.open = open.contains(&finding.test);
                }
            }
            Event::ChaosMutation {
                score, surviving, ..
            } => self.mutation = Some((*score, *surviving)),
            Event::Warning { message } => self.warnings.push(clean(message)),
            Event::Paused { .. } => {
                self.paused = true;
                self.set_running_mark(Mark::Paused);
            }
            Event::Resumed { .. } => {
                self.paused = false;
                self.set_running_mark(Mark::Running);
            }
            Event::SessionFinished { report } => self.session_finished(report),
            Event::LoopFinished { report } => {
                let status = match report.exit_code {
                    0 => Status::Success,
                    _ => Status::Error,
                };
                self.cost_usd = report.total_cost_usd;
                self.finish(
                    status,
                    report.status.as_str(),
                    &report.reason,
                    report.exit_code,
                );
            }
            _ => {}
        }
        self.lasted(t);
    }

    /// A fix run or an agent loop began: what it works on, its models and its limits.
    fn started(&mut self, event: &Event) {
        match event {
            Event::SessionStarted {
                target,
                test_command,
                models,
                max_cost_usd,
                max_iterations,
                resumed_from_iteration,
                spent_usd,
                ..
            } => {
                self.title = target.clone();
                self.test_command = test_command.clone();
                self.models = models
                    .iter()
                    .map(|(r, m)| (r.to_string(), m.clone()))
                    .collect();
                self.max_cost_usd = *max_cost_usd;
                self.max_iterations = *max_iterations;
                self.iteration = *resumed_from_iteration;
                self.cost_usd = *spent_usd;
            }
            Event::LoopStarted {
                agent,
                model,
                prompt_file,
                max_iterations,
                max_cost_usd,
                ..
            } => {
                self.is_loop = true;
                self.title = prompt_file.clone();
                self.models = vec![("agent".into(), agent.clone())];
                if let Some(model) = model {
                    self.models.push(("model".into(), model.clone()));
                }
                self.max_cost_usd = *max_cost_usd;
                self.max_iterations = *max_iterations;
            }
            _ => {}
        }
    }

    /// A model answered: the one shown for its role, the context it used, the money.
    fn answered(&mut self, event: &Event) {
        let Event::LlmCallFinished {
            iteration,
            role,
            model,
            cost_usd,
            total_cost_usd,
            context_used,
            ..
        } = event
        else {
            return;
        };
        // The model that answered: a fallback, or one chosen in the picker.
        self.set_model(&role.to_string(), model);
        self.context_used = context_used.or(self.context_used);
        self.spent(
            *iteration,
            &role.to_string(),
            model,
            *cost_usd,
            *total_cost_usd,
        );
    }

    /// An agent's run ended: its money, and how it ended when that was not by itself.
    fn agent_ended(&mut self, event: &Event, t: DateTime<Utc>) {
        let Event::AgentEnded {
            iteration,
            cost_usd,
            total_cost_usd,
            ending,
            ..
        } = event
        else {
            return;
        };
        // The agent's model when one is shown, else the agent itself.
        let model = match self.models.get(1).or(self.models.first()) {
            Some((_, model)) => model.clone(),
            None => "agent".into(),
        };
        self.spent(*iteration, "agent", &model, *cost_usd, *total_cost_usd);
        self.phase = Some("tests".into());
        self.row(*iteration).phases.push(("tests".into(), t));
        if ending != "exited" && ending != "stopped_after_result" {
            self.settle(Mark::Failed, ending.replace('_', " "));
        }
    }

    /// An agent loop's iteration judged by its progress.
    fn progressed(&mut self, event: &Event) {
        let Event::ProgressMeasured {
            files_changed,
            progress,
            newly_passing,
            ..
        } = event
        else {
            return;
        };
        let mark = if *progress { Mark::Done } else { Mark::Failed };
        let summary = format!("{files_changed} files changed, {newly_passing} tests newly passing");
        self.settle(mark, summary);
    }

    /// Money spent in `iteration` by `who` on `model`; `total` is the run's.
    fn spent(&mut self, iteration: u32, who: &str, model: &str, cost: f64, total: f64) {
        self.cost_usd = total;
        *self.cost_by_role.entry(who.to_string()).or_insert(0.0) += cost;
        *self.cost_by_model.entry(model.to_string()).or_insert(0.0) += cost;
        self.add_cost(cost);
        self.row(iteration).cost_usd += cost;
    }

    /// An agent's output joins the thought stream, each message a paragraph of its own.
    fn agent_said(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Text { text } | AgentEvent::Result { text, .. } => {
                self.think("agent", &ended(text))
            }
            AgentEvent::Tool { name, detail } => {
                self.think("agent", &format!("[{name}] {detail}\n"))
            }
            AgentEvent::Error { message } => self.think("agent", &format!("error: {message}\n")),
            AgentEvent::Session { .. } | AgentEvent::Usage { .. } => {}
        }
    }

    fn tested(&mut self, iteration: u32, tests: &TestsSnapshot) {
        let mut tests = tests.clone();
        tests.first_failure = tests.first_failure.as_deref().map(clean);
        tests.summary = clean(&tests.summary);
        // An agent loop's iteration is judged by its progress, its tests only one part of it.
        if iteration > 0 && !self.is_loop {
            let mark = match tests.criteria_met {
                true => Mark::Done,
                false => Mark::Failed,
            };
            self.settle(mark, tests.summary.clone());
        }
        self.row(iteration).tests = Some(tests.clone());
        self.tests = Some(tests);
    }

    fn chaos_kept(&mut self, kept: &[String]) {
        self.chaos.extend(kept.iter().map(|k| Finding {
            test: clean(k),
            open: true,
        }));
        if let Some(item) = self.items.last_mut().filter(|_| !kept.is_empty()) {
            // The unit tests passed, but Chaos broke the fix: not done yet.
            item.mark = Mark::Failed;
            item.summary = format!("Chaos found {} failing", kept.len());
        }
    }

    fn session_finished(&mut self, report: &Report) {
        self.cost_usd = report.cost_usd;
        let name = report.status.as_str();
        self.finish(report.status, name, &report.reason, report.exit_code);
        let promise = &report.promise;
        if let (Some(done), false) = (&mut self.finished, promise.checks.is_empty()) {
            done.promise = Some(promise.brief());
            done.promise_detail = Some(clean(&promise.summary()));
        }
    }

    /// The iteration under way lasted until `t`, unless the run has ended.
    fn lasted(&mut self, t: DateTime<Utc>) {
        if self.finished.is_none() {
            let iteration = self.iteration;
            self.row(iteration).last = Some(t);
        }
    }
}
