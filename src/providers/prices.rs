//! The bundled price and context-window table, and config overrides.
//!
//! Prices are dollars per million tokens at each provider's standard rate (not Batch, Flex,
//! Priority or a long-context tier), from the page in each row's `source`, as of the date in
//! `as_of` (when the figure was published or last changed, as far as known: `YYYY-MM-DD`, or
//! `YYYY-MM` when the day is not). A price that has moved is corrected under `prices:` in
//! `ralph.config.yaml` without a new build; keep `docs/providers.md` in step when editing this
//! table.
//!
//! What each provider bills, and so which fields are set:
//! - OpenAI: input, cached input (`cache_read`), output; no cache writes.
//! - Anthropic: input, output, 5-minute cache writes (1.25 × input) and cache reads
//!   (0.1 × input). The 1-hour cache (2 × input) is never requested, so it has no column.
//! - Gemini: input, context-cache reads, output, for prompts up to 200k tokens. Gemini 2.5 Pro
//!   bills prompts over 200k at a higher rate ($2.50 in, $15 out); prompts here stay far below.
//!   Cache storage is billed per hour and only for explicit caches, which are never created.
//! - Ollama: free (local). Only the models listed have rows; any other Ollama model costs $0 as
//!   well, with a one-time warning from the ledger unless priced under `prices:`.
//! - Azure OpenAI: none. Deployments have names the user chose and prices that depend on the
//!   deployment type and region, so they are priced under `prices:` (`azure/<deployment>`).

use std::collections::BTreeMap;

use ralph_actors::policy::budget::{Price, Prices};

use crate::models::ModelName;

/// A model's limits, and where and when its row's figures were taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelInfo {
    /// Prompt and reply together, in tokens.
    pub context_window: u32,
    /// The most output tokens one reply may have (reasoning tokens included).
    pub max_output: u32,
    pub source: &'static str,
    pub as_of: &'static str,
}

/// One row: a model (`provider/model`), its prices ($ per million tokens) and limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriceRow {
    pub model: &'static str,
    pub input: f64,
    pub output: f64,
    /// Cached input tokens read; `None` bills them as input.
    pub cache_read: Option<f64>,
    /// Input tokens written to a cache; `None` bills them as input.
    pub cache_write: Option<f64>,
    pub context_window: u32,
    pub max_output: u32,
    pub source: &'static str,
    pub as_of: &'static str,
    /// Ollama tags (`7b`, `latest`) that name the same model: `ollama/<model>:<tag>`.
    pub tags: &'static [&'static str],
}

pub const OPENAI_SOURCE: &str = "https://openai.com/api/pricing/";
pub const ANTHROPIC_SOURCE: &str = "https://docs.claude.com/en/docs/about-claude/pricing";
pub const GEMINI_SOURCE: &str = "https://ai.google.dev/gemini-api/docs/pricing";
pub const OLLAMA_SOURCE: &str = "https://ollama.com/library";

/// A row that bills nothing yet: each provider's function below fills in its prices.
const fn unbilled(
    source: &'static str,
    model: &'static str,
    context_window: u32,
    max_output: u32,
    as_of: &'static str,
) -> PriceRow {
    PriceRow {
        model,
        input: 0.0,
        output: 0.0,
        cache_read: None,
        cache_write: None,
        context_window,
        max_output,
        source,
        as_of,
        tags: &[],
    }
}

/// A provider that bills cached input but no cache writes (OpenAI, Gemini): its rows are
/// `provider.row(model, input, cached input, output, context window, max output, as of)`.
struct CachedInput {
    source: &'static str,
}

impl CachedInput {
    #[allow(clippy::too_many_arguments)]
    const fn row(
        &self,
        model: &'static str,
        input: f64,
        cache_read: f64,
        output: f64,
        context_window: u32,
        max_output: u32,
        as_of: &'static str,
    ) -> PriceRow {
        PriceRow {
            input,
            output,
            cache_read: Some(cache_read),
            ..unbilled(self.source, model, context_window, max_output, as_of)
        }
    }
}

/// OpenAI: input, cached input, output; context window, max output.
const OPENAI: CachedInput = CachedInput {
    source: OPENAI_SOURCE,
};

/// Gemini: input, cached input, output (prompts up to 200k tokens); context window, max output.
const GEMINI: CachedInput = CachedInput {
    source: GEMINI_SOURCE,
};

