//! The fault layer: an HTTP proxy between ralph-loop and the mock model server that forwards
//! each request and, where the test's plan says so, spoils the reply on its way back the way
//! networks, proxies and overloaded servers do. It also reads what the server billed for each
//! reply it forwarded, so that a test can hold the run's money to it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::super::support::{role_of_system, system_text, Protocol};

/// One way a reply goes wrong on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Half of the body, then the connection closes without the body's end.
    Cut,
    /// Half of the body, then silence, the connection held open.
    Stall,
    /// Half of the body ending in the middle of an event, then a proper end of the body: a
    /// stream that stops as if it were complete.
    HalfEvent,
    /// Every event (an SSE event, an NDJSON line) sent twice.
    Duplicate,
    /// The events between the first and the last swapped in pairs.
    Reorder,
    /// A proxy's HTML error page with this status, before the server is reached.
    HtmlPage(u16),
    /// A 200 whose body is an HTML page (a captive portal, a login page), before the server is
    /// reached.
    HtmlOk,
    /// `content-encoding: gzip` over bytes that are no gzip, in place of the server's reply.
    GzipGarbage,
    /// A 200 whose body is the protocol's own error object (an overloaded server behind a
    /// gateway), before the server is reached.
    ErrorBody,
}

impl Fault {
    /// Whether the server produced (and bills) the reply the fault spoils.
    pub fn reaches_server(self) -> bool {
        !matches!(self, Fault::HtmlPage(_) | Fault::HtmlOk | Fault::ErrorBody)
    }
}

/// Tokens a reply was billed, as its server reported them in the body it sent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Billed {
    /// The whole prompt, cached parts included.
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Billed {
    /// The cost at `input`/`output` dollars per million tokens, cache reads at a tenth of the
    /// input price and writes at 1.25 times (Anthropic's; the other mocks report no cache).
    pub fn cost(&self, input: f64, output: f64) -> f64 {
        let uncached = self.input - self.cache_read - self.cache_write;
        (uncached as f64 * input
            + self.cache_read as f64 * input * 0.1
            + self.cache_write as f64 * input * 1.25
            + self.output as f64 * output)
            / 1_000_000.0
    }
}

/// One request the proxy answered.
#[derive(Clone, Debug)]
pub struct Served {
    pub role: String,
    pub fault: Option<Fault>,
    /// What the server billed, when the request reached it and it answered with success.
    pub billed: Option<Billed>,
}

struct Plan {
    protocol: Protocol,
    upstream: String,
    faults: BTreeMap<String, VecDeque<Option<Fault>>>,
    served: Vec<Served>,
}

type Shared = Arc<Mutex<Plan>>;

/// A proxy in front of `upstream` (a mock server's root URL) for `protocol`.
pub struct FaultProxy {
    pub url: String,
    plan: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    pub async fn start(protocol: Protocol, upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let plan = Arc::new(Mutex::new(Plan {
            protocol,
            upstream: upstream.trim_end_matches('/').to_string(),
            faults: BTreeMap::new(),
            served: Vec::new(),
        }));
        let shared = plan.clone();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        Self { url, plan, task }
    }

    /// The faults for `role`'s next requests, in order (`None`: forwarded as it is); requests
    /// after them are forwarded as they are.
    pub fn plan(&self, role: &str, faults: impl IntoIterator<Item = Option<Fault>>) {
        let mut plan = self.plan.lock().unwrap();
        plan.faults.entry(role.into()).or_default().extend(faults);
    }

    /// Every request answered so far.
    pub fn served(&self) -> Vec<Served> {
        self.plan.lock().unwrap().served.clone()
    }
}

/// A request as it came: its method, path with query, headers and body.
struct Incoming {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Reads one request with a `Content-Length` body; `None` when the client went away first.
async fn read_request(socket: &mut TcpStream) -> Option<Incoming> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        seen.extend_from_slice(&buf[..n]);
        let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&seen[..end]).to_string();
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, target) = (first.next()?.to_string(), first.next()?.to_string());
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
            .collect();
        let length = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        if seen.len() >= end + 4 + length {
            let body = seen[end + 4..end + 4 + length].to_vec();
            return Some(Incoming {
                method,
                target,
                headers,
                body,
            });
        }
    }
}

