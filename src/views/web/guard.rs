//! Who may use the dashboard: a request must name a host that cannot be a rebound DNS name
//! (`localhost` or an IP address, with the dashboard's port), and carry the token, in the URL
//! the dashboard printed (`?token=`, which sets a cookie) or in that cookie. As Jupyter does:
//! anyone who can reach the port still needs the URL.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::Rng;

/// The cookie that carries the token after the first visit.
pub const COOKIE: &str = "ralph_token";

/// 128 random bits, in hex.
pub fn new_token() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the check knows: the token, and the port a request's Host must name.
#[derive(Clone)]
pub struct Guard {
    pub token: std::sync::Arc<String>,
    pub port: u16,
}

/// The check every request passes.
pub async fn check(State(shared): State<Guard>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !host_allowed(host, shared.port) {
        return (
            StatusCode::FORBIDDEN,
            "this dashboard answers only to localhost or an IP address (a DNS name may be rebound)",
        )
            .into_response();
    }
    let from_query = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")))
        .map(str::to_string);
    let from_cookie = cookie(req.headers(), COOKIE);
    let known = [from_query.as_deref(), from_cookie.as_deref()]
        .into_iter()
        .flatten()
        .any(|t| same(t.as_bytes(), shared.token.as_bytes()));
    if !known {
        return (
            StatusCode::UNAUTHORIZED,
            "open the URL the dashboard printed: it carries its token",
        )
            .into_response();
    }
    let mut response = next.run(req).await;
    if from_query.is_some() {
        let value = format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            shared.token
        );
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
    }
    response
}

/// `localhost`, `127.0.0.1`, `[::1]` or any IP address, with `port`: a name an attacker's DNS
/// could point here (DNS rebinding) is refused.
pub fn host_allowed(host: &str, port: u16) -> bool {
    let Some((name, given)) = host.rsplit_once(':') else {
        return false;
    };
    if given.parse::<u16>().ok() != Some(port) {
        return false;
    }
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            (k == name).then(|| v.to_string())
        })
}

/// Compares in time that does not depend on where the two differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_names_and_addresses_with_the_port_pass() {
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
            "192.168.1.4:8080",
        ] {
            assert!(host_allowed(ok, 8080), "{ok}");
        }
        for refused in [
            "127.0.0.1:8081",
            "evil.example:8080",
            "localhost.evil.example:8080",
            "127.0.0.1",
            "",
        ] {
            assert!(!host_allowed(refused, 8080), "{refused}");
        }
    }

    #[test]
    fn tokens_are_long_and_differ() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(same(a.as_bytes(), a.as_bytes()));
        assert!(!same(a.as_bytes(), b.as_bytes()));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; ralph_token=abc; b=2"),
        );
        assert_eq!(cookie(&headers, COOKIE).as_deref(), Some("abc"));
        assert_eq!(cookie(&headers, "c"), None);
    }
}
