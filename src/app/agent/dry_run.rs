//! `agent --dry-run`: each pending spec's plan, shown; nothing runs.

use std::path::Path;

use crate::agent::AgentError;
use crate::app::entry::{agent_dir, Entry, Progress};
use crate::app::plan::shared_tape;
use crate::cli::{AgentArgs, RunArgs};
use crate::error::Result;
use crate::inbox::{Inbox, Record, Status};
use crate::spec::Spec;

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
    let base = RunArgs {
        config: args.config.clone(),
        ..RunArgs::default()
    };
    let overrides = shared_tape(&args.tape)?;
    let system = actix::System::new();
    let mut out = String::new();
    let mut failures = 0;
    system.block_on(async {
        out.push_str(&format!(
            "Dry run: {} pending spec{}\n",
            pending.len(),
            if pending.len() == 1 { "" } else { "s" }
        ));
        for record in &pending {
            let dir = agent_dir(root, &record.id);
            let planned = match Spec::load(&root.join(&record.spec)) {
                Err(e) => Err(e.to_string()),
                Ok(spec) => {
                    let mut progress = Progress::load(&dir).unwrap_or_default();
                    match progress.plan.clone() {
                        Some(plan) => Ok((spec, plan)),
                        None => {
                            let entry = Entry {
                                spec: &spec,
                                root,
                                dir: dir.clone(),
                                base: &base,
                                overrides: &overrides,
                                name: &record.spec,
                            };
                            let plan = entry.plan(None).await;
                            if let Ok(plan) = &plan {
                                progress.plan = Some(plan.clone());
                                let _ = progress.save(&dir);
                            }
                            plan.map(|p| (spec, p))
                        }
                    }
                }
            };
            match planned {
                Ok((spec, plan)) => {
                    let how = if plan.source == "spec" {
                        "from the spec".to_string()
                    } else {
                        format!(
                            "planned by {} for ${:.4}",
                            plan.model.as_deref().unwrap_or("the Librarian"),
                            plan.cost_usd
                        )
                    };
                    out.push_str(&format!(
                        "{}  {}  ({} target{}, {how})\n",
                        record.id,
                        record.spec,
                        plan.targets.len(),
                        if plan.targets.len() == 1 { "" } else { "s" }
                    ));
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
                    let settings = describe(&spec);
                    if !settings.is_empty() {
                        out.push_str(&format!("    settings: {settings}\n"));
                    }
                }
                Err(why) => {
                    failures += 1;
                    out.push_str(&format!(
                        "{}  {}  cannot be planned: {why}\n",
                        record.id, record.spec
                    ));
                }
            }
        }
    });
    print!("{out}");
    Ok(if failures > 0 { 1 } else { 0 })
}

/// A spec's own settings, as `key=value`.
fn describe(spec: &Spec) -> String {
    let f = &spec.front;
    let mut parts = Vec::new();
    if let Some(b) = f.budget {
        parts.push(format!("budget=${b:.2}"));
    }
    if let Some(m) = f.max_iterations {
        parts.push(format!("max_iterations={m}"));
    }
    if let Some(m) = &f.models {
        parts.push(format!("models={}", m.0));
    }
    if let Some(t) = &f.test_command {
        parts.push(format!("test_command={t}"));
    }
    if let Some(l) = &f.language {
        parts.push(format!("language={l}"));
    }
    parts.join(", ")
}
