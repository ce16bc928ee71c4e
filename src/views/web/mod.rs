//! The web dashboard (`--ui web`, `ralph-loop dashboard`): every session and agent loop of a
//! project, live and past, in a browser.
//!
//! - [`routes`]: the HTTP API, and [`page`] the page, its assets compiled in (`assets/`, no
//!   CDN), and a session's page exported as one file;
//! - [`guard`]: the token and Host checks every request passes;
//! - [`serve`]: the server, with the limits on slow, large and many clients;
//! - [`tail`]: a session's `events.jsonl` as server-sent events, followed as it grows;
//! - [`sessions`]: the project's sessions and loops, and the diff of each iteration.
//!
//! The dashboard reads only what runs write to disk, so it shows a run of this process and one
//! of another alike; it asks a run to pause, resume or stop through [`crate::remote`].

pub(crate) mod guard;
pub(crate) mod page;
pub(crate) mod routes;
pub(crate) mod serve;
pub(crate) mod sessions;
pub(crate) mod tail;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A dashboard serving: its URL (with the token) and how to close it.
pub struct Dashboard {
    url: String,
    shared: routes::Shared,
    served: JoinHandle<std::io::Result<()>>,
}

/// Binds `bind` and serves the dashboard of the project at `root` until [`Dashboard::close`].
pub async fn start(root: &Path, bind: SocketAddr) -> std::io::Result<Dashboard> {
    let listener = TcpListener::bind(bind).await?;
    let addr = listener.local_addr()?;
    let token = guard::new_token();
    let shared = routes::Shared {
        root: Arc::new(root.to_path_buf()),
        token: Arc::new(token.clone()),
        port: addr.port(),
        hub: Arc::new(tail::Hub::new()),
        stop: CancellationToken::new(),
    };
    let app = routes::router(shared.clone());
    let stop = shared.stop.clone();
    let served = tokio::spawn(serve::serve(listener, app, stop));
    let host = match addr.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    Ok(Dashboard {
        url: format!("http://{host}:{}/?token={token}", addr.port()),
        shared,
        served,
    })
}

impl Dashboard {
    /// The URL to open: the token in it lets the browser in.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL that opens on `session` (a folder name in `.ralph/`).
    pub fn url_for(&self, session: &str) -> String {
        format!("{}&session={session}", self.url)
    }

    /// Closes the dashboard once every page watching a run has been sent its end (at most
    /// `grace`), so a browser shows how the run ended.
    pub async fn close(self, grace: Duration) {
        let mut open = self.shared.hub.unfinished();
        let _ = tokio::time::timeout(grace, open.wait_for(|n| *n == 0)).await;
        self.shared.stop.cancel();
        let _ = self.served.await;
    }

    /// Serves until `until` is cancelled (Ctrl+C of `ralph-loop dashboard`).
    pub async fn serve_until(self, until: CancellationToken) -> std::io::Result<()> {
        until.cancelled().await;
        self.shared.stop.cancel();
        match self.served.await {
            Ok(served) => served,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}
