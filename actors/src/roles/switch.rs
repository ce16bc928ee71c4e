//! [`ModelSwitch`]: a role's model as a person changes it while the run goes (the terminal
//! view's model picker). The [`Caller`](super::caller::Caller) reads it before every call, so a
//! switch takes effect from the role's next call; the role's own models stay behind the chosen
//! one as its fallbacks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::role::Role;

/// A model chosen for a role, and its context window where known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub model: String,
    pub context_window: Option<u32>,
}

/// The roles' models as chosen during the run; shared by the view that sets them and the run
/// that reads them. Empty: every role on its configured models.
#[derive(Debug, Clone, Default)]
pub struct ModelSwitch(Arc<Mutex<BTreeMap<Role, Chosen>>>);

impl ModelSwitch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `role` on `chosen` from its next call.
    pub fn set(&self, role: Role, chosen: Chosen) {
        self.lock().insert(role, chosen);
    }

    /// The model chosen for `role`, if one was.
    pub fn get(&self, role: Role) -> Option<Chosen> {
        self.lock().get(&role).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Role, Chosen>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