/// The reply the server gave: status, content type and body.
struct Upstream {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

async fn forward(upstream: &str, request: &Incoming) -> Upstream {
    let client = reqwest::Client::new();
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).expect("a method");
    let mut out = client.request(method, format!("{upstream}{}", request.target));
    for (k, v) in &request.headers {
        if !matches!(k.as_str(), "host" | "content-length" | "connection") {
            out = out.header(k.as_str(), v.as_str());
        }
    }
    let response = out
        .body(request.body.clone())
        .send()
        .await
        .expect("the mock server answers");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let body = response.bytes().await.expect("the mock's body").to_vec();
    Upstream {
        status,
        content_type,
        body,
    }
}

async fn serve(mut socket: TcpStream, plan: Shared) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let json: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let (protocol, upstream, role, fault) = {
        let mut plan = plan.lock().unwrap();
        let role = role_of_system(&system_text(plan.protocol, &json));
        let fault = plan
            .faults
            .get_mut(&role)
            .and_then(|q| q.pop_front())
            .flatten();
        (plan.protocol, plan.upstream.clone(), role, fault)
    };
    let reply = match fault {
        Some(f) if !f.reaches_server() => None,
        _ => Some(forward(&upstream, &request).await),
    };
    let billed = reply
        .as_ref()
        .filter(|r| (200..300).contains(&r.status))
        .map(|r| billed(protocol, &String::from_utf8_lossy(&r.body)));
    plan.lock().unwrap().served.push(Served {
        role,
        fault,
        billed,
    });
    let _ = answer(&mut socket, protocol, fault, reply).await;
}

/// Writes the reply to the client, spoilt by `fault`.
async fn answer(
    socket: &mut TcpStream,
    protocol: Protocol,
    fault: Option<Fault>,
    reply: Option<Upstream>,
) -> std::io::Result<()> {
    let Some(reply) = reply else {
        let (status, content_type, body) = match fault {
            Some(Fault::HtmlPage(status)) => (status, "text/html", html_page(status)),
            Some(Fault::HtmlOk) => (200, "text/html", html_page(200)),
            _ => (200, "application/json", error_body(protocol)),
        };
        return whole(socket, status, content_type, &[], body.as_bytes()).await;
    };
    let events = events_of(&reply.content_type, &reply.body);
    match fault {
        None | Some(Fault::HtmlPage(_) | Fault::HtmlOk | Fault::ErrorBody) => {
            whole(socket, reply.status, &reply.content_type, &[], &reply.body).await
        }
        Some(Fault::GzipGarbage) => {
            let garbage: Vec<u8> = (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect();
            let gzip = [("content-encoding", "gzip")];
            whole(socket, reply.status, &reply.content_type, &gzip, &garbage).await
        }
        Some(Fault::Duplicate) => {
            let twice: Vec<&[u8]> = events.iter().flat_map(|e| [*e, *e]).collect();
            chunked(socket, reply.status, &reply.content_type, &twice, true).await
        }
        Some(Fault::Reorder) => {
            let mut swapped = events.clone();
            let mut i = 1;
            while i + 2 < swapped.len() {
                swapped.swap(i, i + 1);
                i += 2;
            }
            chunked(socket, reply.status, &reply.content_type, &swapped, true).await
        }
        Some(Fault::Cut | Fault::Stall | Fault::HalfEvent) => {
            let half = &reply.body[..half_way(&events)];
            let finish = fault == Some(Fault::HalfEvent);
            chunked(socket, reply.status, &reply.content_type, &[half], finish).await?;
            match fault {
                // Silent until the client gives up and closes the connection.
                Some(Fault::Stall) => {
                    let mut buf = [0u8; 64];
                    let _ =
                        tokio::time::timeout(Duration::from_secs(120), socket.read(&mut buf)).await;
                }
                // Dropping the socket ends the connection with the body unfinished.
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
            Ok(())
        }
    }
}

/// Where the middle of the body's middle event (or of its only one) is: the events are the
/// body's consecutive pieces.
fn half_way(events: &[&[u8]]) -> usize {
    let middle = events.len() / 2;
    let before: usize = events[..middle].iter().map(|e| e.len()).sum();
    before + events[middle].len() / 2
}

/// The body cut into its events, each with its delimiter: SSE events end with a blank line,
/// NDJSON records with a new line; any other body is one event.
fn events_of<'a>(content_type: &str, body: &'a [u8]) -> Vec<&'a [u8]> {
    let delimiter: &[u8] = if content_type.contains("event-stream") {
        b"\n\n"
    } else if content_type.contains("ndjson") {
        b"\n"
    } else {
        return vec![body];
    };
    let mut events = Vec::new();
    let mut start = 0;
    while let Some(at) = body[start..]
        .windows(delimiter.len())
        .position(|w| w == delimiter)
    {
        let end = start + at + delimiter.len();
        events.push(&body[start..end]);
        start = end;
    }
    if start < body.len() {
        events.push(&body[start..]);
    }
    events
}

