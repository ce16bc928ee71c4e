//! `ralph-loop dashboard`: the web dashboard of every session and agent loop of the project
//! here, live and past, until Ctrl+C (or SIGTERM). It prints its URL on stdout.

use std::io::Write;

use tokio_util::sync::CancellationToken;

use crate::cli::DashboardArgs;
use crate::error::{Error, Result};
use crate::runner::detect;

pub fn run(args: DashboardArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let root = detect::project_root(&cwd);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start the dashboard's runtime", e))?;
    runtime.block_on(async move {
        let dashboard = crate::launch::view::open_dashboard(&root, args.ui_bind).await?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "dashboard of {}: {}", root.display(), dashboard.url());
        let _ = writeln!(out, "Ctrl+C stops it");
        let _ = out.flush();
        drop(out);
        serve_until_signal(dashboard).await
    })
}

/// Serves `dashboard` until Ctrl+C (SIGINT, SIGTERM, SIGHUP or SIGQUIT); without signals, until
/// killed.
pub(crate) async fn serve_until_signal(dashboard: crate::views::web::Dashboard) -> Result<i32> {
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        match crate::launch::Signals::listen() {
            Some(mut signals) => {
                signals.next().await;
            }
            None => std::future::pending::<()>().await,
        }
        stopping.cancel();
    });
    dashboard
        .serve_until(stop)
        .await
        .map_err(|e| Error::io("the dashboard stopped", e))?;
    Ok(0)
}
