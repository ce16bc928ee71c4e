//! The process's edge: diagnostics on stderr, and a run's outcome as the exit code.

use std::process::ExitCode;

use crate::error::Result;

/// Diagnostics go to stderr at `error` unless `RUST_LOG` says otherwise, so they never draw over
/// the live view nor mix into `--output json`. A `warn!` is for the user, not the log: it goes
/// to the run under way as a warning on its events (the live view and the report; see
/// [`observe_warnings`]), or to stderr when no run listens. One already said on the events
/// carries the field `on_bus = true` and is left to the log.
pub fn init_tracing() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    // Colour only on a terminal: redirected to a file, escape codes are noise.
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let said = ToTheUser.with_filter(tracing_subscriber::filter::LevelFilter::WARN);
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(said)
        .try_init();
}

type Observer = std::sync::Arc<dyn Fn(String) + Send + Sync>;

/// Who hears of each warning: the run under way's events. Set at the binary's edge.
static WARNINGS: std::sync::RwLock<Option<Observer>> = std::sync::RwLock::new(None);

/// Tells `observer` of every `warn!` not already on the events, until the returned guard is
/// dropped. One run at a time listens, as for retries (`http::retry::observe_retries`): of
/// runs side by side in one process (a batch's `--parallel`) the last to start hears every
/// warning, and once it ends they go to stderr until another starts.
pub(crate) fn observe_warnings(observer: impl Fn(String) + Send + Sync + 'static) -> Warnings {
    *WARNINGS.write().unwrap_or_else(|e| e.into_inner()) = Some(std::sync::Arc::new(observer));
    Warnings(())
}

/// Stops the warnings' observer when dropped.
#[must_use = "warnings are observed until this is dropped"]
pub(crate) struct Warnings(());

impl Drop for Warnings {
    fn drop(&mut self) {
        *WARNINGS.write().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The layer that gives each warning to the user (see [`init_tracing`]).
struct ToTheUser;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ToTheUser {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() != tracing::Level::WARN {
            return;
        }
        let mut read = Said::default();
        event.record(&mut read);
        if read.on_bus {
            return;
        }
        let observer = WARNINGS.read().unwrap_or_else(|e| e.into_inner()).clone();
        match observer {
            Some(observer) => observer(read.message),
            None => eprintln!("warning: {}", read.message),
        }
    }
}

/// A warning's message, and whether it is on the events already.
#[derive(Default)]
struct Said {
    message: String,
    on_bus: bool,
}

impl tracing::field::Visit for Said {
    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        if field.name() == "on_bus" {
            self.on_bus = value;
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}

/// Turns a run's outcome into the process exit code, printing errors plainly.
pub fn exit_code(result: Result<i32>) -> ExitCode {
    log_peak_memory();
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// The process's peak resident set as its last diagnostic, with `RUST_LOG=ralph_loop::exit=debug`
/// (`peak_rss_kib=…`): the kernel's high-water mark of this process alone (its tests not
/// counted), kept to the very end of the run, which sampling `/proc` from outside can miss
/// (the benchmarks and the test suite's memory gate read it). `VmHWM` from `/proc` (so Linux
/// only): `getrusage` would also count the image of the process that forked this one, as it
/// was before the exec.
fn log_peak_memory() {
    if !tracing::enabled!(target: "ralph_loop::exit", tracing::Level::DEBUG) {
        return;
    }
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        });
    if let Some(kib) = hwm {
        tracing::debug!(target: "ralph_loop::exit", peak_rss_kib = kib, "exiting");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// A warning reaches the observer once, its message formatted; one already on the events,
    /// and anything below a warning, do not.
    #[test]
    fn warnings_not_yet_said_reach_the_run() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(ToTheUser);
        tracing::subscriber::with_default(subscriber, || {
            let into = heard.clone();
            let _listening = observe_warnings(move |m| into.lock().unwrap().push(m));
            tracing::warn!("{}: the reply is cut short", "gpt-x");
            tracing::warn!(on_bus = true, "said already");
            tracing::info!("not a warning");
            tracing::error!("not a warning either");
        });
        assert_eq!(*heard.lock().unwrap(), ["gpt-x: the reply is cut short"]);
    }
}