async fn whole(
    socket: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body).await?;
    socket.flush().await
}

/// Sends `pieces` as the chunks of a chunked body, each flushed on its own; `finish` sends the
/// body's end.
async fn chunked(
    socket: &mut TcpStream,
    status: u16,
    content_type: &str,
    pieces: &[&[u8]],
    finish: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        reason(status)
    );
    socket.write_all(head.as_bytes()).await?;
    for piece in pieces.iter().filter(|p| !p.is_empty()) {
        socket
            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await?;
        socket.write_all(piece).await?;
        socket.write_all(b"\r\n").await?;
        socket.flush().await?;
    }
    if finish {
        socket.write_all(b"0\r\n\r\n").await?;
    }
    socket.flush().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn html_page(status: u16) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><title>{status} {}</title></head>\n<body><center><h1>{status} {}</h1></center><hr><center>nginx</center></body></html>\n",
        reason(status),
        reason(status)
    )
}

/// The protocol's own error object for an overloaded server.
fn error_body(protocol: Protocol) -> String {
    match protocol {
        Protocol::OpenAi | Protocol::Azure => r#"{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}"#,
        Protocol::Anthropic => r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        Protocol::Gemini => r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
        Protocol::Ollama => r#"{"error":"model runner has unexpectedly stopped"}"#,
    }
    .to_string()
}

/// The largest number `"key":` is followed by in `body`: streams repeat or grow their usage
/// figures, and the last word is the largest.
fn largest(body: &str, key: &str) -> u64 {
    let needle = format!("\"{key}\":");
    body.match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = body[at + needle.len()..].trim_start();
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// What a reply's body says it was billed, in the protocol's words.
fn billed(protocol: Protocol, body: &str) -> Billed {
    let of = |key| largest(body, key);
    match protocol {
        Protocol::OpenAi | Protocol::Azure => Billed {
            input: of("prompt_tokens"),
            output: of("completion_tokens"),
            cache_read: of("cached_tokens"),
            cache_write: 0,
        },
        Protocol::Anthropic => {
            let (read, write) = (
                of("cache_read_input_tokens"),
                of("cache_creation_input_tokens"),
            );
            Billed {
                input: of("input_tokens") + read + write,
                output: of("output_tokens"),
                cache_read: read,
                cache_write: write,
            }
        }
        Protocol::Gemini => Billed {
            input: of("promptTokenCount"),
            output: of("candidatesTokenCount"),
            cache_read: of("cachedContentTokenCount"),
            cache_write: 0,
        },
        Protocol::Ollama => Billed {
            input: of("prompt_eval_count"),
            output: of("eval_count"),
            cache_read: 0,
            cache_write: 0,
        },
    }
}
