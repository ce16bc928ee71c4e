//! `ralph-loop guard scan PATH...`: what LocalGuard would mask, with the config's rules,
//! patterns, kinds and allowlist, so a user can tune them before trusting a provider with the
//! code. Exits 1 when anything is found (a pre-commit check), 0 when not.

use std::io::Write;

use crate::cli::{GuardAction, GuardArgs};
use crate::config;
use crate::error::{Error, Result};
use crate::guard::scan::scan;

pub fn run(args: GuardArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let (config, _) = config::load_discovered(args.config.as_deref(), &cwd)?;
    let guard = crate::guard::build(&config.local_guard)?;
    let GuardAction::Scan { paths } = args.action;
    let paths = if paths.is_empty() {
        vec![cwd.clone()]
    } else {
        paths
    };
    for path in &paths {
        if !path.exists() {
            return Err(crate::error::UsageError::FileNotFound {
                what: "path to scan",
                path: path.clone(),
            }
            .into());
        }
    }
    let outcome = scan(guard.detector(), &paths, &cwd);
    let mut out = std::io::stdout().lock();
    if args.json {
        let _ = serde_json::to_writer_pretty(&mut out, &outcome);
        let _ = writeln!(out);
    } else {
        for h in &outcome.hits {
            let _ = writeln!(
                out,
                "{}:{}:{}  {}  {}",
                h.path, h.line, h.column, h.kind, h.preview
            );
        }
        let found = outcome.hits.len();
        let files: std::collections::BTreeSet<&str> =
            outcome.hits.iter().map(|h| h.path.as_str()).collect();
        let mut summary = format!(
            "{found} value{} to mask in {} file{} ({} scanned",
            plural(found),
            files.len(),
            plural(files.len()),
            outcome.files
        );
        if outcome.skipped > 0 {
            summary.push_str(&format!(", {} binary or too large", outcome.skipped));
        }
        if outcome.allowlisted > 0 {
            summary.push_str(&format!(", {} allowlisted", outcome.allowlisted));
        }
        summary.push(')');
        let _ = writeln!(out, "{summary}");
    }
    Ok(if outcome.hits.is_empty() { 0 } else { 1 })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
