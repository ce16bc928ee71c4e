//! `batch-report.json`: each entry's status, iterations, cost and time, and the totals; the
//! batch's status is its entries' worst, by [`rank`].

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::agent::human_duration;
use crate::cli::{BatchArgs, BatchOutput};
use crate::work::entry::SKIPPED_BY_USER;

/// One entry, as the batch report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryReport {
    /// The spec's path, or the file's, relative to the project root.
    pub name: String,
    /// `spec` or `file`.
    pub kind: String,
    pub targets: Vec<String>,
    /// `success`, a run's status where it stopped (`max_iterations`, `entropy_detected`,
    /// `budget_exceeded`, `error`, `interrupted`), or `skipped` (the total budget was spent
    /// before it started; counted as `budget_exceeded`).
    pub status: String,
    pub iterations: u32,
    pub cost_usd: f64,
    pub duration_ms: u64,
    /// Its sessions (`.ralph/session-<id>/`, each with its own report), in order.
    pub sessions: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What its `pre_task` and `post_task` hooks reported (failures that did not stop it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<String>,
}

/// The status of an entry a `pre_task` hook skipped (or that a task hook's `abort_loop` kept
/// from starting): the batch did as its hooks said, so it does not fail the batch.
pub const SKIPPED_BY_HOOK: &str = "skipped_by_hook";

/// The sums over every entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub entries: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub skipped: usize,
    pub iterations: u32,
    pub cost_usd: f64,
    /// The entries' own times added up.
    pub run_ms: u64,
    /// From the batch's start to its end.
    pub wall_ms: u64,
}

/// The whole batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchReport {
    pub batch_id: String,
    /// The worst status of any entry.
    pub status: String,
    pub exit_code: i32,
    pub parallel: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_budget_usd: Option<f64>,
    pub entries: Vec<EntryReport>,
    /// Why a task hook (`abort_loop`) stopped the batch, when one did: the batch then fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by_hook: Option<String>,
    pub totals: Totals,
    pub started_at: String,
    pub finished_at: String,
}

/// How bad a status is, best first: the batch takes its worst entry's status and exit code.
/// success < max_iterations < entropy_detected < budget_exceeded (and skipped) < error <
/// interrupted.
pub fn rank(status: &str) -> (u8, i32) {
    match status {
        "success" | SKIPPED_BY_HOOK | SKIPPED_BY_USER => (0, 0),
        "max_iterations" => (1, 4),
        "entropy_detected" => (2, 5),
        "budget_exceeded" | "skipped" => (3, 3),
        "interrupted" => (5, 130),
        _ => (4, 1),
    }
}

impl BatchReport {
    /// The report of batch `id` run with `args`: its entries and why a task hook stopped it
    /// (`ran`), closed as [`BatchReport::close`] does; `started` when (as an instant and as
    /// RFC 3339).
    pub(crate) fn closed(
        id: String,
        args: &BatchArgs,
        (entries, stopped_by_hook): (Vec<EntryReport>, Option<String>),
        (started, started_at): (std::time::Instant, String),
    ) -> Self {
        let mut report = BatchReport {
            batch_id: id,
            status: String::new(),
            exit_code: 0,
            parallel: args.parallel,
            total_budget_usd: args.total_budget,
            entries,
            stopped_by_hook,
            totals: Default::default(),
            started_at,
            finished_at: crate::inbox::now(),
        };
        report.close(started.elapsed());
        report
    }

    /// Fills the status, exit code and totals from the entries.
    pub fn close(&mut self, wall: Duration) {
        let worst = self
            .entries
            .iter()
            .map(|e| e.status.as_str())
            .max_by_key(|s| rank(s).0)
            .unwrap_or("success");
        self.status = match worst {
            "skipped" => "budget_exceeded",
            SKIPPED_BY_HOOK | SKIPPED_BY_USER => "success",
            other => other,
        }
        .to_string();
        self.exit_code = rank(worst).1;
        if self.stopped_by_hook.is_some() && self.exit_code == 0 {
            self.status = "error".to_string();
            self.exit_code = rank("error").1;
        }
        let e = &self.entries;
        self.totals = Totals {
            entries: e.len(),
            succeeded: e.iter().filter(|e| e.status == "success").count(),
            skipped: e
                .iter()
                .filter(|e| {
                    matches!(
                        e.status.as_str(),
                        "skipped" | SKIPPED_BY_HOOK | SKIPPED_BY_USER
                    )
                })
                .count(),
            failed: e
                .iter()
                .filter(|e| {
                    !matches!(
                        e.status.as_str(),
                        "success" | "skipped" | SKIPPED_BY_HOOK | SKIPPED_BY_USER
                    )
                })
                .count(),
            iterations: e.iter().map(|e| e.iterations).sum(),
            cost_usd: e.iter().map(|e| e.cost_usd).sum(),
            run_ms: e.iter().map(|e| e.duration_ms).sum(),
            wall_ms: wall.as_millis() as u64,
        };
    }

