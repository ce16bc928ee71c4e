//! What the MemoryVault knows: how a failing run is signed, how recalled attempts are
//! ranked, what the Artisan is shown of them, and how an attempt is anonymised for sharing.
//!
//! A fix attempt is recorded when an iteration ends: the failure it was trying to fix (its
//! normalised *signature*), what the Artisan changed (a diff) and whether the tests then passed.
//! The vault stores each attempt with an embedding of its signature; when tests fail, the
//! attempts whose signatures are most similar are recalled and shown to the Artisan. Storage
//! and embedding are ports ([`crate::ports::memory`]); the MemoryVault actor is
//! [`crate::roles::vault`].

pub mod anonymise;
pub mod attempt;
pub mod rank;
pub mod signature;
pub mod text;
pub mod view;
