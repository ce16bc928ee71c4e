//! Values of the LLM-provider rules (and the age key), in their vendors' formats.

use rand::Rng;

use super::super::{chars, ALNUM, HEX};
use super::util::{alnum, b64url, hex, pick, prefixed, v, Prefixed, BECH32_UPPER, LETTERS, V};

/// The rules whose value is a fixed prefix and a run of one charset: `(rule id, prefix,
/// charset, length, names)`.
#[rustfmt::skip]
const PREFIXED: &[Prefixed] = &[
    ("huggingface-token", "hf_", LETTERS, 34, &["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"]),
    ("huggingface-org-token", "api_org_", LETTERS, 34, &["HF_ORG_TOKEN"]),
    ("groq-api-key", "gsk_", ALNUM, 52, &["GROQ_API_KEY"]),
    ("replicate-api-token", "r8_", ALNUM, 37, &["REPLICATE_API_TOKEN"]),
    ("perplexity-api-key", "pplx-", ALNUM, 48, &["PERPLEXITY_API_KEY"]),
    ("xai-api-key", "xai-", ALNUM, 80, &["XAI_API_KEY"]),
    ("openrouter-api-key", "sk-or-v1-", HEX, 64, &["OPENROUTER_API_KEY"]),
    ("cohere-api-key", "", ALNUM, 40, &["COHERE_API_KEY", "CO_API_KEY"]),
    ("mistral-api-key", "", ALNUM, 32, &["MISTRAL_API_KEY"]),
    ("fireworks-api-key", "fw_", ALNUM, 24, &["FIREWORKS_API_KEY"]),
    ("deepseek-api-key", "sk-", HEX, 32, &["DEEPSEEK_API_KEY"]),
    ("wandb-api-key", "", HEX, 40, &["WANDB_API_KEY"]),
];

/// The value of rule `id`, or `None` when `id` is not one of this module's.
pub(super) fn make<R: Rng + ?Sized>(rng: &mut R, id: &str) -> Option<V> {
    if let Some(value) = prefixed(rng, PREFIXED, id) {
        return Some(value);
    }
    let r = rng;
    Some(match id {
        "openai-api-key" => v(
            format!("sk-{}T3BlbkFJ{}", alnum(r, 20), alnum(r, 20)),
            r,
            &["OPENAI_API_KEY"],
        ),
        "openai-project-key" | "openai-service-account-key" | "openai-admin-key" => {
            let kind = match id {
                "openai-project-key" => "proj",
                "openai-service-account-key" => "svcacct",
                _ => "admin",
            };
            let value = format!("sk-{kind}-{}T3BlbkFJ{}", b64url(r, 74), b64url(r, 74));
            v(value, r, &["OPENAI_API_KEY", "OPENAI_ADMIN_KEY"])
        }
        "anthropic-api-key" => v(
            format!("sk-ant-api03-{}AA", b64url(r, 93)),
            r,
            &["ANTHROPIC_API_KEY"],
        ),
        "anthropic-admin-key" => v(
            format!("sk-ant-admin01-{}AA", b64url(r, 93)),
            r,
            &["ANTHROPIC_ADMIN_KEY"],
        ),
        "anthropic-oauth-token" => {
            let kind = pick(r, &["oat", "ort"]);
            v(
                format!("sk-ant-{kind}01-{}AA", b64url(r, 93)),
                r,
                &["CLAUDE_CODE_OAUTH_TOKEN"],
            )
        }
        "together-api-key" => {
            let value = if r.random_bool(0.5) {
                hex(r, 64)
            } else {
                format!("tgp_v1_{}", b64url(r, 43))
            };
            v(value, r, &["TOGETHER_API_KEY"])
        }
        "langsmith-api-key" => {
            let kind = pick(r, &["pt", "sk"]);
            let value = format!("lsv2_{kind}_{}_{}", hex(r, 32), hex(r, 10));
            v(value, r, &["LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"])
        }
        "pinecone-api-key" => v(
            format!("pcsk_{}_{}", alnum(r, 5), alnum(r, 63)),
            r,
            &["PINECONE_API_KEY"],
        ),
        "elevenlabs-api-key" => {
            let value = if r.random_bool(0.5) {
                format!("sk_{}", hex(r, 48))
            } else {
                hex(r, 32)
            };
            v(value, r, &["ELEVENLABS_API_KEY", "XI_API_KEY"])
        }
        "age-secret-key" => {
            let value = format!("AGE-SECRET-KEY-1{}", chars(r, BECH32_UPPER, 58));
            v(value, r, &["AGE_SECRET_KEY", "SOPS_AGE_KEY"])
        }
        _ => return None,
    })
}
