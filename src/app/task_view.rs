//! How a batch or an agent shows itself (`--ui`): lines; the TUI, with the task list beside
//! each task's runs (`s` skips a task); or lines and the web dashboard.
//!
//! The view's channels exist before the run's actix system does (the runs' printers are made
//! with them); the view itself starts inside it ([`TaskView::start`]) and ends once every
//! feed has been dropped and the person has read the end ([`Running::finish`]).

use std::path::PathBuf;
use std::sync::atomic::AtomicI32;
use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::app::execute::{open_dashboard, DASHBOARD_GRACE};
use crate::app::skips::Skips;
use crate::cli::Ui;
use crate::error::Result;
use crate::printers::Printer;
use crate::process::groups::ProcessGroups;
use crate::views::board::Tasks;
use crate::views::tui::{self, Feed, Inbox};
use crate::views::web::Dashboard;
use crate::views::{self, Chosen};

/// The view chosen, and its channels until it starts.
pub(crate) struct TaskView {
    chosen: Chosen,
    tui: Option<(Feed, Inbox)>,
    tasks: Option<Tasks>,
    pause: (watch::Sender<bool>, watch::Receiver<bool>),
}

/// What the view may do to the run, and where the run keeps its files.
pub(crate) struct Reach {
    pub(crate) root: PathBuf,
    /// The folder of the batch or agent: the view's stderr log and exports go there.
    pub(crate) dir: PathBuf,
    pub(crate) bind: Option<std::net::SocketAddr>,
    pub(crate) cancel: CancellationToken,
    pub(crate) stop_signal: Arc<AtomicI32>,
    pub(crate) groups: ProcessGroups,
    pub(crate) skips: Skips,
    pub(crate) stop_means: &'static str,
}

/// The view under way.
pub(crate) struct Running {
    view: Option<actix_rt::task::JoinHandle<std::io::Result<()>>>,
    dashboard: Option<Dashboard>,
}

impl TaskView {
    /// The view `--ui` asks for, for output shown to a person when `human`; a note when the
    /// TUI was asked for and cannot be drawn here.
    pub(crate) fn choose(ui: Option<Ui>, human: bool) -> (Self, Option<String>) {
        let chosen = views::choose(ui.unwrap_or_default(), human);
        let note = match &chosen {
            Chosen::Lines { why_not_tui } => why_not_tui.clone(),
            _ => None,
        };
        let (tui, tasks) = match chosen {
            Chosen::Tui => {
                let (feed, _asker, mut inbox) = tui::channels();
                let tasks = inbox.board();
                (Some((feed, inbox)), Some(tasks))
            }
            _ => (None, None),
        };
        let view = Self {
            chosen,
            tui,
            tasks,
            pause: watch::channel(false),
        };
        (view, note)
    }

    /// Whether the TUI shows the run (then nothing else may write to the terminal).
    pub(crate) fn is_tui(&self) -> bool {
        self.chosen == Chosen::Tui
    }

    /// How the run reports its tasks to the view (the TUI's list), if it shows them.
    pub(crate) fn tasks(&self) -> Option<Tasks> {
        self.tasks.clone()
    }

    /// The printer of task `key`'s runs in the TUI; `None` under another view.
    pub(crate) fn printer(&self) -> Option<impl Fn(&str) -> Box<dyn Printer>> {
        let feed = self.tui.as_ref()?.0.clone();
        Some(move |key: &str| Box::new(feed.tagged(key)) as Box<dyn Printer>)
    }

    /// The view's pause, which every run holds to.
    pub(crate) fn pause(&self) -> watch::Receiver<bool> {
        self.pause.1.clone()
    }

    /// Starts the view; call inside the run's actix system.
    pub(crate) async fn start(mut self, reach: Reach) -> Result<Running> {
        let dashboard = match self.chosen {
            Chosen::Web => {
                let dashboard = open_dashboard(&reach.root, reach.bind).await?;
                eprintln!("dashboard: {}", dashboard.url());
                Some(dashboard)
            }
            _ => None,
        };
        if self.tui.is_some() {
            // Where stderr goes under the view: nothing may write over its frames.
            std::fs::create_dir_all(&reach.dir).map_err(|e| {
                crate::error::Error::io(format!("cannot create {}", reach.dir.display()), e)
            })?;
        }
        let view = self.tui.take().map(|(feed, inbox)| {
            // Only the runs' feeds keep the view's feed open: it ends with the last of them.
            drop(feed);
            let skips = reach.skips.clone();
            let handles = tui::Handles {
                pause: Some(self.pause.0.clone()),
                cancel: reach.cancel.clone(),
                stop_signal: reach.stop_signal.clone(),
                groups: reach.groups.clone(),
                stop_means: reach.stop_means,
                picker: None,
                skip: Some(Box::new(move |key: &str| skips.skip(key))),
            };
            let place = tui::Place {
                dir: reach.dir.clone(),
                target: None,
                original: None,
                replayed: false,
            };
            actix_rt::spawn(tui::run(inbox, handles, place))
        });
        Ok(Running { view, dashboard })
    }
}

impl Running {
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
