//! `ralph-loop replay`: a run played back from its `events.jsonl`, in the TUI, the web
//! dashboard or lines, each event after its recorded wait divided by `--speed`
//! ([`crate::views::pace`]); or exported as one HTML page or an asciicast v3 recording. Nothing
//! of the run is changed: the replay reads its folder, and writes only what it is asked to.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicI32;
use std::sync::Arc;

use ralph_actors::events::event::{Envelope, Event};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::cli::{OutputFormat, ReplayArgs, Ui};
use crate::error::{Error, Result, UsageError};
use crate::printers::{self, event_log};
use crate::process::groups::ProcessGroups;
use crate::runner::detect;
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
    let (id, dir) = views::web::sessions::find(&root, args.session.as_deref())?;
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
            runtime.block_on(pace::play(
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
    let (target, original) = views::web::sessions::fix_files(dir);
    let place = views::tui::Place {
        dir: dir.to_path_buf(),
        target,
        original,
        replayed: true,
    };
    let player = async move {
        pace::play(events, speed, &mut feed, Some(pause_rx), stop).await;
        // The feed closes: the view shows the end and waits for `q`.
        drop(feed);
    };
    let (shown, ()) = tokio::join!(views::tui::run(inbox, handles, place), player);
    shown.map_err(|e| Error::io("the terminal view failed", e))?;
    Ok(0)
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
