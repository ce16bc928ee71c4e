//! The roles of a run and the one table that describes them.
//!
//! Everything that differs between roles and is not the role's own behaviour lives in
//! [`Role::info`]: its name (in config keys, flags, reports), its bundled prompt template, the
//! reply budget it gets by default, and whether it may keep a conversation between calls. The
//! config layer, the templates and the settings read this table, so adding a role is one
//! variant here, one entry in [`Role::info`], one prompt file and one actor file.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Librarian,
    Artisan,
    Critic,
    Chaos,
    Tester,
}

/// What the rest of the program needs to know of a role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleInfo {
    /// The name in config keys, `--models`, events and reports.
    pub name: &'static str,
    /// The bundled prompt template (`prompts/<name>.md`); `None` for a role that calls no model.
    pub template: Option<&'static str>,
    /// The reply budget (`max_tokens`) when the config sets none.
    pub default_max_tokens: u32,
    /// Keeps its conversation between calls when `memory.context_reset_frequency` > 1.
    pub keeps_history: bool,
}

impl Role {
    /// Every role, in the order reports and the config list them.
    pub const ALL: [Role; 5] = [
        Role::Librarian,
        Role::Artisan,
        Role::Critic,
        Role::Chaos,
        Role::Tester,
    ];

    /// The table.
    pub const fn info(self) -> RoleInfo {
        match self {
            Role::Librarian => RoleInfo {
                name: "librarian",
                template: Some(include_str!("../../prompts/librarian.md")),
                default_max_tokens: 1024,
                keeps_history: false,
            },
            Role::Artisan => RoleInfo {
                name: "artisan",
                template: Some(include_str!("../../prompts/artisan.md")),
                default_max_tokens: 8192,
                keeps_history: true,
            },
            Role::Critic => RoleInfo {
                name: "critic",
                template: Some(include_str!("../../prompts/critic.md")),
                default_max_tokens: 1024,
                keeps_history: true,
            },
            Role::Chaos => RoleInfo {
                name: "chaos",
                template: Some(include_str!("../../prompts/chaos.md")),
                // A whole test file, as long as the Artisan's.
                default_max_tokens: 8192,
                keeps_history: false,
            },
            Role::Tester => RoleInfo {
                name: "tester",
                template: None,
                default_max_tokens: 0,
                keeps_history: false,
            },
        }
    }

    /// The roles that call a model (those with a prompt template), in table order.
    pub fn with_models() -> impl Iterator<Item = Role> {
        Role::ALL
            .into_iter()
            .filter(|r| r.info().template.is_some())
    }

    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    /// `librarian, artisan or critic`: the model roles, for error messages.
    pub fn model_role_list() -> String {
        let names: Vec<&str> = Role::with_models().map(Role::as_str).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses the name of a role that calls a model: the roles `--models` and `models:` accept.
impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::with_models()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown role `{s}` (expected {})", Role::model_role_list()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_model_roles_parse() {
        for role in Role::with_models() {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        let err = "tester"
            .parse::<Role>()
            .expect_err("the tester has no model");
        assert_eq!(
            err,
            "unknown role `tester` (expected librarian, artisan, critic or chaos)"
        );
    }

    #[test]
    fn serde_names_are_the_table_names() {
        for role in Role::ALL {
            let json = serde_json::to_string(&role).expect("serialises");
            assert_eq!(json, format!("\"{}\"", role.as_str()));
        }
    }
}
