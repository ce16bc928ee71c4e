//! How an attempt reads its reply: a whole JSON body, or a stream of server-sent events or of
//! NDJSON lines whose every chunk must come within the idle timeout.

use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::stream::{BoxStream, StreamExt};
use reqwest::Response;
use serde::de::DeserializeOwned;

use super::failure::Failure;
use crate::http::text::{chain, shorten};

/// The body's bytes, each chunk awaited for at most `idle`: a silence that long ends the stream
/// with [`Failure::Stalled`]. Pings and keep-alive comments count as life.
fn idle_bytes(response: Response, idle: Duration) -> BoxStream<'static, Result<Bytes, Failure>> {
    futures::stream::unfold(
        Some(response.bytes_stream().boxed()),
        move |state| async move {
            let mut bytes = state?;
            match tokio::time::timeout(idle, bytes.next()).await {
                Err(_) => Some((Err(Failure::Stalled), None)),
                Ok(None) => None,
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(bytes))),
                Ok(Some(Err(e))) => Some((
                    Err(Failure::Network(format!(
                        "the reply broke off: {}",
                        chain(&e)
                    ))),
                    None,
                )),
            }
        },
    )
    .boxed()
}

/// A server-sent-events reply, event by event, under the idle timeout.
pub(crate) fn sse(
    response: Response,
    idle: Duration,
) -> BoxStream<'static, Result<Event, Failure>> {
    let too_long = || {
        Failure::Invalid(format!(
            "a line of the stream is over {} MiB",
            crate::http::sse::MAX_LINE >> 20
        ))
    };
    crate::http::sse::whole_lines(idle_bytes(response, idle), too_long)
        .eventsource()
        .map(|event| {
            event.map_err(|e| match e {
                EventStreamError::Transport(failure) => failure,
                EventStreamError::Utf8(e) => {
                    Failure::Invalid(format!("the stream is not UTF-8: {e}"))
                }
                EventStreamError::Parser(e) => {
                    Failure::Invalid(format!("the stream is not server-sent events: {e}"))
                }
            })
        })
        .boxed()
}

/// A newline-delimited JSON reply (Ollama), line by line without blank lines, under the idle
/// timeout.
pub(crate) fn ndjson(
    response: Response,
    idle: Duration,
) -> BoxStream<'static, Result<String, Failure>> {
    struct Lines {
        bytes: BoxStream<'static, Result<Bytes, Failure>>,
        buffer: Vec<u8>,
        /// Where the unread part of `buffer` starts: lines are read off by moving it, and the
        /// read part is dropped once per chunk, so a long reply arriving at once is not moved
        /// again for every line.
        read: usize,
        /// How far `buffer` was searched for a newline: a line arriving in many chunks is
        /// searched once, not once per chunk.
        searched: usize,
        ended: bool,
    }
    fn line(bytes: &[u8]) -> Result<String, Failure> {
        std::str::from_utf8(bytes)
            .map(|s| s.trim().to_string())
            .map_err(|e| Failure::Invalid(format!("the stream is not UTF-8: {e}")))
    }
    let start = Lines {
        bytes: idle_bytes(response, idle),
        buffer: Vec::new(),
        read: 0,
        searched: 0,
        ended: false,
    };
    futures::stream::unfold(start, |mut s| async move {
        loop {
            let unread = &s.buffer[s.read..];
            let from = s.searched.saturating_sub(s.read);
            if let Some(end) = unread[from..].iter().position(|&b| b == b'\n') {
                let end = from + end;
                let result = line(&unread[..end]);
                s.read += end + 1;
                s.searched = s.read;
                match result {
                    Ok(text) if text.is_empty() => continue,
                    other => return Some((other, s)),
                }
            }
            if s.ended {
                // A last line without its newline still counts.
                let rest = std::mem::take(&mut s.buffer).split_off(s.read);
                s.read = 0;
                s.searched = 0;
                if rest.iter().all(u8::is_ascii_whitespace) {
                    return None;
                }
                return Some((line(&rest), s));
            }
            s.searched = s.buffer.len();
            if s.buffer.len() - s.read > crate::http::sse::MAX_LINE {
                s.buffer.clear();
                s.read = 0;
                s.searched = 0;
                s.ended = true;
                let failure = Failure::Invalid(format!(
                    "a line of the stream is over {} MiB",
                    crate::http::sse::MAX_LINE >> 20
                ));
                return Some((Err(failure), s));
            }
            match s.bytes.next().await {
                Some(Ok(chunk)) => {
                    s.buffer.drain(..s.read);
                    s.searched -= s.read;
                    s.read = 0;
                    s.buffer.extend_from_slice(&chunk);
                }
                Some(Err(failure)) => {
                    s.buffer.clear();
                    s.read = 0;
                    s.searched = 0;
                    s.ended = true;
                    return Some((Err(failure), s));
                }
                None => s.ended = true,
            }
        }
    })
    .boxed()
}

/// A whole JSON reply.
pub(crate) async fn read_json<T: DeserializeOwned>(response: Response) -> Result<T, Failure> {
    let body = response
        .bytes()
        .await
        .map_err(|e| Failure::Network(format!("the reply broke off: {}", chain(&e))))?;
    serde_json::from_slice(&body).map_err(|e| {
        Failure::Invalid(format!(
            "{e} in `{}`",
            shorten(&String::from_utf8_lossy(&body))
        ))
    })
}

/// One JSON event or line of a stream.
pub(crate) fn parse_chunk<T: DeserializeOwned>(data: &str) -> Result<T, Failure> {
    serde_json::from_str(data).map_err(|e| Failure::Invalid(format!("{e} in `{}`", shorten(data))))
}
