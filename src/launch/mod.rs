//! The one way a command runs: a fix run, a batch, the agent, its dry run and the Regent's
//! `loop` each build a [`Launch`] and run their own part inside it ([`Launch::run`]).
//!
//! What they share is set up here once: the actix system; the process groups killed on a
//! second signal; the tokens a signal cancels, by one [`Rule`] per command; the pause (the
//! view's key, and the dashboard's or `kill -USR1` through the run's `control.json`, see
//! [`crate::remote`]); and the view ([`view`]), started before the part and finished after it,
//! once the part has dropped its feeds. [`stops`] is how either stops the work, [`skips`] the
//! tasks a person skipped in the view.

pub(crate) mod stops;
pub(crate) mod skips;
pub(crate) mod view;

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::watch;

use crate::error::Result;
use crate::launch::stops::Stops;
use crate::launch::view::{Show, View};
use crate::process::groups::ProcessGroups;
use crate::remote;
use crate::views;

/// After SIGQUIT under [`Rule::DrainAll`], how long the loop has to write its state before the
/// process exits anyway.
const QUIT_GRACE: Duration = Duration::from_secs(3);

/// What a command's first SIGINT, SIGTERM or SIGHUP does. A second one of any kind kills every
/// process group and exits at once with that signal's code (128 + its number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Ends the step under way (`cancel`): the run saves its session and reports (a fix run,
    /// a batch). SIGQUIT kills the process groups and exits at once.
    EndStep,
    /// Ctrl+C lets the iteration under way finish (`drain`); SIGTERM and SIGHUP end the step
    /// (the agent). SIGQUIT as for [`Rule::EndStep`].
    DrainOnInterrupt,
    /// All three let the iteration under way finish, its commit included (`drain`); SIGQUIT
    /// cancels `quit` (the agent is killed now), and the process exits after a short grace
    /// (the Regent's loop).
    DrainAll,
    /// No signal is handled: the default actions stand (a dry run, which changes nothing).
    Default,
}

/// A command about to run.
pub(crate) struct Launch {
    rule: Rule,
    stops: Stops,
    pause: (watch::Sender<bool>, watch::Receiver<bool>),
    /// The folder whose `control.json` names this process while it runs; `None`: no other
    /// process may pause or stop it.
    announce: Option<PathBuf>,
    view: Option<(View, Show)>,
}

impl Launch {
    /// A command stopped by `rule`, its test and agent processes in `groups`.
    pub(crate) fn new(rule: Rule, groups: ProcessGroups) -> Self {
        Self {
            rule,
            stops: Stops::new(groups),
            pause: watch::channel(false),
            announce: None,
            view: None,
        }
    }

    /// Other processes may pause, resume and stop the command through `dir/control.json`.
    pub(crate) fn announced_in(mut self, dir: PathBuf) -> Self {
        self.announce = Some(dir);
        self
    }

    /// The command is shown by `view`, started as `show` says.
    pub(crate) fn shown(mut self, view: View, show: Show) -> Self {
        self.view = Some((view, show));
        self
    }

    /// How the command is stopped: for what is built before it runs.
    pub(crate) fn stops(&self) -> &Stops {
        &self.stops
    }

    /// Runs `part` to its end in a new actix system, with the signals handled by the command's
    /// rule, the pause listened for and the view shown; returns what `part` returned once the
    /// view has finished. `part` is given the pause: `true` while the command should hold
    /// before its next step.
    pub(crate) fn run<T, F>(self, part: impl FnOnce(watch::Receiver<bool>) -> F) -> Result<T>
    where
        F: Future<Output = Result<T>>,
    {
        let Launch {
            rule,
            stops,
            pause: (pause_tx, pause_rx),
            announce,
            view,
        } = self;
        let system = actix::System::new();
        system.block_on(async move {
            let _announced = announce.as_deref().map(remote::announce);
            let listening = announce
                .is_some()
                .then(|| tokio::spawn(remote::listen(pause_tx.clone())));
            let shown = match view {
                Some((view, show)) => Some(view.start(show, &stops, pause_tx).await?),
                None => None,
            };
            let signals = tokio::spawn(on_signals(rule, stops.clone()));
            let out = part(pause_rx).await;
            signals.abort();
            if let Some(listening) = listening {
                listening.abort();
            }
            if let Some(shown) = shown {
                shown.finish().await;
            }
            out
        })
    }
}

/// Handles the command's signals by its rule (see [`Rule`]) until the process ends.
async fn on_signals(rule: Rule, stops: Stops) {
    if rule == Rule::Default {
        return;
    }
    let Some(mut signals) = Signals::listen() else {
        eprintln!("warning: cannot listen for signals; Ctrl+C will stop the run at once");
        return;
    };
    let first = signals.next().await;
    if first == libc::SIGQUIT {
        stops.signal.store(first, Ordering::SeqCst);
        if rule == Rule::DrainAll {
            eprintln!("quit: killing the agent now");
            stops.quit.cancel();
            // The loop writes its state meanwhile; its view is still drawn until the exit.
            tokio::time::sleep(QUIT_GRACE).await;
        } else {
            views::tui::term::restore();
            eprintln!("quit: killing the test processes and exiting now");
        }
        stops.groups.kill_all();
        views::tui::term::restore();
        std::process::exit(128 + first);
    }
    match rule {
        // Not said as a signal: the view waits for the person to read the end.
        Rule::DrainOnInterrupt if first == libc::SIGINT => {
            eprintln!(
                "interrupted: finishing the iteration under way, then stopping (Ctrl+C again to quit at once)"
            );
            stops.drain.cancel();
        }
        Rule::DrainAll => {
            stops.signal.store(first, Ordering::SeqCst);
            eprintln!(
                "stopping: finishing the iteration under way, its commit included (Ctrl+C again to quit at once)"
            );
            stops.drain.cancel();
        }
        _ => {
            stops.signal.store(first, Ordering::SeqCst);
            stops.cancel.cancel();
        }
    }
    let second = signals.next().await;
    stops.groups.kill_all();
    views::tui::term::restore();
    std::process::exit(128 + second);
}

/// The signals that stop a command.
pub(crate) struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
    quit: Signal,
}

impl Signals {
    pub(crate) fn listen() -> Option<Self> {
        Some(Self {
            int: signal(SignalKind::interrupt()).ok()?,
            term: signal(SignalKind::terminate()).ok()?,
            hup: signal(SignalKind::hangup()).ok()?,
            quit: signal(SignalKind::quit()).ok()?,
        })
    }

    /// The number of the next signal to arrive.
    pub(crate) async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
            _ = self.quit.recv() => libc::SIGQUIT,
        }
    }
}