    /// Writes the report to `dir/batch-report.json` and shows it as `output` says: the summary
    /// on stderr (naming the file relative to `cwd`), or the report on stdout. The exit code.
    pub(crate) fn publish(
        &self,
        dir: &Path,
        cwd: &Path,
        output: BatchOutput,
    ) -> crate::error::Result<i32> {
        use crate::error::Error;
        let path = dir.join("batch-report.json");
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Internal(format!("cannot encode the batch report: {e}")))?;
        crate::fsutil::write_atomic(&path, &json)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        let shown = path.strip_prefix(cwd).unwrap_or(&path);
        match output {
            BatchOutput::Human => {
                let _ = self.write_summary(shown, &mut std::io::stderr().lock());
            }
            BatchOutput::Json => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(&json).and_then(|()| writeln!(out));
            }
        }
        Ok(self.exit_code)
    }

    /// The summary a person reads at the end.
    pub fn write_summary(&self, report: &Path, out: &mut impl Write) -> std::io::Result<()> {
        for e in &self.entries {
            let mark = if e.status == "success" { "✔" } else { "✘" };
            write!(
                out,
                "{mark} {}: {}, {} iteration{}, ${:.4}, {}",
                e.name,
                e.status,
                e.iterations,
                if e.iterations == 1 { "" } else { "s" },
                e.cost_usd,
                human_duration(Duration::from_millis(e.duration_ms))
            )?;
            if e.status != "success" && !e.reason.is_empty() {
                write!(out, " ({})", e.reason)?;
            }
            writeln!(out)?;
        }
        let t = &self.totals;
        writeln!(
            out,
            "batch {}: {} of {} entries succeeded ({} failed, {} skipped), {} iterations, ${:.4}, {} wall",
            self.status,
            t.succeeded,
            t.entries,
            t.failed,
            t.skipped,
            t.iterations,
            t.cost_usd,
            human_duration(Duration::from_millis(t.wall_ms))
        )?;
        writeln!(out, "report: {}", report.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(status: &str) -> EntryReport {
        EntryReport {
            name: "a.py".into(),
            kind: "file".into(),
            targets: vec!["a.py".into()],
            status: status.into(),
            iterations: 2,
            cost_usd: 0.5,
            duration_ms: 1000,
            sessions: Vec::new(),
            reason: String::new(),
            hooks: Vec::new(),
        }
    }

    #[test]
    fn the_batch_takes_its_worst_entry_s_status() {
        let mut report = BatchReport {
            batch_id: "b".into(),
            status: String::new(),
            exit_code: 0,
            parallel: 2,
            total_budget_usd: None,
            entries: vec![entry("success"), entry("max_iterations"), entry("skipped")],
            stopped_by_hook: None,
            totals: Totals::default(),
            started_at: String::new(),
            finished_at: String::new(),
        };
        report.close(Duration::from_secs(3));
        assert_eq!(
            (report.status.as_str(), report.exit_code),
            ("budget_exceeded", 3)
        );
        assert_eq!(report.totals.succeeded, 1);
        assert_eq!(report.totals.failed, 1);
        assert_eq!(report.totals.skipped, 1);
        assert_eq!(report.totals.iterations, 6);
        report.entries = vec![entry("success"), entry("success")];
        report.close(Duration::from_secs(3));
        assert_eq!((report.status.as_str(), report.exit_code), ("success", 0));
        report.entries.push(entry("interrupted"));
        report.close(Duration::from_secs(3));
        assert_eq!(report.exit_code, 130);
    }
}
