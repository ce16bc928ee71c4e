//! Files other programs (or people, or a crash) wrote where ralph-loop reads them: specs,
//! configs, hook imports and gitleaks rules, plugins' answers, recordings, the inbox, and the
//! sessions' event logs the dashboard tails.

use std::path::Path;

use super::input::{file, keep, mkdir, pick, pieces, scratch, text};
use crate::config::hooks::Stage;

/// A spec or a config: the first byte picks a spec's Markdown, `ralph.config.yaml`, a hooks
/// file to import (Claude Code's JSON, Codex's TOML) or a gitleaks rules file.
pub fn spec_config(data: &[u8]) {
    let (choice, body) = pick(data, 5);
    let source = text(body);
    let dir = scratch();
    match choice {
        0 => keep(crate::spec::Spec::parse(
            &source,
            &dir.join("specs/fix-median.md"),
        )),
        1 => keep(crate::config::parse(
            &source,
            &dir.join("ralph.config.yaml"),
        )),
        2 => keep(crate::hooks::import::from_json(
            &source,
            ".claude/settings.json",
        )),
        3 => keep(crate::hooks::import::from_codex_toml(
            &source,
            ".codex/config.toml",
        )),
        _ => keep(ralph_guard::rules::RuleSet::empty().extend_with(".gitleaks.toml", &source)),
    }
}

/// A plugin's stdout at one of the seven stages (the first byte picks it).
pub fn plugin_reply(data: &[u8]) {
    let (choice, body) = pick(data, Stage::ALL.len());
    keep(crate::hooks::stages::read_response(
        &text(body),
        Stage::ALL[choice],
    ));
}

/// A recording given to `--replay`, opened as a tape and as a client.
pub fn recording(data: &[u8]) {
    let path = file("tape.jsonl", data);
    keep(crate::providers::ReplayTape::open(&path));
    keep(crate::providers::ReplayClient::open(&path));
}

/// `.ralph/inbox.jsonl` as a crash, a person or another version left it: locked, read and
/// repaired as every inbox command reads it.
pub fn inbox(data: &[u8]) {
    let root = scratch().join("inbox-project");
    file("inbox-project/.ralph/inbox.jsonl", data);
    let inbox = crate::inbox::Inbox::at(&root);
    if let Ok(locked) = inbox.lock() {
        keep(locked.next(&[], None).map(|r| r.id.clone()));
    }
}

/// A session's event log, grown in `data`'s pieces while the dashboard tails it; then listed,
/// read whole, and its diffs asked for.
pub fn event_log(data: &[u8]) {
    let root = scratch().join("logs-project");
    let dir = root.join(".ralph/session-0f0f0f0f-0000-4000-8000-000000000000");
    mkdir(&dir);
    let log = dir.join(crate::printers::event_log::FILE);
    let _ = std::fs::remove_file(&log);
    let mut reader = crate::views::web::tail::Reader::new(log.clone(), 0);
    for piece in pieces(data) {
        append(&log, &piece);
        keep(reader.read_new());
    }
    while reader.behind() {
        keep(reader.read_new());
    }
    keep(crate::views::web::sessions::list(&root));
    keep(crate::printers::event_log::read(&log));
    keep(crate::printers::event_log::last_seq(&log));
    keep(crate::printers::event_log::last_line(&log));
    keep(crate::views::web::sessions::diff(&root, &dir, 1));
}

/// Appends `data` to `path`, as the run writes its log.
fn append(path: &Path, data: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(data))
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
