//! The human view's lines for the agent loop (`ralph-loop loop`): the agent's thought stream
//! (its text and tools, a line each), how each agent run ended, what was measured, and the
//! Regent's actions, each marked with a shield. The caller gives the line's prefix (time,
//! iteration, spend).

use std::io::Write;

use ralph_actors::events::event::Event;
use ralph_actors::schema::agent::AgentEvent;
use ralph_actors::schema::regent::LoopReport;
use ralph_actors::tracker::status::StatusBlock;

/// The mark of the Regent's lines (the seed's shield).
pub const SHIELD: &str = "🛡";

/// A line of agent text at most this many characters.
const TEXT_MAX: usize = 160;
/// At most this many lines of one text event.
const TEXT_LINES: usize = 3;

/// Writes `event`'s lines when it is one of the loop's; `false` when it is not.
pub fn write(event: &Event, prefix: &str, out: &mut impl Write) -> std::io::Result<bool> {
    match event {
        Event::LoopStarted {
            agent,
            model,
            prompt_file,
            tasks_file,
            max_iterations,
            max_cost_usd,
        } => loop_started(
            agent,
            model.as_deref(),
            prompt_file,
            tasks_file.as_deref(),
            *max_iterations,
            *max_cost_usd,
            out,
        )?,
        Event::AgentStarted { run, agent, .. } => {
            let again = if *run > 1 {
                format!(" (run {run})")
            } else {
                String::new()
            };
            writeln!(out, "{prefix} ▶ {agent} started{again}")?;
        }
        Event::AgentOutput { event, .. } => agent_output(event, prefix, out)?,
        Event::AgentEnded {
            ending,
            exit_code,
            duration_ms,
            cost_usd,
            cost_estimated,
            ..
        } => {
            let how = match (ending.as_str(), exit_code) {
                ("exited", Some(code)) => format!("exited {code}"),
                (other, _) => other.replace('_', " "),
            };
            let estimated = if *cost_estimated { " (estimated)" } else { "" };
            writeln!(
                out,
                "{prefix} ■ agent {how} after {:.1}s, ${cost_usd:.4}{estimated}",
                *duration_ms as f64 / 1000.0
            )?;
        }
        Event::Regent { message, .. } => {
            writeln!(out, "{prefix} {SHIELD} {}", clean(message, 400))?
        }
        Event::StatusRead {
            block,
            indicators,
            malformed,
            ..
        } => status_read(block.as_ref(), *indicators, malformed, prefix, out)?,
        Event::ProgressMeasured {
            files_changed,
            tasks_checked,
            newly_passing,
            progress,
            ..
        } => {
            if *progress {
                let mut parts = vec![format!("{files_changed} files changed")];
                if !tasks_checked.is_empty() {
                    parts.push(format!("checked off {}", tasks_checked.join(", ")));
                }
                if *newly_passing > 0 {
                    parts.push(format!("{newly_passing} tests newly passing"));
                }
                writeln!(out, "{prefix}   progress: {}", parts.join(" · "))?;
            } else {
                writeln!(
                    out,
                    "{prefix}   no progress: no file changed, no task checked off, no test newly passing"
                )?;
            }
        }
        Event::BreakerChanged {
            from, to, reason, ..
        } => writeln!(
            out,
            "{prefix} {SHIELD} breaker {} → {} ({})",
            from.as_str(),
            to.as_str(),
            reason.as_str()
        )?,
        Event::LoopFinished { report } => write_summary(report, out)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// The loop's first lines: its agent, prompt, tasks and limits.
fn loop_started(
    agent: &str,
    model: Option<&str>,
    prompt_file: &str,
    tasks_file: Option<&str>,
    max_iterations: u32,
    max_cost_usd: f64,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let model = model.map(|m| format!(" ({m})")).unwrap_or_default();
    writeln!(out, "ralph-loop loop · agent {agent}{model}")?;
    let tasks = tasks_file
        .map(|t| format!(" · tasks {t}"))
        .unwrap_or_default();
    writeln!(
        out,
        "  prompt {prompt_file}{tasks} · budget ${max_cost_usd:.2}, {max_iterations} iterations"
    )?;
    Ok(())
}

/// What the agent said: its text (up to its status block), a tool it used, an error.
fn agent_output(event: &AgentEvent, prefix: &str, out: &mut impl Write) -> std::io::Result<()> {
    match event {
        AgentEvent::Text { text } => {
            // A status block is shown once read, on a line of its own.
            for line in text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("---RALPH_STATUS---"))
                .filter(|l| !l.is_empty())
                .take(TEXT_LINES)
            {
                writeln!(out, "{prefix}   │ {}", clean(line, TEXT_MAX))?;
            }
        }
        AgentEvent::Tool { name, detail } => writeln!(
            out,
            "{prefix}   ⚙ {} {}",
            clean(name, 40),
            clean(detail, TEXT_MAX)
        )?,
        AgentEvent::Error { message } => {
            writeln!(out, "{prefix}   ✗ {}", clean(message, TEXT_MAX))?
        }
        AgentEvent::Session { .. } | AgentEvent::Usage { .. } | AgentEvent::Result { .. } => {}
    }
    Ok(())
}

/// The status block read from the agent's reply (or why none was), and the completion
/// indicators counted.
fn status_read(
    block: Option<&StatusBlock>,
    indicators: u32,
    malformed: &[String],
    prefix: &str,
    out: &mut impl Write,
) -> std::io::Result<()> {
    for why in malformed {
        writeln!(
            out,
            "warning: a RALPH_STATUS block was ignored: {}",
            clean(why, 200)
        )?;
    }
    match block {
        Some(b) => {
            let tests = b
                .tests_status
                .map(|t| format!(" · tests {}", t.as_str()))
                .unwrap_or_default();
            let advice = b
                .recommendation
                .as_deref()
                .map(|r| format!(" · “{}”", clean(r, 120)))
                .unwrap_or_default();
            writeln!(
                out,
                "{prefix}   status {}{tests} · exit signal {}{advice}",
                b.status.as_str(),
                b.exit_signal
            )?;
        }
        None => writeln!(out, "{prefix}   no RALPH_STATUS block")?,
    }
    if indicators > 0 {
        writeln!(out, "{prefix}   completion indicators: {indicators}")?;
    }
    Ok(())
}

/// The loop's last lines.
pub fn write_summary(report: &LoopReport, out: &mut impl Write) -> std::io::Result<()> {
    let mark = if report.exit_code == 0 { "✔" } else { "✘" };
    let estimated = if report.cost_estimated {
        " (estimated in part)"
    } else {
        ""
    };
    writeln!(
        out,
        "{mark} {}: {}",
        report.status.as_str(),
        clean(&report.reason, 400)
    )?;
    let tokens_estimated = if report.tokens_estimated {
        " (estimated)"
    } else {
        ""
    };
    writeln!(
        out,
        "  {} iterations in {:.1}s · ${:.4}{estimated} · {} in / {} out tokens{tokens_estimated}",
        report.iterations,
        report.duration_ms as f64 / 1000.0,
        report.total_cost_usd,
        report.tokens.input,
        report.tokens.output
    )?;
    let mut parts = Vec::new();
    if let Some(t) = report.tasks {
        parts.push(format!("tasks {} of {} done", t.done, t.total));
    }
    if let Some(t) = &report.tests {
        parts.push(format!("tests {}", t.summary));
    }
    parts.push(format!("breaker {}", report.breaker.state.as_str()));
    writeln!(out, "  {}", parts.join(" · "))?;
    if !report.commits.is_empty() || !report.reverts.is_empty() {
        writeln!(
            out,
            "  commits {} · reverts {}",
            list(&report.commits),
            list(&report.reverts)
        )?;
    }
    if let Some(line) = super::summary::guard_line(&report.local_guard, "in the agent's replies") {
        writeln!(out, "  {line}")?;
    }
    writeln!(
        out,
        "  report .ralph/loop/report.json · state .ralph/regent-state.json"
    )
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// `text` on one line, without control characters (an agent's output must not move the
/// cursor or change colours), cut to `max` characters.
fn clean(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4));
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}
