//! Prompt token counts before a call, for the budget check.
//!
//! OpenAI models are counted exactly with OpenAI's own BPE vocabularies. Anthropic, Google and
//! most local models use tokenizers that are not published (or not for this crate), so for them
//! the count is an *estimate*: the `o200k_base` count times a safety factor per family
//! ([`Family::factor`]). The estimate only has to hold until the call returns: the ledger then
//! replaces it by the usage the provider reports, so the cost is exact and only the pre-call
//! reservation (and the context-use figure) depends on the factor.
//!
//! `o200k_base` (every current OpenAI model, and the basis of every estimate) is counted from the
//! compact table compiled into the binary (`ralph_guard::tokens`, read in place): the same
//! counts as `tiktoken-rs`, whose hash maps cost 44 MiB and a quarter of a second to build
//! (measured in issue 18). Only `cl100k_base` (gpt-4, gpt-3.5) still builds `tiktoken-rs`'s
//! table, once, at its first count.

use std::sync::OnceLock;

use ralph_actors::ports::llm::{ChatMessage, TokenCounter};
use tiktoken_rs::CoreBPE;

/// Tokens OpenAI adds around each message (`<|start|>{role}<|message|>...<|end|>`), not
/// counting the role's own token, which [`count_messages`] adds.
pub const TOKENS_PER_MESSAGE: u64 = 3;
/// Tokens that prime the reply (`<|start|>assistant<|message|>`).
pub const REPLY_PRIMER: u64 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// gpt-4o, gpt-4.1, gpt-5, o1, o3, o4, gpt-oss and, as the basis of every estimate, anything
    /// that is not an OpenAI model.
    O200kBase,
    /// gpt-4 and gpt-3.5.
    Cl100kBase,
}

/// The model name without its provider (`openai/gpt-4o` → `gpt-4o`; everything after the last
/// `/`, so `openai/Qwen/Qwen2.5-Coder` → `Qwen2.5-Coder`).
fn bare(model: &str) -> &str {
    model.rsplit_once('/').map_or(model, |(_, m)| m)
}

impl Encoding {
    /// OpenAI's encoding of a model, named with or without its provider; `None` when the name is
    /// not an OpenAI family.
    pub fn of_openai_model(model: &str) -> Option<Encoding> {
        let name = bare(model);
        let o200k = [
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "chatgpt-4o",
            "o1",
            "o3",
            "o4",
            "gpt-oss",
        ];
        if o200k.iter().any(|p| name.starts_with(p)) {
            Some(Encoding::O200kBase)
        } else if ["gpt-4", "gpt-3.5", "gpt-35"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            Some(Encoding::Cl100kBase)
        } else {
            None
        }
    }

    /// The table an estimate is made with: OpenAI's own for its models, else `o200k_base`.
    pub fn for_model(model: &str) -> Encoding {
        Family::for_model(model).encoding()
    }
}

/// `cl100k_base`'s tokenizer, built on first use. `None` only if the bundled data failed to
/// load, which callers answer with a byte-count bound.
fn cl100k() -> Option<&'static CoreBPE> {
    static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
    CL100K
        .get_or_init(|| match tiktoken_rs::cl100k_base() {
            Ok(bpe) => Some(bpe),
            Err(e) => {
                tracing::warn!(
                    "cannot load the cl100k_base token table ({e}); counting bytes instead"
                );
                None
            }
        })
        .as_ref()
}

/// How a model's tokens are counted: exactly (OpenAI) or as an estimate (everyone else).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// An OpenAI model, counted exactly with its own encoding.
    OpenAi(Encoding),
    /// Claude, by any route (`anthropic/…`, or `claude-…` behind an OpenAI-compatible proxy).
    Claude,
    /// Gemini and Gemma (Google's SentencePiece vocabulary).
    Gemini,
    /// Local and unknown models (Ollama, vLLM, llama.cpp: Qwen, Llama, DeepSeek, ...).
    Other,
}

impl Family {
    pub fn for_model(model: &str) -> Family {
        let provider = model.split_once('/').map(|(p, _)| p);
        let name = bare(model);
        let lower = name.to_ascii_lowercase();
        let starts = |prefixes: &[&str]| prefixes.iter().any(|p| lower.starts_with(p));
        match provider {
            Some("anthropic") => return Family::Claude,
            Some("gemini") => return Family::Gemini,
            _ => {}
        }
        if let Some(encoding) = Encoding::of_openai_model(name) {
            return Family::OpenAi(encoding);
        }
        if starts(&["claude"]) {
            Family::Claude
        } else if starts(&["gemini", "gemma"]) {
            Family::Gemini
        } else if provider == Some("azure") {
            // An Azure deployment serves an OpenAI model under a name the user chose: most are
            // gpt-4o, gpt-4.1 or gpt-5 (o200k_base), and cl100k_base (gpt-4, gpt-35-turbo)
            // counts code within a few per cent of it.
            Family::OpenAi(Encoding::O200kBase)
        } else {
            Family::Other
        }
    }

