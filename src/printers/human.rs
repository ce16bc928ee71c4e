//! The live view on stderr: one line per step, each with the elapsed time, the iteration and
//! the spend; warnings and notes as they come; the report's summary at the end.

use std::io::Write;

use chrono::{DateTime, Utc};
use ralph_actors::events::event::Envelope;
use ralph_actors::events::event::{Event, Phase};
use ralph_actors::schema::context::ContextChoice;

use crate::printers::printer::Printer;
use crate::printers::summary::{counts, one_line, write_summary};

/// The live view: one line per step, each with the time since the session's first event, the
/// iteration, and the spend.
#[derive(Debug, Clone, Default)]
pub struct Human<W> {
    out: W,
    /// The time of the first event: the clock starts there.
    started: Option<DateTime<Utc>>,
    /// The time of the event being rendered.
    now: Option<DateTime<Utc>>,
    iteration: u32,
    max_iterations: u32,
    cost: f64,
    /// The most distinct values LocalGuard has said a call carried masked: a call that carries
    /// more is told of, the others are not.
    masked: usize,
}

impl<W: Write + Send> Printer for Human<W> {
    fn print(&mut self, event: &Envelope) -> std::io::Result<()> {
        self.started.get_or_insert(event.time);
        self.now = Some(event.time);
        self.render(&event.event)
    }
}

