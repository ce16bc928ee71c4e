//! `ralph-loop replay`: a run played back from its `events.jsonl`, in the TUI, the web
//! dashboard or lines, each event after its recorded wait divided by `--speed`
//! ([`crate::views::pace`]); or exported as one HTML page or an asciicast v3 recording. Nothing
//! of the run is changed: the replay reads its folder, and writes only what it is asked to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI32;
use std::sync::Arc;

use ralph_actors::events::event::{Envelope, Event};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::cli::{OutputFormat, ReplayArgs, Ui};
use crate::error::{Error, Result, UsageError};
use crate::printers::{self, event_log, Printer};
use crate::process::groups::ProcessGroups;
use crate::runner::detect;
use crate::session::{SessionError, RALPH_DIR};
use crate::views::{self, pace, Chosen};

pub fn run(args: ReplayArgs) -> Result<i32> {
    if !(args.speed >= 0.0 && args.speed.is_finite()) {
        return Err(UsageError::flag(
            "--speed",
            format!("--speed is 0 (no waiting) or more, not {}", args.speed),
        )
        .into());
    }
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let root = detect::project_root(&cwd);
    let (id, dir) = find(&root, args.session.as_deref())?;
    let log = dir.join(event_log::FILE);
    let (events, unread) = event_log::read(&log)
        .map_err(|e| Error::io(format!("cannot read {}", log.display()), e))?;
    if events.is_empty() {
        return Err(Error::Internal(format!(
            "{} holds no events to play",
            log.display()
        )));
    }
    if unread > 0 {
        eprintln!(
            "note: {unread} line(s) of {} do not read (written as the run was killed) and are left out",
            log.display()
        );
    }
    if let Some(path) = &args.export {
        return export(&root, &id, &dir, &events, args.speed, path);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start the replay's runtime", e))?;
    let asked = args.view.ui.unwrap_or_default();
    if asked == Ui::Web {
        return runtime.block_on(web(&root, &id, args.speed, args.view.ui_bind));
    }
    match views::choose(asked, true) {
        Chosen::Tui => runtime.block_on(tui(&dir, &events, args.speed)),
        Chosen::Lines { why_not_tui } => {
            if let Some(why) = why_not_tui {
                eprintln!("note: {why}");
            }
            let mut printer = printers::for_format(OutputFormat::Human);
            runtime.block_on(play(
                &events,
                args.speed,
                printer.as_mut(),
                None,
                CancellationToken::new(),
            ));
            Ok(0)
        }
        Chosen::Web => runtime.block_on(web(&root, &id, args.speed, args.view.ui_bind)),
    }
}

/// The run `want` names (its folder's name, or the start of its id), or the most recent: its
/// folder's name and path.
fn find(root: &Path, want: Option<&str>) -> Result<(String, PathBuf)> {
    let ralph = root.join(RALPH_DIR);
    let listed = views::web::sessions::list(root);
    if listed.is_empty() {
        return Err(SessionError::NoSessions(ralph).into());
    }
    let chosen = match want {
        None => listed[0].id.clone(),
        Some(want) => {
            let mut matching = listed.iter().filter(|l| {
                l.id == want
                    || l.id.starts_with(want)
                    || l.id
                        .split_once('-')
                        .is_some_and(|(_, uuid)| uuid.starts_with(want))
            });
            match (matching.next(), matching.count()) {
                (None, _) => {
                    return Err(SessionError::NoMatch {
                        want: want.to_string(),
                        dir: ralph,
                    }
                    .into())
                }
                (Some(one), 0) => one.id.clone(),
                (Some(_), more) => {
                    return Err(SessionError::Ambiguous {
                        want: want.to_string(),
                        count: more + 1,
                    }
                    .into())
                }
            }
        }
    };
    let dir = ralph.join(&chosen);
    Ok((chosen, dir))
}

/// Prints `events` one after another at `speed`, holding while `pause` is `true`, until `stop`.
async fn play(
    events: &[Envelope],
    speed: f64,
    printer: &mut dyn Printer,
    mut pause: Option<watch::Receiver<bool>>,
    stop: CancellationToken,
) {
    let mut before = None;
    for event in events {
        let wait = pace::gap(before, Some(event.time), speed);
        before = Some(event.time);
        // Events of one instant (and all of them at speed 0) reach the view together.
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => return,
            }
        }
        if let Some(pause) = pause.as_mut() {
            while *pause.borrow_and_update() {
                tokio::select! {
                    changed = pause.changed() => if changed.is_err() { break },
                    _ = stop.cancelled() => return,
                }
            }
        }
        // A closed stdout (`| head`) ends nothing.
        let _ = printer.print(event);
    }
}

