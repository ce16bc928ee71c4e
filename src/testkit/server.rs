//! A server that answers with headers and a first chunk, then says nothing: the stalled
//! stream wiremock cannot produce.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads one request: its headers and a `Content-Length` body.
async fn read_request(socket: &mut TcpStream) -> std::io::Result<()> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return Ok(());
            }
        }
    }
}

/// Serves every connection a 200 with `content_type`, then `first` as one chunk, then
/// silence for a minute. Returns the base URL and the count of connections served.
pub async fn stalling(content_type: &str, first: &str) -> (String, Arc<AtomicUsize>) {
    stalling_then(content_type, first, usize::MAX, "").await
}

/// As [`stalling`] for the first `stalls` connections; the later ones get `whole` in full.
pub async fn stalling_then(
    content_type: &str,
    first: &str,
    stalls: usize,
    whole: &str,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    let stalled = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n",
        first.len()
    );
    let complete = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{whole}",
        whole.len()
    );
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let n = count.fetch_add(1, Ordering::SeqCst);
            let (answer, stall) = if n < stalls {
                (stalled.clone(), true)
            } else {
                (complete.clone(), false)
            };
            tokio::spawn(async move {
                if read_request(&mut socket).await.is_ok() {
                    let _ = socket.write_all(answer.as_bytes()).await;
                    let _ = socket.flush().await;
                    if stall {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                }
            });
        }
    });
    (url, served)
}
