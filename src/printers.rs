//! Renderings of the one event stream: a live human view on stderr, JSON lines, or the final
//! report as one JSON document. Each printer ends with the `session_finished` event.

use std::io::Write;
use std::time::Instant;

use ralph_actors::events::{Event, Phase};
use ralph_actors::report::Report;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::cli::OutputFormat;

/// Prints events until the session finishes; returns the final report.
pub async fn print(format: OutputFormat, mut rx: UnboundedReceiver<Event>) -> Option<Report> {
    let mut human = Human::new();
    while let Some(event) = rx.recv().await {
        let report = match &event {
            Event::SessionFinished { report } => Some((**report).clone()),
            _ => None,
        };
        // A closed stdout (`| head`) must not end the run: output errors are ignored.
        let _ = match format {
            OutputFormat::Human => human.render(&event, &mut std::io::stderr().lock()),
            OutputFormat::Jsonl => json_line(&event, &mut std::io::stdout().lock()),
            OutputFormat::Json => match &report {
                Some(r) => json_report(r, &mut std::io::stdout().lock()),
                None => Ok(()),
            },
        };
        if report.is_some() {
            return report;
        }
    }
    None
}

pub fn json_line(event: &Event, out: &mut impl Write) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, event)?;
    out.write_all(b"\n")?;
    out.flush()
}

pub fn json_report(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The live view: one line per step, each with the elapsed time, the iteration, and the spend.
pub struct Human {
    started: Instant,
    iteration: u32,
    max_iterations: u32,
    cost: f64,
}

impl Default for Human {
    fn default() -> Self {
        Self::new()
    }
}

impl Human {
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            iteration: 0,
            max_iterations: 0,
            cost: 0.0,
        }
    }

    fn prefix(&self) -> String {
        let t = self.started.elapsed().as_secs_f64();
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

    pub fn render(&mut self, event: &Event, out: &mut impl Write) -> std::io::Result<()> {
        match event {
            Event::SessionStarted {
                session_id,
                target,
                test_command,
                models,
                max_cost_usd,
                max_iterations,
                resumed_from_iteration,
            } => {
                self.max_iterations = *max_iterations;
                self.iteration = *resumed_from_iteration;
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
            }
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
            Event::LlmCallFinished {
                role,
                model,
                usage,
                cost_usd,
                total_cost_usd,
                duration_ms,
                ..
            } => {
                self.cost = *total_cost_usd;
                writeln!(
                    out,
                    "{} ·   {role} {model}: {} in / {} out tokens, ${cost_usd:.4}, {:.1}s",
                    self.prefix(),
                    usage.input_tokens,
                    usage.output_tokens,
                    *duration_ms as f64 / 1000.0
                )?;
            }
            Event::CriticVerdict {
                approved, reasons, ..
            } => {
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
            }
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
            Event::Fallback(r) => writeln!(
                out,
                "{} ·   {} {} failed ({}); falling back to {}",
                self.prefix(),
                r.role,
                r.from,
                r.reason,
                r.to
            )?,
            Event::Warning { message } => writeln!(out, "warning: {message}")?,
            Event::SessionFinished { report } => {
                let mark = if report.exit_code == 0 { "✔" } else { "✘" };
                writeln!(out, "{mark} {}: {}", report.status, report.reason)?;
                let roles: Vec<String> = report
                    .cost_by_role
                    .iter()
                    .map(|(r, c)| format!("{r} ${c:.4}"))
                    .collect();
                writeln!(
                    out,
                    "  {} iterations · {:.1}s · ${:.4} ({}) · {} in / {} out tokens",
                    report.iterations,
                    report.duration_ms as f64 / 1000.0,
                    report.cost_usd,
                    if roles.is_empty() {
                        "no model calls".to_string()
                    } else {
                        roles.join(", ")
                    },
                    report.tokens.input_tokens,
                    report.tokens.output_tokens
                )?;
                if let (Some(b), Some(a)) = (&report.tests_before, &report.tests_after) {
                    writeln!(out, "  tests before: {} · after: {}", b.summary, a.summary)?;
                }
                writeln!(
                    out,
                    "  report: .ralph/session-{}/report.json",
                    report.session_id
                )?;
            }
        }
        out.flush()
    }
}
