//! LocalGuard's engine: finds secrets and personal data in text, offline and fast, and masks
//! them reversibly, so that a model sees `<<SECRET_AWS_ACCESS_KEY_ID_1>>` where the code holds
//! the key, and the key is back in the file the fix is written to.
//!
//! Layout, from the leaves up (a module uses only those above it in this list):
//! - [`kind`]: what a finding is (its class, kind and place);
//! - [`entropy`], [`efficiency`]: how random a value is, by its characters and by how a
//!   tokenizer reads it; [`tokens`]: `o200k_base` token counts from a compact table;
//! - [`decode`]: base64, hex and URL-encoded runs, decoded when they read as text;
//! - [`rules`]: secret rules in gitleaks' TOML format, the bundled set and a team's file;
//! - [`pii`]: personal data (e-mail, phone, IP, cards, IBANs, national ids);
//! - [`placeholder`]: the placeholders' form, and spotting mangled ones (the detector skips our
//!   own);
//! - [`scan`]: the detector that runs all of them over a text;
//! - [`table`]: the run's values and placeholders, zeroised when dropped;
//! - [`literals`]: values already known, found wherever they appear, in one pass;
//! - [`config`]: what a guard is built from (mode, kinds, the user's rules and allowlist);
//! - [`mask`]: the [`Guard`]: mask, seal, check, unmask, and the counts a report shows;
//! - [`stream`]: unmasking a streamed reply, a placeholder cut between two deltas put back whole.
//! - [`corpus`] (feature `corpus`): generated planted secrets, personal data and ordinary code,
//!   for tests and benchmarks.

pub mod kind;
pub mod entropy;
pub mod efficiency;
pub mod tokens;
pub mod decode;
pub mod rules;
pub mod pii;
pub mod placeholder;
pub mod scan;
pub mod table;
pub mod literals;
pub mod config;
pub mod mask;
pub mod stream;
#[cfg(any(test, feature = "corpus"))]
pub mod corpus;

pub use config::{GuardConfig, Mode};
pub use kind::{Class, Finding, Kind};
pub use mask::{Guard, GuardError, Masked, Stats};
pub use stream::StreamUnmask;

#[cfg(test)]
mod tests;