    pub fn encoding(self) -> Encoding {
        match self {
            Family::OpenAi(e) => e,
            _ => Encoding::O200kBase,
        }
    }

    /// What the `o200k_base` count is multiplied by. The tokenizers of Claude and Gemini are
    /// not public, so these are measured ratios with headroom, chosen to overcount: an
    /// overcount only reserves a little more budget before the call (the reported usage settles
    /// it afterwards), while an undercount beyond the ledger's 5 % margin could let a call
    /// cross the cap.
    pub fn factor(self) -> f64 {
        match self {
            Family::OpenAi(_) => 1.0,
            // Published comparisons of Claude's tokenizer with GPT-4o's (o200k) found about 16 %
            // more tokens for English prose and about 30 % more for Python; prompts here are
            // mostly code.
            Family::Claude => 1.30,
            // Gemini's 256k-entry SentencePiece vocabulary counts prose about like o200k, code
            // somewhat higher (digits are split one per token).
            Family::Gemini => 1.10,
            // Open models' vocabularies (Llama 3's 128k, Qwen's 151k, DeepSeek's 100k) are
            // smaller than o200k's and split code a little finer. Ollama calls are free, so this
            // only affects the context-use figure.
            Family::Other => 1.15,
        }
    }
}

/// Counts tokens with OpenAI's vocabularies; implements the core's [`TokenCounter`].
#[derive(Debug, Default, Clone, Copy)]
pub struct TiktokenCounter;

/// `raw` scaled by the family's factor, never above `bytes`: every token of a byte-level BPE or
/// byte-fallback SentencePiece vocabulary covers at least one byte, whatever the tokenizer.
fn scale(family: Family, raw: u64, bytes: u64) -> u64 {
    if family.factor() == 1.0 {
        return raw;
    }
    let scaled = (raw as f64 * family.factor()).ceil() as u64;
    scaled.min(bytes.max(raw))
}

impl TiktokenCounter {
    pub fn new() -> Self {
        Self
    }

    /// Tokens of a bare text (a reply), without message framing: exact for OpenAI models, an
    /// estimate for the others.
    pub fn count_text(&self, model: &str, text: &str) -> u64 {
        let family = Family::for_model(model);
        scale(
            family,
            raw_count(family.encoding(), text),
            text.len() as u64,
        )
    }
}

/// Tokens of `text` in `encoding`, unscaled.
fn raw_count(encoding: Encoding, text: &str) -> u64 {
    match encoding {
        Encoding::O200kBase => ralph_guard::tokens::count(text) as u64,
        Encoding::Cl100kBase => match cl100k() {
            Some(bpe) => bpe.encode_ordinary(text).len() as u64,
            // Every BPE token covers at least one byte.
            None => text.len() as u64,
        },
    }
}

