//! What every HTTP client of ralph-loop shares, the model providers and the embedders alike:
//! the one [`retry`] policy, and the wording of errors ([`text`]).

pub(crate) mod retry;
pub(crate) mod text;