/// Anthropic: input, output, 5-minute cache write, cache read; context window, max output.
#[allow(clippy::too_many_arguments)]
const fn anthropic(
    model: &'static str,
    input: f64,
    output: f64,
    cache_write: f64,
    cache_read: f64,
    context_window: u32,
    max_output: u32,
    as_of: &'static str,
) -> PriceRow {
    PriceRow {
        input,
        output,
        cache_read: Some(cache_read),
        cache_write: Some(cache_write),
        ..unbilled(ANTHROPIC_SOURCE, model, context_window, max_output, as_of)
    }
}

/// Ollama: free; the model's own context window, which is also the most it can write (Ollama
/// generates until the window is full unless told otherwise).
const fn ollama(
    model: &'static str,
    tags: &'static [&'static str],
    context_window: u32,
    as_of: &'static str,
) -> PriceRow {
    PriceRow {
        tags,
        ..unbilled(OLLAMA_SOURCE, model, context_window, context_window, as_of)
    }
}

/// The bundled rows.
#[rustfmt::skip]
pub const TABLE: &[PriceRow] = &[
    //          model                          input  cached  output  context    max out  as of
    // GPT-5 family: launched 2025-08-07 at these prices.
    OPENAI.row("openai/gpt-5",                  1.25, 0.125,  10.00,   400_000, 128_000, "2025-08-07"),
    OPENAI.row("openai/gpt-5-mini",             0.25, 0.025,   2.00,   400_000, 128_000, "2025-08-07"),
    OPENAI.row("openai/gpt-5-nano",             0.05, 0.005,   0.40,   400_000, 128_000, "2025-08-07"),
    // GPT-4.1 family: launched 2025-04-14 at these prices.
    OPENAI.row("openai/gpt-4.1",                2.00, 0.50,    8.00, 1_047_576,  32_768, "2025-04-14"),
    OPENAI.row("openai/gpt-4.1-mini",           0.40, 0.10,    1.60, 1_047_576,  32_768, "2025-04-14"),
    OPENAI.row("openai/gpt-4.1-nano",           0.10, 0.025,   0.40, 1_047_576,  32_768, "2025-04-14"),
    // GPT-4o: the gpt-4o-2024-08-06 price, which `gpt-4o` has pointed to since 2024-10-02.
    OPENAI.row("openai/gpt-4o",                 2.50, 1.25,   10.00,   128_000,  16_384, "2024-10-02"),
    // GPT-4o mini: launched 2024-07-18; cached input since prompt caching, 2024-10-01.
    OPENAI.row("openai/gpt-4o-mini",            0.15, 0.075,   0.60,   128_000,  16_384, "2024-10-01"),
    // o3: cut by 80% on 2025-06-10.
    OPENAI.row("openai/o3",                     2.00, 0.50,    8.00,   200_000, 100_000, "2025-06-10"),
    OPENAI.row("openai/o4-mini",                1.10, 0.275,   4.40,   200_000, 100_000, "2025-04-16"),
    OPENAI.row("openai/o3-mini",                1.10, 0.55,    4.40,   200_000, 100_000, "2025-01-31"),

    //         model                           input output  cache w cache r context  max out  as of
    // Opus 4.5 cut Opus prices by two thirds; Opus 4.1 and 4 keep the old ones.
    anthropic("anthropic/claude-opus-4-5",     5.00, 25.00,  6.25,   0.50,  200_000, 64_000, "2025-11-24"),
    anthropic("anthropic/claude-opus-4-1",    15.00, 75.00, 18.75,   1.50,  200_000, 32_000, "2025-08-05"),
    anthropic("anthropic/claude-opus-4",      15.00, 75.00, 18.75,   1.50,  200_000, 32_000, "2025-05-22"),
    // Sonnet 4.5 and 4 take 1M tokens with a beta header, billed higher past 200k; not used.
    anthropic("anthropic/claude-sonnet-4-5",   3.00, 15.00,  3.75,   0.30,  200_000, 64_000, "2025-09-29"),
    anthropic("anthropic/claude-sonnet-4",     3.00, 15.00,  3.75,   0.30,  200_000, 64_000, "2025-05-22"),
    anthropic("anthropic/claude-3-7-sonnet",   3.00, 15.00,  3.75,   0.30,  200_000, 64_000, "2025-02-24"),
    anthropic("anthropic/claude-haiku-4-5",    1.00,  5.00,  1.25,   0.10,  200_000, 64_000, "2025-10-15"),
    // Launched at $1/$5 on 2024-11-04, cut to these in December 2024.
    anthropic("anthropic/claude-3-5-haiku",    0.80,  4.00,  1.00,   0.08,  200_000,  8_192, "2024-12"),

    //          model                           input  cached  output  context    max out  as of
    // Gemini 2.5: launch prices (Pro and Flash GA 2025-06-17, Flash-Lite 2025-07-22); cached
    // input at 10% of input, as the pricing page listed it when Gemini 3 Pro came out.
    GEMINI.row("gemini/gemini-2.5-pro",         1.25, 0.125,  10.00, 1_048_576, 65_536, "2025-11-18"),
    GEMINI.row("gemini/gemini-2.5-flash",       0.30, 0.03,    2.50, 1_048_576, 65_536, "2025-11-18"),
    GEMINI.row("gemini/gemini-2.5-flash-lite",  0.10, 0.01,    0.40, 1_048_576, 65_536, "2025-11-18"),
    GEMINI.row("gemini/gemini-2.0-flash",       0.10, 0.025,   0.40, 1_048_576,  8_192, "2025-02-05"),

    //      model                          tags                                   context
    // The context each model was trained for, from its library page. Ollama itself runs
    // with a smaller window (`num_ctx`) unless the client asks for more.
    ollama("ollama/qwen2.5-coder",      &["latest", "0.5b", "1.5b", "3b", "7b", "14b", "32b"], 32_768, "2025-11"),
    ollama("ollama/qwen3-coder",        &["latest", "30b"],                           262_144, "2025-11"),
    ollama("ollama/llama3.1",           &["latest", "8b", "70b"],                     131_072, "2025-11"),
    ollama("ollama/deepseek-coder-v2",  &["latest", "16b"],                           163_840, "2025-11"),
    ollama("ollama/codellama",          &["latest", "7b", "13b", "34b"],               16_384, "2025-11"),
    ollama("ollama/gpt-oss",            &["latest", "20b", "120b"],                   131_072, "2025-11"),
];

