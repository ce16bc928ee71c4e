//! What every HTTP client of ralph-loop shares, the model providers and the embedders alike:
//! the one [`retry`] policy, the wording of errors ([`text`]), and server-sent-event bodies
//! cut into whole lines before they are parsed ([`sse`]).

pub(crate) mod retry;
pub(crate) mod sse;
pub(crate) mod text;
