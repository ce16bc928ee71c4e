//! `agent --dry-run`: each pending spec's plan, shown; nothing runs.

use std::path::Path;

use crate::agent::AgentError;
use crate::cli::{AgentArgs, RunArgs};
use crate::error::Result;
use crate::inbox::{Inbox, Record, Status};
use crate::launch::{Launch, Rule};
use crate::process::groups::ProcessGroups;
use crate::run::plan::{shared_tape, Overrides};
use crate::spec::planner::Plan;
use crate::spec::Spec;
use crate::work::entry::{agent_dir, Entry, Progress, Unplanned};

/// `agent --dry-run`: each pending spec's plan, made (and kept for the real run) where it has
/// none; nothing runs, nothing in the inbox or the tree changes.
pub(super) fn dry_run(root: &Path, args: &AgentArgs) -> Result<i32> {
    let inbox = Inbox::at(root).lock().map_err(AgentError::from)?;
    if let Some(torn) = &inbox.torn {
        eprintln!("warning: {torn}");
    }
    let pending: Vec<Record> = inbox
        .records
        .iter()
        .filter(|r| r.status == Status::Pending)
        .cloned()
        .collect();
    drop(inbox);
    let base = Entry::base_args(args.config.clone(), args.quick);
    let overrides = shared_tape(&args.tape)?;
    let mut out = format!(
        "Dry run: {} pending spec{}\n",
        pending.len(),
        if pending.len() == 1 { "" } else { "s" }
    );
    let mut failures = 0;
    // Nothing it does needs stopping with care: the signals' default actions stand.
    let launch = Launch::new(Rule::Default, ProcessGroups::new());
    launch.run(|_| async {
        for record in &pending {
            let planned = planned(root, record, &base, &overrides).await;
            failures += usize::from(planned.is_err());
            out.push_str(&shown(record, planned));
        }
        Ok(())
    })?;
    print!("{out}");
    Ok(if failures > 0 { 1 } else { 0 })
}

/// The spec of `record` and its plan: the one kept from an earlier dry run or agent, else made
/// now (and kept).
async fn planned(
    root: &Path,
    record: &Record,
    base: &RunArgs,
    overrides: &Overrides,
) -> Result<(Spec, Plan), Unplanned> {
    let dir = agent_dir(root, &record.id);
    let spec = Spec::load(&root.join(&record.spec))?;
    let mut progress = Progress::load(&dir).unwrap_or_default();
    if let Some(plan) = progress.plan.clone() {
        return Ok((spec, plan));
    }
    let entry = Entry {
        spec: &spec,
        root,
        dir: dir.clone(),
        base,
        overrides,
        name: &record.spec,
    };
    let plan = entry.plan(None).await?;
    progress.plan = Some(plan.clone());
    let _ = progress.save(&dir);
    Ok((spec, plan))
}

/// How the dry run shows `record`'s plan, or why it has none.
fn shown(record: &Record, planned: Result<(Spec, Plan), Unplanned>) -> String {
    let (spec, plan) = match planned {
        Ok(planned) => planned,
        Err(why) => return format!("{}  {}  cannot be planned: {why}\n", record.id, record.spec),
    };
    let how = if plan.source == "spec" {
        "from the spec".to_string()
    } else {
        format!(
            "planned by {} for ${:.4}",
            plan.model.as_deref().unwrap_or("the Librarian"),
            plan.cost_usd
        )
    };
    let mut out = format!(
        "{}  {}  ({} target{}, {how})\n",
        record.id,
        record.spec,
        plan.targets.len(),
        if plan.targets.len() == 1 { "" } else { "s" }
    );
    for t in &plan.targets {
        match &t.test_file {
            Some(test) => out.push_str(&format!(
                "    {}  (tests: {})\n",
                t.file.display(),
                test.display()
            )),
            None => out.push_str(&format!("    {}\n", t.file.display())),
        }
    }
    if !plan.reason.is_empty() {
        out.push_str(&format!("    why: {}\n", plan.reason));
    }
    let settings = spec.front.settings();
    if !settings.is_empty() {
        out.push_str(&format!("    settings: {settings}\n"));
    }
    out
}
