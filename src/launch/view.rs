//! How a command shows itself (`--ui`): lines (or JSON) only; the TUI, drawing the run's events
//! (and a batch's or agent's task list beside each task's runs, `s` skipping one); or lines and
//! the web dashboard.
//!
//! The view's channels exist before the command's actix system does (its printers are made
//! with them); the view itself starts inside it ([`View::start`], called by
//! [`crate::launch::Launch::run`]) and ends once every feed has been dropped and the
//! person has read the end ([`Shown::finish`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tokio::sync::watch;

use crate::cli::Ui;
use crate::error::{Error, Result};
use crate::launch::skips::Skips;
use crate::launch::stops::Stops;
use crate::printers::Printer;
use crate::views::board::Tasks;
use crate::views::tui::{self, picker::Picker, Asker, Feed, Inbox};
use crate::views::web::Dashboard;
use crate::views::{self, Chosen};

/// How long a closing dashboard waits for its pages to be sent the run's end.
pub(crate) const DASHBOARD_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The dashboard of the project at `root`, listening on `bind` (default: this machine only).
pub(crate) async fn open_dashboard(root: &Path, bind: Option<SocketAddr>) -> Result<Dashboard> {
    let bind = bind.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    views::web::start(root, bind)
        .await
        .map_err(|e| Error::io(format!("cannot listen on {bind} for the dashboard"), e))
}

/// The view chosen, and its channels until it starts.
pub(crate) struct View {
    chosen: Chosen,
    tui: Option<(Feed, Inbox)>,
    asker: Option<Asker>,
}

/// What the view's stop key ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopKey {
    /// The step under way (a fix run, a batch).
    Step,
    /// The iteration under way, once it has finished (the agent, the loop).
    Iteration,
}

/// What the view may do to the command, and where the command keeps its files.
pub(crate) struct Show {
    pub(crate) root: PathBuf,
    /// The folder of the run, loop, batch or agent: the view's stderr log and exports go there.
    pub(crate) dir: PathBuf,
    pub(crate) bind: Option<SocketAddr>,
    /// The dashboard's page of this run or loop (its id); `None`: the project's list.
    pub(crate) page: Option<String>,
    pub(crate) stop: StopKey,
    /// What the stop key does, as the view tells it.
    pub(crate) stop_means: &'static str,
    /// Who may change model, and how (`m`): made when the view starts, inside the command's
    /// actix system (a picker may list models in the background).
    pub(crate) picker: Option<Box<dyn FnOnce() -> Picker>>,
    /// The tasks the view may skip (`s`): a batch's or agent's.
    pub(crate) skips: Option<Skips>,
    /// A fix run's target as it is now, and as it was: the view's diff.
    pub(crate) target: Option<PathBuf>,
    pub(crate) original: Option<PathBuf>,
}

impl Show {
    /// A view of the command whose files are in `dir`, in the project at `root`.
    pub(crate) fn new(root: &Path, dir: PathBuf, stop: StopKey, stop_means: &'static str) -> Self {
        Self {
            root: root.to_path_buf(),
            dir,
            bind: None,
            page: None,
            stop,
            stop_means,
            picker: None,
            skips: None,
            target: None,
            original: None,
        }
    }
}

/// The view under way.
pub(crate) struct Shown {
    view: Option<actix_rt::task::JoinHandle<std::io::Result<()>>>,
    dashboard: Option<Dashboard>,
}

impl View {
    /// The view `--ui` asks for, for output shown to a person when `human`; a note when the
    /// TUI was asked for and cannot be drawn here.
    pub(crate) fn choose(ui: Option<Ui>, human: bool) -> (Self, Option<String>) {
        let chosen = views::choose(ui.unwrap_or_default(), human);
        let note = match &chosen {
            Chosen::Lines { why_not_tui } => why_not_tui.clone(),
            _ => None,
        };
        let (tui, asker) = match chosen {
            Chosen::Tui => {
                let (feed, asker, inbox) = tui::channels();
                (Some((feed, inbox)), Some(asker))
            }
            _ => (None, None),
        };
        (Self { chosen, tui, asker }, note)
    }

    /// Whether the TUI shows the command (then nothing else may write to the terminal).
    pub(crate) fn is_tui(&self) -> bool {
        self.chosen == Chosen::Tui
    }

    /// How a batch or agent reports its tasks to the view: the TUI's list; `None` under another
    /// view.
    pub(crate) fn board(&mut self) -> Option<Tasks> {
        self.tui.as_mut().map(|(_, inbox)| inbox.board())
    }

    /// The printer of the command's events in the TUI; `None` under another view.
    pub(crate) fn feed(&self) -> Option<Box<dyn Printer>> {
        let feed = self.tui.as_ref()?.0.clone();
        Some(Box::new(feed))
    }

    /// The printer of task `key`'s runs in the TUI; `None` under another view.
    pub(crate) fn tagged(&self) -> Option<impl Fn(&str) -> Box<dyn Printer>> {
        let feed = self.tui.as_ref()?.0.clone();
        Some(move |key: &str| Box::new(feed.tagged(key)) as Box<dyn Printer>)
    }

    /// The person at the TUI, whom the circuit breaker asks before it stops a run.
    pub(crate) fn asker(&mut self) -> Option<Asker> {
        self.asker.take()
    }

    /// Starts the view; call inside the command's actix system. `pause` is the command's.
    pub(crate) async fn start(
        mut self,
        show: Show,
        stops: &Stops,
        pause: watch::Sender<bool>,
    ) -> Result<Shown> {
        let dashboard = match self.chosen {
            Chosen::Web => {
                let dashboard = open_dashboard(&show.root, show.bind).await?;
                match &show.page {
                    Some(id) => eprintln!("dashboard: {}", dashboard.url_for(id)),
                    None => eprintln!("dashboard: {}", dashboard.url()),
                }
                Some(dashboard)
            }
            _ => None,
        };
        let Some((feed, inbox)) = self.tui.take() else {
            return Ok(Shown {
                view: None,
                dashboard,
            });
        };
        // Where stderr goes under the view: nothing may write over its frames.
        std::fs::create_dir_all(&show.dir)
            .map_err(|e| Error::io(format!("cannot create {}", show.dir.display()), e))?;
        // Only the command's feeds keep the view's feed open: it ends with the last of them.
        drop(feed);
        let skip = show
            .skips
            .map(|skips| -> tui::Skip { Box::new(move |key: &str| skips.skip(key)) });
        let handles = tui::Handles {
            pause: Some(pause),
            cancel: match show.stop {
                StopKey::Step => stops.cancel.clone(),
                StopKey::Iteration => stops.drain.clone(),
            },
            stop_signal: stops.signal.clone(),
            groups: stops.groups.clone(),
            stop_means: show.stop_means,
            picker: show.picker.map(|make| make()),
            skip,
        };
        let place = tui::Place {
            dir: show.dir,
            target: show.target,
            original: show.original,
            replayed: false,
        };
        let view = actix_rt::spawn(tui::run(inbox, handles, place));
        Ok(Shown {
            view: Some(view),
            dashboard,
        })
    }
}

impl Shown {
    /// Waits for the person to leave the TUI (the run over and its feeds dropped), or lets
    /// the dashboard's pages read the end; says when the TUI failed.
    pub(crate) async fn finish(self) {
        if let Some(view) = self.view {
            tui::ended(view).await;
        }
        if let Some(dashboard) = self.dashboard {
            dashboard.close(DASHBOARD_GRACE).await;
        }
    }
}
