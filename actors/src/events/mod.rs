//! The one stream of typed events a run emits, and the bus that carries it to every printer
//! and view: [`event`] (what happens), [`bus`] (stamped, ordered, to any number of
//! subscribers), [`snapshot`] (the fold a late subscriber starts from).

pub mod bus;
pub mod event;
pub mod snapshot;