/// The chat framing of OpenAI's cookbook: per message the framing, the role (one token) and
/// the content; then the reply primer. Other providers frame messages differently but with a
/// similar handful of tokens, which the family's factor covers.
fn count_messages(model: &str, messages: &[ChatMessage]) -> u64 {
    let family = Family::for_model(model);
    let encoding = family.encoding();
    let framing = TOKENS_PER_MESSAGE + 1;
    let raw = messages
        .iter()
        .map(|m| framing + raw_count(encoding, &m.content))
        .sum::<u64>()
        + REPLY_PRIMER;
    let bytes = messages
        .iter()
        .map(|m| framing + m.content.len() as u64)
        .sum::<u64>()
        + REPLY_PRIMER;
    scale(family, raw, bytes)
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, model: &str, messages: &[ChatMessage]) -> u64 {
        count_messages(model, messages)
    }

    /// Exact for OpenAI's own models, named as such: tiktoken is their tokenizer. Not for
    /// `gpt-oss` (served by local engines whose chat templates add their own tokens), nor for
    /// an Azure deployment under a name of its own, nor any other family (a ratio estimate).
    fn is_exact(&self, model: &str) -> bool {
        let name = bare(model);
        matches!(Family::for_model(model), Family::OpenAi(_))
            && Encoding::of_openai_model(name).is_some()
            && !name.starts_with("gpt-oss")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_actors::ports::llm::ByteBoundCounter;

    #[test]
    fn picks_the_encoding_by_family() {
        for m in [
            "openai/gpt-4o-mini",
            "gpt-4.1",
            "openai/gpt-5-nano",
            "o3",
            "o4-mini",
            "o1-preview",
            "ollama/qwen2.5-coder:7b",
        ] {
            assert_eq!(Encoding::for_model(m), Encoding::O200kBase, "{m}");
        }
        for m in ["openai/gpt-4", "gpt-4-turbo", "gpt-3.5-turbo"] {
            assert_eq!(Encoding::for_model(m), Encoding::Cl100kBase, "{m}");
        }
    }

    #[test]
    fn only_openai_s_own_models_count_exactly() {
        let c = TiktokenCounter::new();
        for m in ["openai/gpt-4.1", "gpt-4o-mini", "openai/o3", "azure/gpt-4o"] {
            assert!(c.is_exact(m), "{m}");
        }
        for m in [
            "anthropic/claude-sonnet-4-5",
            "gemini/gemini-2.5-flash",
            "ollama/qwen2.5-coder:7b",
            "openai/smollm2-135m",
            "openai/gpt-oss-20b",
            "azure/code-fixer",
        ] {
            assert!(!c.is_exact(m), "{m}");
        }
    }

    #[test]
    fn picks_the_family() {
        use Family::*;
        let cases = [
            ("openai/gpt-4.1", OpenAi(Encoding::O200kBase)),
            ("openai/gpt-4", OpenAi(Encoding::Cl100kBase)),
            ("anthropic/claude-sonnet-4-5-20250929", Claude),
            // Claude behind a LiteLLM proxy is still Claude.
            ("openai/claude-sonnet", Claude),
            ("gemini/gemini-2.5-pro", Gemini),
            ("openai/gemma-3-27b", Gemini),
            ("ollama/qwen2.5-coder:7b", Other),
            ("ollama/gpt-oss:20b", OpenAi(Encoding::O200kBase)),
            ("openai/Qwen/Qwen2.5-Coder-7B-Instruct", Other),
            ("azure/prod-chat", OpenAi(Encoding::O200kBase)),
            ("azure/gpt-35-turbo", OpenAi(Encoding::Cl100kBase)),
        ];
        for (model, family) in cases {
            assert_eq!(Family::for_model(model), family, "{model}");
        }
    }

    #[test]
    fn counts_like_openai() {
        let c = TiktokenCounter::new();
        // "hello world" is two tokens in both encodings.
        assert_eq!(c.count_text("openai/gpt-4o", "hello world"), 2);
        assert_eq!(c.count_text("openai/gpt-4", "hello world"), 2);
        let msgs = [
            ChatMessage::system("You are terse."),
            ChatMessage::user("hello world"),
        ];
        let n = c.count("openai/gpt-4.1", &msgs);
        let content = c.count_text("gpt-4.1", "You are terse.") + 2;
        assert_eq!(n, content + 2 * 4 + 3);
        // Never more than the byte bound the core falls back on.
        assert!(n <= ByteBoundCounter.count("openai/gpt-4.1", &msgs));
        assert_eq!(c.count("openai/gpt-4.1", &[]), REPLY_PRIMER);
    }

    #[test]
    fn estimates_other_families_from_o200k() {
        let c = TiktokenCounter::new();
        let code = "fn main() {\n    let total: u64 = (1..=10).map(|n| n * n).sum();\n    println!(\"{total}\");\n}\n";
        let exact = c.count_text("openai/gpt-4o", code);
        for (model, factor) in [
            ("anthropic/claude-sonnet-4-5", 1.30),
            ("gemini/gemini-2.5-flash", 1.10),
            ("ollama/qwen2.5-coder:7b", 1.15),
        ] {
            let estimate = c.count_text(model, code);
            assert_eq!(estimate, (exact as f64 * factor).ceil() as u64, "{model}");
        }
        let msgs = [ChatMessage::system("Fix it."), ChatMessage::user(code)];
        let openai = c.count("openai/gpt-4.1", &msgs);
        let claude = c.count("anthropic/claude-haiku-4-5", &msgs);
        assert_eq!(claude, (openai as f64 * 1.30).ceil() as u64);
        // Scaling never goes past the byte bound, which holds for any byte-level tokenizer.
        assert_eq!(c.count_text("anthropic/claude-opus-4-1", "a"), 1);
        let tiny = [ChatMessage::user("x")];
        assert!(
            c.count("anthropic/claude-opus-4-1", &tiny)
                <= ByteBoundCounter.count("anthropic/claude-opus-4-1", &tiny)
        );
    }

    /// `o200k_base` from the compact table counts as `tiktoken-rs` does, on a prompt as a run
    /// sends it: code, prose, a diff, a test failure.
    #[test]
    fn the_compact_table_counts_a_prompt_as_tiktoken_does() {
        let bpe = tiktoken_rs::o200k_base().expect("bundled table");
        let prompt = format!(
            "You fix failing tests.\n\n## src/providers/tokens.rs\n```rust\n{}\n```\n\
             --- a/median.js\n+++ b/median.js\n@@ -1,3 +1,3 @@\n-  return s[n/2];\n\
             +  return (s[n/2-1] + s[n/2]) / 2;\n\nAssertionError [ERR_ASSERTION]: 3 !== 2.5\n",
            include_str!("tokens.rs")
        );
        assert_eq!(
            raw_count(Encoding::O200kBase, &prompt),
            bpe.encode_ordinary(&prompt).len() as u64
        );
    }

    #[test]
    fn special_token_text_is_ordinary_text() {
        // A file under repair may contain these strings; they must count, not panic.
        let c = TiktokenCounter::new();
        assert!(c.count_text("openai/gpt-4o", "<|endoftext|><|im_start|>") > 2);
        assert!(c.count_text("anthropic/claude-sonnet-4-5", "<|endoftext|>") > 2);
    }
}
