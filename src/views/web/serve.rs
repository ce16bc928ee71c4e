//! The dashboard's HTTP server: hyper's HTTP/1, with the limits a server open to a network needs
//! and `axum::serve` leaves off. The dashboard often shares its process with a run (`--ui web`),
//! so no client may take that run's memory, file descriptors or time:
//!
//! - a request's head must arrive within [`HEAD_WITHIN`]: a client that sends it a byte at a
//!   time (slowloris) is dropped;
//! - a head may be at most [`MAX_HEAD`] bytes: hyper answers `431` beyond;
//! - at most [`MAX_CONNECTIONS`] connections are open at once: more are closed as they come,
//!   before anything is read from them.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Connections open at once: pages and their event streams (a page holds two), scripts,
/// curl. Each costs a socket and a task, and at most [`MAX_HEAD`] of buffer.
pub const MAX_CONNECTIONS: usize = 512;

/// The longest a client may take to send a request's head.
pub const HEAD_WITHIN: Duration = Duration::from_secs(10);

/// The largest request head (request line and headers) read; a browser's is a few KiB.
pub const MAX_HEAD: usize = 64 * 1024;

/// The longest a connection may take, once the server stops, to finish the answer under way
/// (each event stream ends at the stop): long enough to flush it, short enough that a client
/// holding a connection cannot keep a run's process from exiting.
const CLOSING_GRACE: Duration = Duration::from_millis(500);

/// Serves `app` on `listener` until `stop`, then lets open connections finish what they were
/// answering (at most [`CLOSING_GRACE`]) and closes them.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    stop: CancellationToken,
) -> std::io::Result<()> {
    // A permit per open connection: none left means full; all back means every one closed.
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEAD_WITHIN)
        .max_buf_size(MAX_HEAD);
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            // Out of descriptors, or a connection reset before it was taken: the listener
            // itself is fine, so wait a moment rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Full: the connection closes at once, before its request is read.
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            continue;
        };
        // Each event is a small write, sent as it comes: no waiting to fill a packet.
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let connection = http.serve_connection(TokioIo::new(tcp), service);
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = stop.cancelled() => {
                    // The answer under way is finished (an event stream ends at the stop), none
                    // after it; a head still coming is not waited for.
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(CLOSING_GRACE, connection).await;
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    let all = u32::try_from(MAX_CONNECTIONS).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(CLOSING_GRACE, permits.acquire_many(all)).await;
    Ok(())
}