/// The replay in the TUI: `p` pauses it, `a` stops it, `q` quits.
async fn tui(dir: &Path, events: &[Envelope], speed: f64) -> Result<i32> {
    let (mut feed, _asker, inbox) = views::tui::channels();
    let (pause_tx, pause_rx) = watch::channel(false);
    let stop = CancellationToken::new();
    let handles = views::tui::Handles {
        pause: Some(pause_tx),
        cancel: stop.clone(),
        stop_signal: Arc::new(AtomicI32::new(0)),
        groups: ProcessGroups::new(),
        stop_means: "the replay stops here (the run it shows is not touched)",
        picker: None,
        skip: None,
    };
    let (target, original) = fix_files(dir);
    let place = views::tui::Place {
        dir: dir.to_path_buf(),
        target,
        original,
        replayed: true,
    };
    let player = async move {
        play(events, speed, &mut feed, Some(pause_rx), stop).await;
        // The feed closes: the view shows the end and waits for `q`.
        drop(feed);
    };
    let (shown, ()) = tokio::join!(views::tui::run(inbox, handles, place), player);
    shown.map_err(|e| Error::io("the terminal view failed", e))?;
    Ok(0)
}

/// A fix session's file as its last checkpoint kept it, and as it was: the view's diff.
fn fix_files(dir: &Path) -> (Option<PathBuf>, Option<PathBuf>) {
    let original = std::fs::read_dir(dir.join("original"))
        .ok()
        .and_then(|mut entries| entries.next())
        .and_then(|e| e.ok())
        .map(|e| e.path());
    let last = std::fs::read_dir(dir.join("checkpoints"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n: u32 = e
                .file_name()
                .to_string_lossy()
                .strip_prefix("iteration-")?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, path)| path);
    match (last, original) {
        (Some(last), Some(original)) => (Some(last), Some(original)),
        _ => (None, None),
    }
}

/// The replay in the dashboard: its URL plays the run at `speed`; until Ctrl+C.
async fn web(root: &Path, id: &str, speed: f64, bind: Option<std::net::SocketAddr>) -> Result<i32> {
    let dashboard = crate::launch::view::open_dashboard(root, bind).await?;
    println!(
        "replay of {id}: {}&speed={speed}\nCtrl+C stops it",
        dashboard.url_for(id)
    );
    crate::app::dashboard::serve_until_signal(dashboard).await
}

/// Writes the run to `path`: `.html` (the page, standing alone) or `.cast` (asciicast v3).
fn export(
    root: &Path,
    id: &str,
    dir: &Path,
    events: &[Envelope],
    speed: f64,
    path: &Path,
) -> Result<i32> {
    let kind = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let text = match kind.as_deref() {
        Some("html" | "htm") => {
            let iterations = events.iter().filter_map(|e| match &e.event {
                Event::IterationStarted { iteration, .. } => Some(*iteration),
                _ => None,
            });
            let diffs: BTreeMap<u32, String> = iterations
                .filter_map(|n| Some((n, views::web::sessions::diff(root, dir, n).ok()?)))
                .collect();
            views::web::page::export(id, events, &diffs)
        }
        Some("cast") => views::tui::cast::record(events, speed, &format!("ralph-loop {id}"))
            .map_err(|e| Error::io("cannot draw the recording", e))?,
        _ => {
            return Err(UsageError::flag(
                "--export",
                format!(
                    "--export writes a .html page or a .cast recording, not {}",
                    path.display()
                ),
            )
            .into())
        }
    };
    std::fs::write(path, text)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    println!("{id} exported to {}", path.display());
    Ok(0)
}
