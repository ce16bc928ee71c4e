//! The MemoryVault's storage and embeddings: `.ralph/memory.db`, an embedded LanceDB database.
//!
//! - [`store`]: [`LanceStore`], attempts and vectors in one table per embedding model, written
//!   by several processes at once (`contention`: commit retries, the creation and write locks),
//!   a run's attempts recorded in a log beside the table (`pending`) until written into it in
//!   one append, recalled from the rows in memory (`rowset`, the vectors in one buffer) and their
//!   snapshot beside the table (`snapshot`), the table's Arrow columns (`columns`);
//! - [`embed`]: the offline hashed n-gram embedder and the provider embedders;
//! - opening the vault for a run ([`open()`], with [`vault_path`], [`project_id`] and the
//!   configured [`embedder`]; the stores open in the background, [`Opening`]), the housekeeping after it ([`housekeep()`]), and the JSON Lines
//!   form used by `vault export` / `vault import` ([`write_jsonl`], [`read_jsonl`], [`import`]);
//! - [`VaultError`], the one error of all of these.
//!
//! The actor that recalls and records is `ralph_actors::roles::vault::MemoryVault`; it sees these
//! only through the `VectorStore` and `Embedder` traits. The `ralph-loop vault` subcommand is
//! the binary's, with its other commands (`app::vault`): it reports in the binary's errors, which
//! wrap [`VaultError`], so it cannot live here.

mod columns;
mod contention;
pub mod embed;
mod error;
mod housekeep;
mod open;
mod opening;
mod pending;
mod rowset;
mod snapshot;
pub mod store;
mod transfer;

pub use crate::fsutil::project_id;
pub use error::{Result, VaultError};
pub use housekeep::{housekeep, Housekeeping};
pub use open::{embedder, open, vault_path, PROJECT_TABLE, SHARED_TABLE};
pub use opening::Opening;
pub use store::LanceStore;
pub use transfer::{import, read_jsonl, write_jsonl};