impl<W: Write> Human<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            started: None,
            now: None,
            iteration: 0,
            max_iterations: 0,
            cost: 0.0,
            masked: 0,
        }
    }

    /// What was written so far, taken (an in-memory rendering: a view's log).
    pub fn take_output(&mut self) -> W
    where
        W: Default,
    {
        std::mem::take(&mut self.out)
    }

    fn prefix(&self) -> String {
        let t = match (self.started, self.now) {
            (Some(start), Some(now)) => (now - start).num_milliseconds().max(0) as f64 / 1000.0,
            _ => 0.0,
        };
        let it = if self.iteration == 0 {
            "baseline".to_string()
        } else {
            format!("iter {}/{}", self.iteration, self.max_iterations)
        };
        format!(
            "[{:02}:{:04.1}] {it} · ${:.4}",
            (t / 60.0) as u64,
            t % 60.0,
            self.cost
        )
    }

    /// The session's first lines: what runs, on which models, within what.
    fn session_lines(&mut self, event: &Event, out: &mut Vec<u8>) -> std::io::Result<()> {
        let Event::SessionStarted {
            session_id,
            target,
            test_command,
            models,
            max_cost_usd,
            max_iterations,
            resumed_from_iteration,
            spent_usd,
        } = event
        else {
            return Ok(());
        };
        self.max_iterations = *max_iterations;
        self.iteration = *resumed_from_iteration;
        self.cost = *spent_usd;
        let resumed = if *resumed_from_iteration > 0 {
            format!(" (resumed after iteration {resumed_from_iteration})")
        } else {
            String::new()
        };
        writeln!(out, "ralph-loop · session {session_id}{resumed}")?;
        writeln!(out, "  target {target} · tests `{test_command}`")?;
        let models: Vec<String> = models.iter().map(|(r, m)| format!("{r} {m}")).collect();
        writeln!(
            out,
            "  models {} · budget ${max_cost_usd:.2}, {max_iterations} iterations",
            models.join(", ")
        )?;
        Ok(())
    }

    /// A model call's line: who, on what, its tokens, money and time.
    fn call_line(&mut self, event: &Event, out: &mut Vec<u8>) -> std::io::Result<()> {
        let Event::LlmCallFinished {
            role,
            model,
            usage,
            cost_usd,
            total_cost_usd,
            duration_ms,
            context_used,
            ..
        } = event
        else {
            return Ok(());
        };
        self.cost = *total_cost_usd;
        let context = context_used
            .map(|u| format!(", context {:.0}%", u * 100.0))
            .unwrap_or_default();
        writeln!(
            out,
            "{} ·   {role} {model}: {} in / {} out tokens{context}, ${cost_usd:.4}, {:.1}s",
            self.prefix(),
            usage.input_tokens,
            usage.output_tokens,
            *duration_ms as f64 / 1000.0
        )?;
        Ok(())
    }

    /// The Critic's verdict and its first reason.
    fn verdict_line(&self, event: &Event, out: &mut Vec<u8>) -> std::io::Result<()> {
        let Event::CriticVerdict {
            approved, reasons, ..
        } = event
        else {
            return Ok(());
        };
        let verdict = if *approved { "approved" } else { "rejected" };
        let first = reasons
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        writeln!(
            out,
            "{} ·   critic {verdict}{}",
            self.prefix(),
            if first.is_empty() {
                String::new()
            } else {
                format!(": {first}")
            }
        )?;
        Ok(())
    }

    /// Chaos's rounds, the Critic's judgement of them, the findings rechecked, the mutation
    /// score.
    fn chaos_lines(&self, event: &Event, out: &mut Vec<u8>) -> std::io::Result<()> {
        match event {
            Event::ChaosSuite {
                round,
                tests,
                failed,
                repairs,
                ..
            } => writeln!(
                out,
                "{} ·   chaos round {round}: {tests} adversarial test{}, {failed} failing{}",
                self.prefix(),
                if *tests == 1 { "" } else { "s" },
                match repairs {
                    0 => String::new(),
                    1 => " (after 1 repair)".into(),
                    n => format!(" (after {n} repairs)"),
                }
            )?,
            Event::ChaosJudged { kept, dropped, .. } => {
                writeln!(
                    out,
                    "{} ·   critic kept {} finding{}{}",
                    self.prefix(),
                    kept.len(),
                    if kept.len() == 1 { "" } else { "s" },
                    if kept.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", kept.join(", "))
                    }
                )?;
                for (test, reason) in dropped {
                    writeln!(
                        out,
                        "{} ·   critic dropped {test}: {}",
                        self.prefix(),
                        one_line(reason)
                    )?;
                }
            }
            Event::ChaosRecheck { fixed, open, .. } => writeln!(
                out,
                "{} ·   chaos findings: {} fixed, {} still failing{}",
                self.prefix(),
                fixed.len(),
                open.len(),
                if open.is_empty() {
                    String::new()
                } else {
                    format!(": {}", open.join(", "))
                }
            )?,
            Event::ChaosMutation {
                tool,
                mutants,
                detected,
                surviving,
                equivalent,
                score,
                strict,
                min_score,
                duration_ms,
                ..
            } => writeln!(
                out,
                "{} ·   mutation ({tool}, {:.1}s): {detected} of {mutants} mutant{} killed; score {score}%{}{}{}, {surviving} surviving",
                self.prefix(),
                *duration_ms as f64 / 1000.0,
                if *mutants == 1 { "" } else { "s" },
                if strict != score {
                    format!(" ({strict}% strict)")
                } else {
                    String::new()
                },
                match min_score {
                    Some(min) if score >= min => format!(" ≥ {min}%"),
                    Some(min) => format!(" < {min}%"),
                    None => String::new(),
                },
                match equivalent {
                    0 => String::new(),
                    n => format!(", {n} equivalent"),
                },
            )?,
            _ => {}
        }
        Ok(())
    }

    /// What the run does beside its steps: a model given up for its fallback, the context the
    /// Librarian packed, what the MemoryVault recalled, what LocalGuard masked (told when a call
    /// carries more than any before it).
    fn aside_lines(&mut self, event: &Event, out: &mut Vec<u8>) -> std::io::Result<()> {
        match event {
            Event::Fallback(r) => writeln!(
                out,
                "{} ·   {} {} failed ({}); falling back to {}",
                self.prefix(),
                r.role,
                r.from,
                one_line(&r.reason),
                r.to
            )?,
            Event::ContextGathered {
                included,
                excluded,
                tokens,
                budget,
                ..
            } => writeln!(
                out,
                "{} ·   context: {} ({tokens} of {budget} tokens{})",
                self.prefix(),
                context_files(included),
                if *excluded > 0 {
                    format!(", {excluded} nearby left out")
                } else {
                    String::new()
                }
            )?,
            Event::MemoryRecalled {
                attempts,
                worked,
                best_similarity,
                ..
            } => writeln!(
                out,
                "{} ·   memory: {attempts} earlier attempt{} at a similar failure ({worked} worked; best similarity {best_similarity:.2})",
                self.prefix(),
                if *attempts == 1 { "" } else { "s" }
            )?,
            Event::Masked { kinds, role, .. } => {
                let total: usize = kinds.values().sum();
                if total > self.masked {
                    self.masked = total;
                    writeln!(
                        out,
                        "{} ·   local guard: the {role}'s call carries {total} value{} masked ({})",
                        self.prefix(),
                        if total == 1 { "" } else { "s" },
                        counts(kinds)
                    )?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn render(&mut self, event: &Event) -> std::io::Result<()> {
        // Each event's lines are built whole, then written at once.
        let mut text = Vec::new();
        let out = &mut text;
        match event {
            Event::SessionStarted { .. } => self.session_lines(event, out)?,
            Event::IterationStarted {
                iteration,
                max_iterations,
            } => {
                self.iteration = *iteration;
                self.max_iterations = *max_iterations;
            }
            Event::PhaseChanged {
                phase: Phase::Baseline,
                ..
            } => writeln!(out, "{} · running the tests as they are", self.prefix())?,
            Event::PhaseChanged { phase, .. } => {
                writeln!(out, "{} · {}", self.prefix(), phase.as_str())?
            }
            Event::LlmCallFinished { .. } => self.call_line(event, out)?,
            Event::ContextHigh {
                role, model, used, ..
            } => writeln!(
                out,
                "warning: the {role}'s prompt used {:.0}% of {model}'s context window (limit 40%); its history is dropped",
                used * 100.0
            )?,
            Event::CriticVerdict { .. } => self.verdict_line(event, out)?,
            Event::TestsFinished { tests, .. } => {
                writeln!(out, "{} ·   tests {}", self.prefix(), tests.summary)?
            }
            Event::TestIntegrity { violations, .. } => writeln!(
                out,
                "{} ·   proposal sent back: it {}",
                self.prefix(),
                violations.join(", ")
            )?,
            Event::ContextReset { .. } => writeln!(out, "{} ·   context reset", self.prefix())?,
            Event::Fallback(_)
            | Event::ContextGathered { .. }
            | Event::MemoryRecalled { .. }
            | Event::Masked { .. } => self.aside_lines(event, out)?,
            Event::Warning { message } => writeln!(out, "warning: {}", one_line(message))?,
            Event::MemoryRecorded { .. } => {}
            Event::Note { message } => writeln!(out, "note: {}", one_line(message))?,
            Event::ProposalAmended { hook, .. } => {
                writeln!(out, "{} ·   proposal amended by {hook}", self.prefix())?
            }
            Event::SuccessVetoed { hook, reasons, .. } => writeln!(
                out,
                "{} ·   success vetoed by {hook}: {}",
                self.prefix(),
                reasons.first().map(String::as_str).unwrap_or("no reason given")
            )?,
            Event::ChaosSuite { .. }
            | Event::ChaosJudged { .. }
            | Event::ChaosRecheck { .. }
            | Event::ChaosMutation { .. } => self.chaos_lines(event, out)?,
            Event::SessionFinished { report } => write_summary(report, out)?,
            // The lines are for a log; the thought stream is for the live views.
            Event::Thought { .. } => {}
            Event::Paused { .. } => writeln!(
                out,
                "{} · paused: the run waits before its next step",
                self.prefix()
            )?,
            Event::Resumed { .. } => writeln!(out, "{} · resumed", self.prefix())?,
            Event::LoopStarted { max_iterations, .. } => {
                self.max_iterations = *max_iterations;
                crate::printers::loop_lines::write(event, "", out)?;
            }
            Event::AgentEnded { total_cost_usd, .. } => {
                self.cost = *total_cost_usd;
                crate::printers::loop_lines::write(event, &self.prefix(), out)?;
            }
            Event::AgentStarted { .. }
            | Event::AgentOutput { .. }
            | Event::Regent { .. }
            | Event::StatusRead { .. }
            | Event::ProgressMeasured { .. }
            | Event::BreakerChanged { .. }
            | Event::LoopFinished { .. } => {
                crate::printers::loop_lines::write(event, &self.prefix(), out)?;
            }
        }
        self.out.write_all(&text)?;
        self.out.flush()
    }
}

/// The files a context adds beside the target, for one line: the first few by name.
fn context_files(included: &[ContextChoice]) -> String {
    // The target is always there; naming it again would only push the others off the line.
    let names: Vec<&str> = included
        .iter()
        .filter(|c| c.distance > 0)
        .map(|c| c.path.as_str())
        .collect();
    const SHOWN: usize = 4;
    match names.len() {
        0 => "the target alone".to_string(),
        n if n <= SHOWN => format!("target + {}", names.join(", ")),
        n => format!(
            "target + {} and {} more",
            names[..SHOWN].join(", "),
            n - SHOWN
        ),
    }
}

#[cfg(test)]
mod context_line_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use ralph_actors::schema::context::ContextRelation;

    use super::*;

    #[test]
    fn a_multi_line_message_keeps_to_one_line() {
        assert_eq!(one_line("plain"), "plain");
        assert_eq!(
            one_line("openai: server error 500:\n  Traceback:\n\n  boom\r\n"),
            "openai: server error 500: ⏎ Traceback: ⏎ boom"
        );
    }

    fn choice(path: &str, distance: u32) -> ContextChoice {
        ContextChoice {
            path: path.into(),
            distance,
            relation: ContextRelation::Imported,
            reason: "imported by target".into(),
        }
    }

    fn line(included: Vec<ContextChoice>, excluded: u32) -> String {
        let mut human = Human::new(Vec::new());
        human
            .print(&Envelope {
                session: "s".into(),
                seq: 1,
                time: Utc::now(),
                event: Event::ContextGathered {
                    iteration: 1,
                    included,
                    excluded,
                    tokens: 900,
                    budget: 8000,
                },
            })
            .unwrap();
        String::from_utf8(human.out).unwrap()
    }

    #[test]
    fn the_context_line_names_the_related_files_and_the_budget() {
        let text = line(vec![choice("src/a.ts", 0), choice("src/b.ts", 1)], 2);
        assert!(
            text.ends_with("context: target + src/b.ts (900 of 8000 tokens, 2 nearby left out)\n"),
            "{text}"
        );
        let many = (1..=6).map(|i| choice(&format!("f{i}.py"), 1)).collect();
        let text = line(many, 0);
        assert!(
            text.ends_with(
                "context: target + f1.py, f2.py, f3.py, f4.py and 2 more (900 of 8000 tokens)\n"
            ),
            "{text}"
        );
        assert!(line(vec![choice("t.py", 0)], 0).contains("context: the target alone"));
    }
}
