//! What an agent run cost: the cost the agent reports (Claude Code's result), else its reported
//! tokens at its model's price (Codex's usage), else tokens estimated from the prompt and the
//! text it printed (about four characters a token) at that price, and said to be estimated.

use std::sync::Arc;

use ralph_actors::policy::budget::{Price, Prices};
use ralph_actors::schema::agent::{AgentEvent, AgentTokens};
use ralph_actors::schema::usage::Usage;

use crate::gateway::{Gateway, Totals};

/// The price used for an agent model the table does not know: a mid-range frontier model's,
/// so an estimate errs on the side of the budget.
pub const FALLBACK_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// Short names agents take for their models, and the table's row for each.
const ALIASES: &[(&str, &str)] = &[
    ("sonnet", "anthropic/claude-sonnet-4-5"),
    ("opus", "anthropic/claude-opus-4-5"),
    ("haiku", "anthropic/claude-haiku-4-5"),
];

/// The price of `model` as an agent names it (`sonnet`, `gpt-5`, `openai/gpt-4.1`,
/// `claude-sonnet-4-5-20250929`), and the table's name for it; the fallback's when unknown.
pub fn price_of(prices: &Prices, model: Option<&str>) -> (Price, String, bool) {
    let found = model.and_then(|m| {
        let m = m.trim();
        let alias = ALIASES
            .iter()
            .find(|(a, _)| *a == m)
            .map(|(_, r)| r.to_string());
        alias
            .into_iter()
            .chain([
                m.to_string(),
                format!("openai/{m}"),
                format!("anthropic/{m}"),
                format!("gemini/{m}"),
            ])
            .find_map(|name| prices.get(&name).map(|p| (p, name)))
    });
    match found {
        Some((price, name)) => (price, name, true),
        None => (
            prices.get(FALLBACK_MODEL).unwrap_or(Price::FREE),
            FALLBACK_MODEL.to_string(),
            false,
        ),
    }
}

/// Counts one agent run's cost as its events come.
#[derive(Debug, Clone)]
pub struct Meter {
    price: Price,
    prompt_chars: usize,
    text_chars: usize,
    reported_usd: Option<f64>,
    /// Totals the agent reported as running totals, and increments summed.
    cumulative: AgentTokens,
    increments: AgentTokens,
    reported_tokens: bool,
    /// The run's calls go through the model gateway: its count, from the provider's usage,
    /// is the run's.
    wire: Option<Wire>,
}

/// The gateway a run's calls go through, and its totals when the run began.
#[derive(Debug, Clone)]
struct Wire {
    gateway: Arc<Gateway>,
    start: Totals,
}

impl Wire {
    /// What the calls since the run began came to.
    fn since(&self) -> Totals {
        let now = self.gateway.totals();
        let (a, b) = (now.usage, self.start.usage);
        Totals {
            calls: now.calls - self.start.calls,
            refused: now.refused - self.start.refused,
            usage: Usage {
                input_tokens: a.input_tokens - b.input_tokens,
                output_tokens: a.output_tokens - b.output_tokens,
                cache_read_tokens: a.cache_read_tokens - b.cache_read_tokens,
                cache_write_tokens: a.cache_write_tokens - b.cache_write_tokens,
            },
            cost: now.cost - self.start.cost,
        }
    }
}

impl Meter {
    pub fn new(price: Price, prompt: &str) -> Self {
        Self {
            price,
            prompt_chars: prompt.chars().count(),
            text_chars: 0,
            reported_usd: None,
            cumulative: AgentTokens::default(),
            increments: AgentTokens::default(),
            reported_tokens: false,
            wire: None,
        }
    }

    /// Counts the run by what its calls through `gateway` came to (the provider's usage at
    /// the table's prices), not by what the agent says or prints.
    pub fn on_wire(mut self, gateway: Arc<Gateway>) -> Self {
        self.wire = Some(Wire {
            start: gateway.totals(),
            gateway,
        });
        self
    }

