//! Prompt token counts before a call, for the budget check, with OpenAI's own BPE tables.
//!
//! The tables take a noticeable time to build (see `docs/providers.md`), so they are built once,
//! on first use, and [`TiktokenCounter::warm_up`] lets start-up build them on a background thread
//! while the run gathers its context. A count that arrives before the table is ready waits for it
//! rather than guessing, so a run's budget decisions do not depend on timing.

use std::sync::OnceLock;

use ralph_actors::llm::{ChatMessage, TokenCounter};
use tiktoken_rs::CoreBPE;

/// Tokens OpenAI adds around each message (`<|start|>{role}<|message|>...<|end|>`), not
/// counting the role's own token, which [`count_messages`] adds.
pub const TOKENS_PER_MESSAGE: u64 = 3;
/// Tokens that prime the reply (`<|start|>assistant<|message|>`).
pub const REPLY_PRIMER: u64 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// gpt-4o, gpt-4.1, gpt-5, o1, o3, o4 and, as the best guess, anything unknown.
    O200kBase,
    /// gpt-4 and gpt-3.5.
    Cl100kBase,
}

impl Encoding {
    /// The encoding of a model, named with or without its provider.
    pub fn for_model(model: &str) -> Encoding {
        let name = model.rsplit_once('/').map_or(model, |(_, m)| m);
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
            Encoding::O200kBase
        } else if name.starts_with("gpt-4")
            || name.starts_with("gpt-3.5")
            || name.starts_with("gpt-35")
        {
            Encoding::Cl100kBase
        } else {
            Encoding::O200kBase
        }
    }

    /// The table, built on first use. `None` only if the bundled data failed to load, which
    /// callers answer with a byte-count bound.
    fn bpe(self) -> Option<&'static CoreBPE> {
        static O200K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        let (cell, build): (_, fn() -> anyhow::Result<CoreBPE>) = match self {
            Encoding::O200kBase => (&O200K, tiktoken_rs::o200k_base),
            Encoding::Cl100kBase => (&CL100K, tiktoken_rs::cl100k_base),
        };
        cell.get_or_init(|| match build() {
            Ok(bpe) => Some(bpe),
            Err(e) => {
                tracing::warn!(
                    "cannot load the {self:?} token table ({e}); counting bytes instead"
                );
                None
            }
        })
        .as_ref()
    }
}

/// Counts tokens with tiktoken; implements the core's [`TokenCounter`].
#[derive(Debug, Default, Clone, Copy)]
pub struct TiktokenCounter;

impl TiktokenCounter {
    pub fn new() -> Self {
        Self
    }

    /// Builds the o200k table (the one every current OpenAI model uses) on a background thread,
    /// so the first count does not wait for it. Returns at once; calling it twice is harmless.
    /// `None` if no thread could be started: the first count then builds the table itself.
    pub fn warm_up() -> Option<std::thread::JoinHandle<()>> {
        std::thread::Builder::new()
            .name("tiktoken-warm-up".into())
            .spawn(|| {
                let _ = Encoding::O200kBase.bpe();
            })
            .map_err(|e| tracing::debug!("cannot start the token-table thread: {e}"))
            .ok()
    }

    /// Tokens of a bare text (a reply), without message framing.
    pub fn count_text(&self, model: &str, text: &str) -> u64 {
        match Encoding::for_model(model).bpe() {
            Some(bpe) => bpe.encode_ordinary(text).len() as u64,
            // Every BPE token covers at least one byte.
            None => text.len() as u64,
        }
    }
}

/// The chat framing of OpenAI's cookbook: per message the framing, the role (one token) and
/// the content; then the reply primer.
fn count_messages(model: &str, counter: &TiktokenCounter, messages: &[ChatMessage]) -> u64 {
    let framing = TOKENS_PER_MESSAGE + 1;
    messages
        .iter()
        .map(|m| framing + counter.count_text(model, &m.content))
        .sum::<u64>()
        + REPLY_PRIMER
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, model: &str, messages: &[ChatMessage]) -> u64 {
        count_messages(model, self, messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_actors::llm::ByteBoundCounter;
    use std::time::Instant;

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
    fn counts_like_openai() {
        let t0 = Instant::now();
        if let Some(h) = TiktokenCounter::warm_up() {
            h.join().expect("warm-up thread");
        }
        eprintln!(
            "o200k_base built in {:?} (this test binary's profile)",
            t0.elapsed()
        );
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
    fn special_token_text_is_ordinary_text() {
        // A file under repair may contain these strings; they must count, not panic.
        let c = TiktokenCounter::new();
        assert!(c.count_text("openai/gpt-4o", "<|endoftext|><|im_start|>") > 2);
    }
}
