//! `ralph-loop inbox` and `ralph-loop query inbox`: the queue of specs agent mode works
//! through, as people and scripts see it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::{InboxAction, InboxArgs, QueryArgs, QueryWhat};
use crate::error::{Error, Result};
use crate::inbox::{ago, relative_spec, Inbox, InboxError, Locked, Record, Status};
use crate::runner::detect;
use crate::spec::Spec;

fn here() -> Result<(PathBuf, PathBuf)> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let root = detect::project_root(&cwd);
    Ok((cwd, root))
}

/// Locks the inbox, saying on stderr any torn line found and set aside.
fn open(root: &Path) -> Result<Locked> {
    let mut locked = Inbox::at(root).lock()?;
    if let Some(torn) = locked.torn.take() {
        eprintln!("warning: {torn}");
    }
    Ok(locked)
}

/// `ralph-loop inbox [add|list|remove|clear]`
pub fn inbox(args: InboxArgs) -> Result<i32> {
    let (cwd, root) = here()?;
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock, text: String| {
        let _ = writeln!(out, "{text}");
    };
    match args.action.unwrap_or(InboxAction::List) {
        InboxAction::Add { specs } => {
            // Every spec is checked before any is queued: all or none.
            let mut names = Vec::new();
            for spec in &specs {
                Spec::load(&cwd.join(spec))?;
                names.push(relative_spec(spec, &root, &cwd));
            }
            let mut inbox = open(&root)?;
            for record in inbox.add(&names)? {
                say(&mut out, format!("Queued: {} {}", record.id, record.spec));
            }
        }
        InboxAction::List => {
            let inbox = open(&root)?;
            let _ = out.write_all(list(&inbox.records, chrono::Utc::now()).as_bytes());
        }
        InboxAction::Remove { what } => {
            let mut inbox = open(&root)?;
            let matched = inbox.matching(&what, &root, &cwd);
            if matched.is_empty() {
                return Err(InboxError::NoMatch(what).into());
            }
            if let Some(&i) = matched
                .iter()
                .find(|&&i| inbox.records[i].status == Status::Active)
            {
                let r = &inbox.records[i];
                return Err(InboxError::Active {
                    id: r.id.clone(),
                    spec: r.spec.clone(),
                }
                .into());
            }
            let removed: Vec<Record> = matched
                .iter()
                .rev()
                .map(|&i| inbox.records.remove(i))
                .collect();
            inbox.save()?;
            for r in removed.iter().rev() {
                say(&mut out, format!("Removed: {} {}", r.id, r.spec));
            }
        }
        InboxAction::Clear => {
            let mut inbox = open(&root)?;
            let before = inbox.records.len();
            inbox.records.retain(|r| r.status != Status::Pending);
            let cleared = before - inbox.records.len();
            inbox.save()?;
            say(
                &mut out,
                format!(
                    "Cleared {cleared} pending spec{}",
                    if cleared == 1 { "" } else { "s" }
                ),
            );
        }
    }
    Ok(0)
}

/// The seed's listing: a header, then one line per record with its relative time.
pub fn list(records: &[Record], now: chrono::DateTime<chrono::Utc>) -> String {
    let mut text = format!(
        "Inbox ({} spec{}):\n",
        records.len(),
        if records.len() == 1 { "" } else { "s" }
    );
    let width = records.iter().map(|r| r.spec.len()).max().unwrap_or(0);
    for r in records {
        let when = match r.status {
            Status::Pending => format!("added {}", ago(&r.added_at, now)),
            Status::Active => format!(
                "started {}",
                ago(r.started_at.as_deref().unwrap_or(&r.added_at), now)
            ),
            Status::Done => format!(
                "done {}",
                ago(r.completed_at.as_deref().unwrap_or(&r.added_at), now)
            ),
            Status::Failed => format!(
                "failed {}",
                ago(r.completed_at.as_deref().unwrap_or(&r.added_at), now)
            ),
        };
        text.push_str(&format!(
            "  {}  {:<8}  {:<width$}  ({when})\n",
            r.id,
            r.status.as_str(),
            r.spec
        ));
    }
    text
}

/// `ralph-loop query inbox`
pub fn query(args: QueryArgs) -> Result<i32> {
    let (_, root) = here()?;
    match args.what {
        QueryWhat::Inbox => {
            let inbox = open(&root)?;
            let json = serde_json::to_string_pretty(&inbox.records)
                .map_err(|e| Error::Internal(format!("cannot encode the inbox: {e}")))?;
            let _ = writeln!(std::io::stdout().lock(), "{json}");
        }
    }
    Ok(0)
}
