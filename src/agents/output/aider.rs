//! Aider's plain output (`--no-pretty`): every line is its text, and after each model call it
//! prints what the call cost:
//!
//! ```text
//! Tokens: 2.5k sent, 103 received. Cost: $0.0092 message, $0.0092 session.
//! ```
//!
//! The tokens are rounded as printed (`2.5k`); the session's cost is a running total, kept as
//! the result's cost when Aider exits.

use ralph_actors::schema::agent::{AgentEvent, AgentTokens};

use super::reader::Reader;

#[derive(Debug, Default)]
pub struct AiderReader {
    /// The session's cost so far, from the last summary line.
    session_cost: Option<f64>,
}

impl Reader for AiderReader {
    fn line(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        if let Some((tokens, session)) = summary_line(line) {
            out.push(AgentEvent::Usage {
                tokens,
                cumulative: false,
            });
            self.session_cost = session.or(self.session_cost);
            return;
        }
        out.push(AgentEvent::Text {
            text: line.to_string(),
        });
    }

    fn finish(&mut self, out: &mut Vec<AgentEvent>) {
        if let Some(cost) = self.session_cost {
            out.push(AgentEvent::Result {
                text: String::new(),
                is_error: false,
                cost_usd: Some(cost),
                tokens: None,
            });
        }
    }
}

/// The tokens of a `Tokens: … sent, … received.` line and the session cost it gives.
fn summary_line(line: &str) -> Option<(AgentTokens, Option<f64>)> {
    let rest = line.trim().strip_prefix("Tokens: ")?;
    let (sent, rest) = rest.split_once(" sent, ")?;
    let (received, rest) = rest.split_once(" received.")?;
    let tokens = AgentTokens {
        input: count(sent)?,
        output: count(received)?,
        cached_input: 0,
    };
    let session = rest
        .split_once("message, $")
        .and_then(|(_, s)| s.split_once(" session"))
        .and_then(|(cost, _)| cost.replace(',', "").parse().ok());
    Some((tokens, session))
}

/// `2,048`, `2.5k`, `1.2M` as a number.
fn count(text: &str) -> Option<u64> {
    let text = text.trim().replace(',', "");
    let (digits, scale) = match text.chars().last()? {
        'k' | 'K' => (&text[..text.len() - 1], 1e3),
        'm' | 'M' => (&text[..text.len() - 1], 1e6),
        _ => (text.as_str(), 1.0),
    };
    let value: f64 = digits.parse().ok()?;
    Some((value * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn the_summary_line_gives_tokens_and_the_session_cost() {
        let out = super::super::reader::read_all::<AiderReader>(&[
            "I'll fix the even-length branch.",
            "Tokens: 2.5k sent, 103 received. Cost: $0.0092 message, $0.0092 session.",
            "Tokens: 1,200 sent, 1.1k received. Cost: $0.01 message, $0.0192 session.",
        ]);
        let usage = |input, output| AgentEvent::Usage {
            tokens: AgentTokens {
                input,
                output,
                cached_input: 0,
            },
            cumulative: false,
        };
        assert_eq!(
            out,
            [
                AgentEvent::Text {
                    text: "I'll fix the even-length branch.".into()
                },
                usage(2500, 103),
                usage(1200, 1100),
                AgentEvent::Result {
                    text: String::new(),
                    is_error: false,
                    cost_usd: Some(0.0192),
                    tokens: None
                },
            ]
        );
        assert_eq!(summary_line("Tokens: many sent, 3 received."), None);
    }
}
