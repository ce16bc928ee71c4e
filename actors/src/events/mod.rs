//! The one stream of typed events a run emits, and the bus that carries it to every printer
//! and view: [`event`] (what happens), [`bus`] (stamped, ordered, to any number of
//! subscribers). What a view shows is folded once, by the view (`views::state` in the binary's
//! crate).

pub mod bus;
pub mod event;
