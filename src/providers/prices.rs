//! The bundled price table, in dollars per million tokens, and config overrides.
//!
//! Figures are OpenAI's standard (not Batch, not Flex, not Priority) rates from
//! <https://openai.com/api/pricing/> (also <https://platform.openai.com/docs/pricing>), as of the
//! date beside each. OpenAI bills no cache *writes*, so `cache_write` is left unset (it then
//! defaults to the input price and, with zero cache-write tokens reported, costs nothing).
//! A price that has moved can be corrected under `prices:` in `ralph.config.yaml` without a
//! new build; keep `docs/providers.md` in step when editing this table.

use std::collections::BTreeMap;

use ralph_actors::budget::{Price, Prices};

use crate::models::ModelName;

/// One row: model, input, cached input, output ($ per million tokens), and the date of the figure.
pub struct PriceRow {
    pub model: &'static str,
    pub input: f64,
    pub cache_read: f64,
    pub output: f64,
    /// When OpenAI published this figure (launch or last change), as `YYYY-MM-DD`.
    pub as_of: &'static str,
}

pub const SOURCE: &str = "https://openai.com/api/pricing/";

const fn row(
    model: &'static str,
    input: f64,
    cache_read: f64,
    output: f64,
    as_of: &'static str,
) -> PriceRow {
    PriceRow {
        model,
        input,
        cache_read,
        output,
        as_of,
    }
}

/// The bundled rows, source [`SOURCE`]: model, input, cached input, output, date of the figure.
#[rustfmt::skip]
pub const TABLE: &[PriceRow] = &[
    // GPT-5 family: launched 2025-08-07 at these prices.
    row("openai/gpt-5",        1.25, 0.125, 10.00, "2025-08-07"),
    row("openai/gpt-5-mini",   0.25, 0.025,  2.00, "2025-08-07"),
    row("openai/gpt-5-nano",   0.05, 0.005,  0.40, "2025-08-07"),
    // GPT-4.1 family: launched 2025-04-14 at these prices.
    row("openai/gpt-4.1",      2.00, 0.50,   8.00, "2025-04-14"),
    row("openai/gpt-4.1-mini", 0.40, 0.10,   1.60, "2025-04-14"),
    row("openai/gpt-4.1-nano", 0.10, 0.025,  0.40, "2025-04-14"),
    // GPT-4o: the gpt-4o-2024-08-06 price, which `gpt-4o` has pointed to since 2024-10-02.
    row("openai/gpt-4o",       2.50, 1.25,  10.00, "2024-10-02"),
    // GPT-4o mini: launched 2024-07-18; cached input since prompt caching, 2024-10-01.
    row("openai/gpt-4o-mini",  0.15, 0.075,  0.60, "2024-10-01"),
    // o3: cut by 80% on 2025-06-10.
    row("openai/o3",           2.00, 0.50,   8.00, "2025-06-10"),
    // o4-mini: launched 2025-04-16.
    row("openai/o4-mini",      1.10, 0.275,  4.40, "2025-04-16"),
    // o3-mini: launched 2025-01-31.
    row("openai/o3-mini",      1.10, 0.55,   4.40, "2025-01-31"),
];

/// The bundled prices, keyed `openai/<model>`. Dated names (`gpt-4.1-2025-04-14`) find their
/// row through [`Prices::get`].
pub fn bundled() -> Prices {
    Prices(
        TABLE
            .iter()
            .map(|r| {
                let price = Price {
                    input: r.input,
                    output: r.output,
                    cache_read: Some(r.cache_read),
                    cache_write: None,
                };
                (r.model.to_string(), price)
            })
            .collect(),
    )
}

/// The bundled prices with the config's on top. Config keys may be aliases or bare names
/// (`gpt`, `gpt-4.1`); they are stored under the canonical `provider/model` name the ledger
/// looks up. A key that is not a model name is kept as written.
pub fn with_overrides(config: BTreeMap<String, Price>) -> Prices {
    let mut prices = bundled();
    for (name, price) in config {
        let key = ModelName::parse(&name)
            .map(|m| m.to_string())
            .unwrap_or(name);
        prices.0.insert(key, price);
    }
    prices
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_actors::llm::Usage;

    #[test]
    fn every_supported_model_has_a_price() {
        let p = bundled();
        for m in [
            "gpt-5",
            "gpt-5-mini",
            "gpt-5-nano",
            "gpt-4.1",
            "gpt-4.1-mini",
            "gpt-4.1-nano",
            "gpt-4o",
            "gpt-4o-mini",
            "o3",
            "o4-mini",
            "o3-mini",
        ] {
            let price = p
                .get(&format!("openai/{m}"))
                .unwrap_or_else(|| panic!("no price for {m}"));
            assert!(price.input > 0.0 && price.output >= price.input, "{m}");
            assert!(price.cache_read.is_some_and(|c| c < price.input), "{m}");
        }
        assert_eq!(p.0.len(), TABLE.len());
    }

    #[test]
    fn looks_up_dated_names_and_prices_a_call() {
        let p = bundled();
        let price = p.get("openai/gpt-4.1-mini-2025-04-14").expect("dated name");
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 200_000,
            cache_write_tokens: 0,
        };
        // 800k plain at $0.40 + 200k cached at $0.10 + 1M out at $1.60.
        assert!((price.cost(&usage) - (0.32 + 0.02 + 1.60)).abs() < 1e-9);
        assert!(p.get("openai/gpt-unknown").is_none());
    }

    #[test]
    fn config_overrides_and_adds() {
        let mut cfg = BTreeMap::new();
        cfg.insert(
            "gpt".to_string(),
            Price {
                input: 9.0,
                output: 9.0,
                cache_read: None,
                cache_write: None,
            },
        );
        cfg.insert("ollama/qwen2.5-coder:7b".to_string(), Price::FREE);
        cfg.insert(
            "openai/gpt-4o".to_string(),
            Price {
                input: 1.0,
                output: 2.0,
                cache_read: None,
                cache_write: None,
            },
        );
        let p = with_overrides(cfg);
        assert_eq!(p.get("openai/gpt-4.1").map(|x| x.input), Some(9.0));
        assert_eq!(p.get("openai/gpt-4o").map(|x| x.output), Some(2.0));
        assert_eq!(p.get("ollama/qwen2.5-coder:7b"), Some(Price::FREE));
        assert_eq!(p.get("openai/o3").map(|x| x.input), Some(2.0));
    }
}