/// Other names the providers accept for a row's model: `-latest` and version aliases. Dated
/// names (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`) need no entry: the ledger and
/// [`info`] drop the date.
pub const ALSO_KNOWN_AS: &[(&str, &str)] = &[
    ("anthropic/claude-opus-4-0", "anthropic/claude-opus-4"),
    ("anthropic/claude-sonnet-4-0", "anthropic/claude-sonnet-4"),
    (
        "anthropic/claude-3-7-sonnet-latest",
        "anthropic/claude-3-7-sonnet",
    ),
    (
        "anthropic/claude-3-5-haiku-latest",
        "anthropic/claude-3-5-haiku",
    ),
    ("gemini/gemini-2.0-flash-001", "gemini/gemini-2.0-flash"),
];

impl PriceRow {
    pub fn price(&self) -> Price {
        Price {
            input: self.input,
            output: self.output,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
        }
    }

    pub fn info(&self) -> ModelInfo {
        ModelInfo {
            context_window: self.context_window,
            max_output: self.max_output,
            source: self.source,
            as_of: self.as_of,
        }
    }

    /// Every name the row is priced under: the model, its Ollama tags and its other names.
    fn names(&self) -> impl Iterator<Item = String> + '_ {
        let tagged = self.tags.iter().map(|t| format!("{}:{t}", self.model));
        let aliases = ALSO_KNOWN_AS
            .iter()
            .filter(|(_, row)| *row == self.model)
            .map(|(alias, _)| alias.to_string());
        std::iter::once(self.model.to_string())
            .chain(tagged)
            .chain(aliases)
    }
}

/// The bundled prices, keyed `provider/model` (and every other name of each row). Dated names
/// find their row through [`Prices::get`].
pub fn bundled() -> Prices {
    Prices(
        TABLE
            .iter()
            .flat_map(|r| r.names().map(move |n| (n, r.price())))
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

/// The context window and output cap of a model named any way [`ModelName`] accepts (alias,
/// bare or `provider/model`), with or without a date, `-latest`, a version suffix (`-001`) or
/// an Ollama tag. `None` for models not in the table, Azure deployments among them.
pub fn info(model: &str) -> Option<ModelInfo> {
    let name = ModelName::parse(model).ok()?.to_string();
    let family = undated(&name);
    let ollama_family = name
        .strip_prefix("ollama/")
        .and_then(|m| m.split_once(':'))
        .map(|(m, _)| format!("ollama/{m}"));
    let found = [Some(name.as_str()), family, ollama_family.as_deref()]
        .into_iter()
        .flatten()
        .find_map(row);
    found.map(PriceRow::info)
}

fn row(name: &str) -> Option<&'static PriceRow> {
    let canonical = ALSO_KNOWN_AS
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, row)| row);
    TABLE.iter().find(|r| r.model == canonical)
}

