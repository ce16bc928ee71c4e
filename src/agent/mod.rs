//! Agent mode's own files and errors: [`session`] (`.ralph/agent-session.json` and the lock of
//! the one agent of a project) and [`log`] (`.ralph/logs/agent-<timestamp>.log`). The loop that
//! works through the inbox is [`crate::app::agent`].

mod error;
pub(crate) mod log;
pub(crate) mod session;

use std::time::Duration;

pub use error::AgentError;

/// How long ago an RFC 3339 time was.
pub fn elapsed_since(at: &str) -> Duration {
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .and_then(|t| {
            (chrono::Utc::now() - t.with_timezone(&chrono::Utc))
                .to_std()
                .ok()
        })
        .unwrap_or_default()
}

/// "1h 23m", "15m 32s", "4s".
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(human_duration(Duration::from_secs(4)), "4s");
        assert_eq!(human_duration(Duration::from_secs(932)), "15m 32s");
        assert_eq!(human_duration(Duration::from_secs(4980)), "1h 23m");
    }
}