    pub fn see(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Text { text } => self.text_chars += text.chars().count(),
            AgentEvent::Tool { detail, .. } => self.text_chars += detail.chars().count(),
            AgentEvent::Usage { tokens, cumulative } => {
                self.reported_tokens = true;
                if *cumulative {
                    self.cumulative = max(self.cumulative, *tokens);
                } else {
                    self.increments.add(*tokens);
                }
            }
            AgentEvent::Result {
                cost_usd, tokens, ..
            } => {
                if let Some(usd) = cost_usd {
                    *self.reported_usd.get_or_insert(0.0) += usd;
                }
                if let Some(tokens) = tokens {
                    self.reported_tokens = true;
                    self.cumulative = max(self.cumulative, *tokens);
                }
            }
            AgentEvent::Session { .. } | AgentEvent::Error { .. } => {}
        }
    }

    /// The tokens of the run: reported, else estimated.
    pub fn tokens(&self) -> AgentTokens {
        if let Some(wire) = &self.wire {
            let u = wire.since().usage;
            return AgentTokens {
                input: u.input_tokens,
                output: u.output_tokens,
                cached_input: u.cache_read_tokens,
            };
        }
        if self.reported_tokens {
            // A running total covers the increments reported before it (Claude Code's result
            // sums its messages; Codex reports a turn's usage and its result alike): the larger
            // of the two, never their sum. Increments alone count a run killed before its total.
            max(self.cumulative, self.increments)
        } else {
            AgentTokens {
                input: self.prompt_chars.div_ceil(4) as u64,
                output: self.text_chars.div_ceil(4) as u64,
                cached_input: 0,
            }
        }
    }

    /// Calls of the run the gateway refused because the budget could not pay for them.
    pub fn refused(&self) -> u32 {
        self.wire.as_ref().map_or(0, |w| w.since().refused)
    }

    /// Whether the tokens are an estimate from the text (the agent reported none).
    pub fn tokens_estimated(&self) -> bool {
        self.wire.is_none() && !self.reported_tokens
    }

    /// The cost so far, and whether it is an estimate from the text.
    pub fn cost(&self) -> (f64, bool) {
        if let Some(wire) = &self.wire {
            return (wire.since().cost, false);
        }
        if let Some(usd) = self.reported_usd {
            return (usd, false);
        }
        let t = self.tokens();
        let usage = Usage {
            input_tokens: t.input,
            output_tokens: t.output,
            cache_read_tokens: t.cached_input.min(t.input),
            cache_write_tokens: 0,
        };
        (self.price.cost(&usage), !self.reported_tokens)
    }
}

fn max(a: AgentTokens, b: AgentTokens) -> AgentTokens {
    AgentTokens {
        input: a.input.max(b.input),
        output: a.output.max(b.output),
        cached_input: a.cached_input.max(b.cached_input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::prices::bundled;

    #[test]
    fn reported_cost_wins_then_reported_tokens_then_an_estimate() {
        let prices = bundled();
        let (price, name, known) = price_of(&prices, Some("sonnet"));
        assert_eq!(
            (name.as_str(), known),
            ("anthropic/claude-sonnet-4-5", true)
        );

        // Claude Code: the result's cost.
        let mut claude = Meter::new(price, "fix it");
        claude.see(&AgentEvent::Result {
            text: "done".into(),
            is_error: false,
            cost_usd: Some(0.0123),
            tokens: None,
        });
        assert_eq!(claude.cost(), (0.0123, false));

        // Codex: its usage at gpt-5's price ($1.25 in, $10 out per million).
        let (gpt5, name, _) = price_of(&prices, Some("gpt-5"));
        assert_eq!(name, "openai/gpt-5");
        let mut codex = Meter::new(gpt5, "fix it");
        codex.see(&AgentEvent::Usage {
            tokens: AgentTokens {
                input: 1_000_000,
                output: 100_000,
                cached_input: 0,
            },
            cumulative: true,
        });
        let (usd, estimated) = codex.cost();
        assert!((usd - 2.25).abs() < 1e-9, "{usd}");
        assert!(!estimated);

        // Per-message usage and then the run's total (Claude Code's stream, Codex's turn):
        // counted once.
        let mut both = Meter::new(gpt5, "fix it");
        let part = AgentTokens {
            input: 1000,
            output: 50,
            cached_input: 0,
        };
        for _ in 0..3 {
            both.see(&AgentEvent::Usage {
                tokens: part,
                cumulative: false,
            });
        }
        assert_eq!(
            both.tokens().input,
            3000,
            "increments alone, before a total"
        );
        both.see(&AgentEvent::Result {
            text: "done".into(),
            is_error: false,
            cost_usd: None,
            tokens: Some(AgentTokens {
                input: 3000,
                output: 150,
                cached_input: 0,
            }),
        });
        assert_eq!((both.tokens().input, both.tokens().output), (3000, 150));

        // Aider: nothing reported, four characters a token.
        let (unknown, name, known) = price_of(&prices, Some("my-local-model"));
        assert_eq!((name.as_str(), known), (FALLBACK_MODEL, false));
        let mut aider = Meter::new(unknown, &"x".repeat(4000));
        aider.see(&AgentEvent::Text {
            text: "y".repeat(400),
        });
        assert_eq!(aider.tokens().input, 1000);
        assert_eq!(aider.tokens().output, 100);
        let (usd, estimated) = aider.cost();
        assert!(
            (usd - (1000.0 * 3.0 + 100.0 * 15.0) / 1e6).abs() < 1e-12,
            "{usd}"
        );
        assert!(estimated);
    }
}