/// The name without a trailing date (`-20250929`, `-2025-04-14`), `-latest` or three-digit
/// version (`-001`); `None` when it has none.
fn undated(name: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (head, tail) = name.rsplit_once('-')?;
    if tail == "latest" || (digits(tail) && matches!(tail.len(), 3 | 8)) {
        return Some(head);
    }
    // `-YYYY-MM-DD`: three numeric parts of 4, 2 and 2 digits.
    let mut parts = name.rsplitn(4, '-');
    let (day, month, year, head) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let date = [(year, 4), (month, 2), (day, 2)]
        .iter()
        .all(|(p, n)| p.len() == *n && digits(p));
    date.then_some(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::ALIASES;
    use ralph_actors::schema::usage::Usage;

    const EPS: f64 = 1e-9;

    #[test]
    fn every_current_model_has_a_price_and_limits() {
        let p = bundled();
        let paid = [
            "openai/gpt-5",
            "openai/gpt-5-mini",
            "openai/gpt-5-nano",
            "openai/gpt-4.1",
            "openai/gpt-4.1-mini",
            "openai/gpt-4.1-nano",
            "openai/gpt-4o",
            "openai/gpt-4o-mini",
            "openai/o3",
            "openai/o4-mini",
            "openai/o3-mini",
            "anthropic/claude-opus-4-1",
            "anthropic/claude-opus-4",
            "anthropic/claude-sonnet-4-5",
            "anthropic/claude-sonnet-4",
            "anthropic/claude-3-7-sonnet",
            "anthropic/claude-haiku-4-5",
            "anthropic/claude-3-5-haiku",
            "gemini/gemini-2.5-pro",
            "gemini/gemini-2.5-flash",
            "gemini/gemini-2.5-flash-lite",
            "gemini/gemini-2.0-flash",
        ];
        for m in paid {
            let price = p.get(m).unwrap_or_else(|| panic!("no price for {m}"));
            assert!(price.input > 0.0 && price.output >= price.input, "{m}");
            assert!(price.cache_read.is_some_and(|c| c < price.input), "{m}");
            let i = info(m).unwrap_or_else(|| panic!("no info for {m}"));
            assert!(i.max_output > 0 && i.max_output < i.context_window, "{m}");
        }
        for r in TABLE {
            assert!(r.source.starts_with("https://"), "{}", r.model);
            let date_like =
                r.as_of.len() >= 7 && r.as_of.bytes().all(|b| b.is_ascii_digit() || b == b'-');
            assert!(date_like, "{}: {}", r.model, r.as_of);
            assert!(ModelName::parse(r.model).is_ok(), "{}", r.model);
        }
    }

    #[test]
    fn a_sample_of_rows() {
        let p = bundled();
        let sonnet = p.get("anthropic/claude-sonnet-4-5").expect("sonnet");
        assert_eq!(
            sonnet,
            Price {
                input: 3.0,
                output: 15.0,
                cache_write: Some(3.75),
                cache_read: Some(0.30),
            }
        );
        let pro = p.get("gemini/gemini-2.5-pro").expect("pro");
        assert_eq!((pro.input, pro.output), (1.25, 10.0));
        assert_eq!(pro.cache_write, None);
        assert_eq!(
            info("gemini/gemini-2.5-pro").map(|i| (i.context_window, i.max_output)),
            Some((1_048_576, 65_536))
        );
        assert_eq!(
            info("openai/gpt-4.1").map(|i| (i.context_window, i.max_output, i.as_of)),
            Some((1_047_576, 32_768, "2025-04-14"))
        );
        assert_eq!(
            info("anthropic/claude-3-5-haiku").map(|i| (i.max_output, i.source)),
            Some((8_192, ANTHROPIC_SOURCE))
        );
    }

    #[test]
    fn anthropic_cache_prices_follow_the_input_price() {
        for r in TABLE.iter().filter(|r| r.model.starts_with("anthropic/")) {
            let (w, c) = (r.cache_write.expect("write"), r.cache_read.expect("read"));
            assert!((w - 1.25 * r.input).abs() < EPS, "{}", r.model);
            assert!((c - 0.1 * r.input).abs() < EPS, "{}", r.model);
        }
    }

    #[test]
    fn every_alias_has_a_price_and_limits() {
        let p = bundled();
        for (alias, full) in ALIASES {
            let name = ModelName::parse(alias).expect("alias").to_string();
            assert_eq!(&name, full);
            assert!(p.get(&name).is_some(), "no price for {alias} = {full}");
            assert!(info(alias).is_some(), "no info for {alias} = {full}");
        }
    }

    #[test]
    fn dated_and_other_names_find_their_row() {
        let p = bundled();
        let sonnet = info("anthropic/claude-sonnet-4-5");
        for name in [
            "anthropic/claude-sonnet-4-5-20250929",
            "claude-sonnet-4-5-20250929",
            "claude",
        ] {
            assert_eq!(info(name), sonnet, "{name}");
        }
        assert_eq!(
            p.get("anthropic/claude-sonnet-4-5-20250929"),
            p.get("anthropic/claude-sonnet-4-5")
        );
        assert_eq!(
            p.get("anthropic/claude-3-5-haiku-20241022")
                .map(|x| x.input),
            Some(0.80)
        );
        assert_eq!(
            p.get("anthropic/claude-3-7-sonnet-latest").map(|x| x.input),
            Some(3.0)
        );
        assert_eq!(
            p.get("anthropic/claude-opus-4-20250514").map(|x| x.output),
            Some(75.0)
        );
        assert_eq!(
            info("openai/gpt-4o-2024-08-06").map(|i| i.context_window),
            Some(128_000)
        );
        assert_eq!(
            info("gemini/gemini-2.0-flash-001").map(|i| i.max_output),
            Some(8_192)
        );
        assert!(p.get("gemini/gemini-2.0-flash-001").is_some());
        assert_eq!(undated("gpt-4.1-mini-2025-04-14"), Some("gpt-4.1-mini"));
        assert_eq!(undated("gpt-4.1-mini"), None);
        assert_eq!(undated("o3-mini"), None);
    }

    #[test]
    fn ollama_models_are_free_under_every_tag() {
        let p = bundled();
        for name in [
            "ollama/qwen2.5-coder:7b",
            "ollama/qwen2.5-coder",
            "ollama/qwen2.5-coder:latest",
            "ollama/gpt-oss:20b",
        ] {
            assert_eq!(p.get(name), Some(Price::FREE), "{name}");
        }
        // An unlisted tag is local too: free, silently, with its family's limits.
        assert_eq!(
            p.get("ollama/qwen2.5-coder:7b-instruct-q8_0"),
            Some(Price::FREE)
        );
        assert_eq!(
            info("ollama/qwen2.5-coder:7b-instruct-q8_0").map(|i| i.context_window),
            Some(32_768)
        );
        assert_eq!(info("ollama"), info("ollama/qwen2.5-coder:7b"));
    }

    #[test]
    fn azure_and_unknown_models_have_no_bundled_row() {
        let p = bundled();
        assert!(p.get("azure/gpt-4o").is_none());
        assert!(info("azure/gpt-4o").is_none());
        assert!(p.get("openai/gpt-unknown").is_none());
        assert!(info("openai/gpt-unknown").is_none());
        assert!(info("not a model").is_none());
    }

    #[test]
    fn prices_a_call() {
        let p = bundled();
        let price = p.get("openai/gpt-4.1-mini-2025-04-14").expect("dated name");
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 200_000,
            cache_write_tokens: 0,
        };
        // 800k plain at $0.40 + 200k cached at $0.10 + 1M out at $1.60.
        assert!((price.cost(&usage) - (0.32 + 0.02 + 1.60)).abs() < EPS);
        // Claude: 1M prompt tokens of which 300k read from and 100k written to the cache.
        let haiku = p.get("anthropic/claude-haiku-4-5").expect("haiku");
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 10_000,
            cache_read_tokens: 300_000,
            cache_write_tokens: 100_000,
        };
        let expected = 0.6 * 1.00 + 0.3 * 0.10 + 0.1 * 1.25 + 0.01 * 5.00;
        assert!((haiku.cost(&usage) - expected).abs() < EPS);
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
        cfg.insert("ollama/mistral:7b".to_string(), Price::FREE);
        cfg.insert(
            "azure/prod-gpt4o".to_string(),
            Price {
                input: 2.5,
                output: 10.0,
                cache_read: Some(1.25),
                cache_write: None,
            },
        );
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
        assert_eq!(p.get("ollama/mistral:7b"), Some(Price::FREE));
        assert_eq!(p.get("azure/prod-gpt4o").map(|x| x.input), Some(2.5));
        assert_eq!(p.get("openai/o3").map(|x| x.input), Some(2.0));
    }
}
