//! Prompt templates: one Markdown file per role under `prompts/`, compiled in and overridable
//! from config. A template is a system part and a user part separated by a line `<!-- user -->`;
//! both are rendered with minijinja.

use minijinja::Environment;
use serde::Serialize;

use crate::llm::ChatMessage;
use crate::roles::Role;

pub const SEPARATOR: &str = "<!-- user -->";

const LIBRARIAN: &str = include_str!("../../prompts/librarian.md");
const ARTISAN: &str = include_str!("../../prompts/artisan.md");
const CRITIC: &str = include_str!("../../prompts/critic.md");

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    pub librarian: String,
    pub artisan: String,
    pub critic: String,
}

impl Default for Templates {
    fn default() -> Self {
        Self {
            librarian: LIBRARIAN.into(),
            artisan: ARTISAN.into(),
            critic: CRITIC.into(),
        }
    }
}

impl Templates {
    pub fn get(&self, role: Role) -> Option<&str> {
        match role {
            Role::Librarian => Some(&self.librarian),
            Role::Artisan => Some(&self.artisan),
            Role::Critic => Some(&self.critic),
            Role::Tester => None,
        }
    }

    /// Checks that a template splits into two parts and compiles; for config validation.
    pub fn check(source: &str) -> Result<(), String> {
        let (system, user) = split(source)?;
        let env = Environment::new();
        env.template_from_str(system).map_err(|e| e.to_string())?;
        env.template_from_str(user).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The system and user messages of `role` for `vars`.
    pub fn render<S: Serialize>(&self, role: Role, vars: &S) -> Result<[ChatMessage; 2], String> {
        let source = self
            .get(role)
            .ok_or_else(|| format!("no template for {role}"))?;
        let (system, user) = split(source)?;
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        let render = |src: &str| -> Result<String, String> {
            env.render_str(src, vars)
                .map(|s| s.trim().to_string())
                .map_err(|e| format!("{role} template: {e}"))
        };
        Ok([
            ChatMessage::system(render(system)?),
            ChatMessage::user(render(user)?),
        ])
    }
}

fn split(source: &str) -> Result<(&str, &str), String> {
    source.split_once(SEPARATOR).ok_or_else(|| {
        format!("a prompt template needs a line `{SEPARATOR}` between its system and user parts")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_templates_compile() {
        let t = Templates::default();
        for role in Role::MODEL_ROLES {
            Templates::check(t.get(role).expect("template")).expect("compiles");
        }
    }
}
