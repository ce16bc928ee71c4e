//! The end of a run: the report, built from the state, saved and emitted as the last event.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::events::event::Event;
use crate::machine::state::Outcome;
use crate::schema::report::{GuardReport, MemoryReport, Report, Status, Timings};
use crate::schema::state::timestamp;
use crate::supervisor::next_steps::{next_steps, Ending};
use crate::supervisor::run::Run;

/// How long each final write (state, report) may take: a hung disk must not hold the report,
/// which the caller still gets and prints.
pub(super) const FINAL_WRITE: Duration = Duration::from_secs(10);

impl Run {
    pub(super) async fn finish(mut self, outcome: Outcome) -> Report {
        let Outcome {
            status,
            reason,
            exit_code,
        } = outcome;
        self.end_reviews().await;
        self.forget_analysis().await;
        // Calls cancelled with the run charge their reservation as they hear the cancel: let
        // them, so that the charge is in the state and the report.
        self.caller.ledger.calls_settled(FINAL_WRITE / 5).await;
        let wait = self.record_wait();
        self.settle_record(Some(wait)).await;
        if let Some(problem) = self.leave_file(status).await {
            self.warn(problem);
        }
        self.sync_state();
        let wall_ms = self.started.elapsed().as_millis() as u64;
        // Calls run beside calls and beside test runs: the overhead is the time nothing was in
        // flight, not the wall time less the sum of the waits.
        let llm_ms = self.caller.waits.calls_ms();
        let busy_ms = self.caller.waits.busy_ms();
        let test_ms = self.test_ms;
        let t = &mut self.state.timings;
        t.llm_ms += llm_ms;
        t.test_ms += test_ms;
        t.overhead_ms += wall_ms.saturating_sub(busy_ms);
        self.state.elapsed_ms += wall_ms;
        // An interrupted session stays resumable; any other end is final.
        self.state.status = status.as_str().to_string();
        let st = &self.state;
        let l = &st.ledger;
        let steps = next_steps(&Ending {
            status,
            reason: &reason,
            session_id: &st.session_id,
            iterations: st.iteration,
            spent: l.spent,
            last: self.last_run.as_deref(),
            stuck_on: self.stuck_on.as_deref(),
            settings: &self.settings,
        });
        let mut report = Report {
            session_id: st.session_id.clone(),
            status,
            exit_code: exit_code.unwrap_or(status.exit_code()),
            reason,
            target: st.target.clone(),
            test_command: st.test_command.clone(),
            iterations: st.iteration,
            duration_ms: st.elapsed_ms,
            cost_usd: l.spent,
            cost_by_role: l.by_role.clone(),
            cost_by_model: l.by_model.clone(),
            tokens: l.tokens,
            tokens_by_role: l.tokens_by_role.clone(),
            overruns: l.overruns.clone(),
            abandoned_calls: l.abandoned_calls,
            estimated_calls: l.estimated_calls,
            tests_before: st.tests_before.clone(),
            tests_after: st.tests_after.clone(),
            stuck_on: if status == Status::Success {
                None
            } else {
                self.stuck_on.clone()
            },
            context_resets: st.context_resets,
            critic_rejections: st.critic_rejections,
            fix_review: st.fix_review,
            test_integrity_rejections: st.test_integrity_rejections,
            timings: st.timings,
            warnings: st.warnings.clone(),
            notes: st.notes.clone(),
            fallbacks: st.fallbacks.clone(),
            context_use: st
                .context_use
                .iter()
                .map(|(r, u)| (r.to_string(), *u))
                .collect(),
            memory: st.memory.clone(),
            reverts: st.reverts,
            next_steps: steps,
            file_left: st.file_left.clone(),
            adversarial: st.adversarial.clone(),
            promise: self.promise(status),
            local_guard: self.guard_report(),
            started_at: st.started_at.clone(),
            finished_at: timestamp(),
        };
        // The values are needed no more: zeroised now, not when the process gets round to it.
        self.guard.wipe();
        let saved = tokio::time::timeout(FINAL_WRITE, self.store.save_state(&self.state)).await;
        if let Some(why) = failed(saved) {
            report
                .warnings
                .push(format!("could not save the session state: {why}"));
        }
        let saved = tokio::time::timeout(FINAL_WRITE, self.store.save_report(&report)).await;
        if let Some(why) = failed(saved) {
            report
                .warnings
                .push(format!("could not save report.json: {why}"));
        }
        self.events.emit(Event::SessionFinished {
            report: Box::new(report.clone()),
        });
        report
    }
}

impl Run {
    fn guard_report(&self) -> GuardReport {
        GuardReport::of(&self.guard)
    }
}

/// Why a bounded write failed, if it did.
fn failed<E: std::fmt::Display>(
    result: Result<Result<(), E>, tokio::time::error::Elapsed>,
) -> Option<String> {
    match result {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => Some(format!("no answer within {}s", FINAL_WRITE.as_secs())),
    }
}

/// The report of a session that could not run at all (started twice, the Supervisor panicked
/// before its first step).
pub(crate) fn error_report(reason: &str) -> Report {
    Report {
        session_id: String::new(),
        status: Status::Error,
        exit_code: Status::Error.exit_code(),
        reason: reason.into(),
        target: String::new(),
        test_command: String::new(),
        iterations: 0,
        duration_ms: 0,
        cost_usd: 0.0,
        cost_by_role: BTreeMap::new(),
        cost_by_model: BTreeMap::new(),
        tokens: Default::default(),
        tokens_by_role: BTreeMap::new(),
        overruns: Vec::new(),
        abandoned_calls: 0,
        estimated_calls: 0,
        tests_before: None,
        tests_after: None,
        stuck_on: None,
        context_resets: 0,
        critic_rejections: 0,
        fix_review: None,
        test_integrity_rejections: 0,
        timings: Timings::default(),
        warnings: Vec::new(),
        notes: Vec::new(),
        fallbacks: Vec::new(),
        context_use: BTreeMap::new(),
        memory: MemoryReport::default(),
        reverts: 0,
        next_steps: Vec::new(),
        file_left: None,
        adversarial: None,
        promise: Default::default(),
        local_guard: GuardReport::default(),
        started_at: timestamp(),
        finished_at: timestamp(),
    }
}
