//! The human summary of a finished session: its outcome, cost, tests, memory and report path
//! (the live view's last lines, and `ralph-loop status`), and the one-line forms the live view
//! shares with it.

use std::io::Write;

use ralph_actors::schema::adversarial::{AdversarialReport, ChangedCoverage};
use ralph_actors::schema::report::{
    FileLeft, GuardReport, MemoryReport, MemoryStatus, OnFailure, Report,
};

/// `SECRET_AWS_ACCESS_KEY_ID 1, PII_EMAIL 2`.
pub(super) fn counts(kinds: &std::collections::BTreeMap<String, usize>) -> String {
    kinds
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What LocalGuard masked, when it masked anything: kinds and counts, never values; `back` says
/// where its placeholders were put back.
pub(super) fn guard_line(g: &GuardReport, back: &str) -> Option<String> {
    let total: usize = g.masked.values().sum();
    (total > 0).then(|| {
        format!(
            "local guard: {total} value{} masked ({}), {} put back {back}",
            if total == 1 { "" } else { "s" },
            counts(&g.masked),
            g.restored
        )
    })
}

/// The summary of a finished session: its outcome, cost, tests, memory and report path (the
/// live view's last lines, and `ralph-loop status`).
pub fn write_summary(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let mark = if report.exit_code == 0 { "✔" } else { "✘" };
    writeln!(out, "{mark} {}: {}", report.status, report.reason)?;
    let roles: Vec<String> = report
        .cost_by_role
        .iter()
        .map(|(r, c)| format!("{r} ${c:.4}"))
        .collect();
    writeln!(
        out,
        "  {} iteration{} · {:.1}s · ${:.4} ({}) · {} in / {} out tokens",
        report.iterations,
        if report.iterations == 1 { "" } else { "s" },
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
    if !report.context_use.is_empty() {
        let uses: Vec<String> = report
            .context_use
            .iter()
            .map(|(r, u)| format!("{r} {:.1}%", u * 100.0))
            .collect();
        writeln!(
            out,
            "  peak context use: {} · context resets: {}",
            uses.join(", "),
            report.context_resets
        )?;
    }
    write_memory(&report.memory, out)?;
    if let Some(a) = &report.adversarial {
        write_chaos(a, out)?;
    }
    if let Some(c) = report
        .adversarial
        .as_ref()
        .and_then(|a| a.coverage.as_ref())
    {
        write_coverage(c, out)?;
    }
    if !report.promise.checks.is_empty() {
        writeln!(out, "  {}", report.promise.summary())?;
    }
    if let Some(line) = guard_line(&report.local_guard, "in files") {
        writeln!(out, "  {line}")?;
    }
    if let Some(left) = &report.file_left {
        write_file_left(report, left, out)?;
    }
    for (i, step) in report.next_steps.iter().enumerate() {
        let label = if i == 0 { "next:" } else { "     " };
        writeln!(out, "  {label} {}", one_line(step))?;
    }
    writeln!(
        out,
        "  report: .ralph/session-{}/report.json",
        report.session_id
    )?;
    out.flush()
}

/// What the MemoryVault recalled and recorded, or why it was not there.
fn write_memory(m: &MemoryReport, out: &mut impl Write) -> std::io::Result<()> {
    match m.status {
        MemoryStatus::On | MemoryStatus::Failed => writeln!(
            out,
            "  memory: {} recalled in {} iteration{}, {} recorded{}",
            m.recalled,
            m.recalls,
            if m.recalls == 1 { "" } else { "s" },
            m.recorded,
            m.reason
                .as_ref()
                .map(|r| format!(" (stopped: {r})"))
                .unwrap_or_default()
        )?,
        MemoryStatus::Unavailable => writeln!(
            out,
            "  memory: unavailable ({})",
            m.reason.as_deref().unwrap_or("unknown")
        )?,
        MemoryStatus::Off => {}
    }
    Ok(())
}

/// Chaos's rounds and findings, and the mutation score when one was measured.
fn write_chaos(a: &AdversarialReport, out: &mut impl Write) -> std::io::Result<()> {
    let open = a.open().count();
    writeln!(
        out,
        "  chaos: {} round{}, {} adversarial test{} written, {} finding{} ({} fixed, {open} open), {} dropped by the critic",
        a.rounds,
        if a.rounds == 1 { "" } else { "s" },
        a.tests_generated,
        if a.tests_generated == 1 { "" } else { "s" },
        a.failures_found,
        if a.failures_found == 1 { "" } else { "s" },
        a.failures_fixed,
        a.tests_rejected
    )?;
    if let Some(m) = &a.mutation {
        writeln!(
            out,
            "  mutation: {}% ({}% strict) by {}, {} surviving mutant{}{}",
            m.scores.operational,
            m.scores.strict,
            m.tool,
            a.surviving_mutants.len(),
            if a.surviving_mutants.len() == 1 {
                ""
            } else {
                "s"
            },
            m.report_path
                .as_ref()
                .map(|p| format!(" · {p}"))
                .unwrap_or_default()
        )?;
    }
    Ok(())
}

/// How much of the changed lines the tests cover, against the least asked.
fn write_coverage(c: &ChangedCoverage, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "  coverage: {}% of {} changed line{} by {} (at least {}% asked){}",
        c.pct,
        c.coverable,
        if c.coverable == 1 { "" } else { "s" },
        c.tool,
        c.min,
        match c.uncovered.len() {
            0 => String::new(),
            n => format!(", {n} no test runs"),
        }
    )?;
    Ok(())
}

/// For a run that did not succeed: what the target holds now, and where the original is.
fn write_file_left(report: &Report, left: &FileLeft, out: &mut impl Write) -> std::io::Result<()> {
    let state = match (left.policy, left.iteration) {
        (_, Some(0)) => "the original".to_string(),
        (OnFailure::Best, Some(n)) => format!("the best state reached, iteration {n}'s version"),
        (_, Some(n)) => format!("iteration {n}'s version"),
        (_, None) => "the last proposal, untested".to_string(),
    };
    let tests = left
        .tests
        .as_ref()
        .map(|t| format!(" ({})", t.summary))
        .unwrap_or_default();
    let undone = match report.reverts {
        0 => String::new(),
        1 => " · 1 worse proposal undone".to_string(),
        n => format!(" · {n} worse proposals undone"),
    };
    let name = std::path::Path::new(&report.target)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    writeln!(
        out,
        "  file: {} holds {state}{tests}{undone} (on_failure: {}); the original is in .ralph/session-{}/original/{name}",
        report.target,
        left.policy.as_str(),
        report.session_id
    )
}

/// A message that may hold line breaks (a server's multi-line error) on one line of the live
/// view: its lines joined, runs of blanks squeezed.
pub(super) fn one_line(message: &str) -> std::borrow::Cow<'_, str> {
    if !message.contains(['\n', '\r']) {
        return message.into();
    }
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ⏎ ")
        .into()
}
