//! Prompt templates: one Markdown file per role under `prompts/`, compiled in (see
//! [`Role::info`]) and overridable from config. A template is a system part and a user part
//! separated by a line `<!-- user -->`; both are rendered with minijinja. A line `<!-- cache -->`
//! in the user part ends what stays the same from one call of the role to the next: the
//! bundled templates put the tests, related files and instructions first, so that providers
//! can serve that prefix from their prompt cache (see [`ChatMessage::cache_prefix`]).

use std::collections::BTreeMap;

use minijinja::Environment;
use serde::Serialize;

use crate::ports::llm::ChatMessage;
use crate::role::Role;

pub const SEPARATOR: &str = "<!-- user -->";
/// Ends the user part's stable prefix.
pub const CACHE_MARK: &str = "<!-- cache -->";
/// The Critic's second task: judging whether Chaos's failing tests expect what the target's
/// contract implies (`prompts/judge.md`, bundled).
pub const JUDGE: &str = include_str!("../../../prompts/judge.md");
/// Chaos's second task: turning a fast-check counterexample into a named regression test
/// (`prompts/replay.md`, bundled).
pub const REPLAY: &str = include_str!("../../../prompts/replay.md");

/// Why a template cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("a prompt template needs a line `{SEPARATOR}` between its system and user parts")]
    NoSeparator,
    /// It does not compile.
    #[error("{0}")]
    Syntax(String),
    /// It compiled but could not be rendered with a role's variables.
    #[error("{role} template: {message}")]
    Render { role: Role, message: String },
    #[error("no template for {0}")]
    Missing(Role),
}

/// Each model role's template: the bundled one unless config overrides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates(BTreeMap<Role, String>);

impl Default for Templates {
    fn default() -> Self {
        Self(
            Role::ALL
                .into_iter()
                .filter_map(|r| Some((r, r.info().template?.to_string())))
                .collect(),
        )
    }
}

impl Templates {
    pub fn get(&self, role: Role) -> Option<&str> {
        self.0.get(&role).map(String::as_str)
    }

    /// Replaces `role`'s template (a config override, already [checked](Self::check)).
    pub fn set(&mut self, role: Role, source: String) {
        self.0.insert(role, source);
    }

    /// Checks that a template splits into two parts and compiles; for config validation.
    pub fn check(source: &str) -> Result<(), TemplateError> {
        let (system, user) = split(source)?;
        let env = Environment::new();
        for part in [system, user] {
            env.template_from_str(part)
                .map_err(|e| TemplateError::Syntax(e.to_string()))?;
        }
        Ok(())
    }

    /// The system and user messages of `role` for `vars`.
    pub fn render<S: Serialize>(
        &self,
        role: Role,
        vars: &S,
    ) -> Result<[ChatMessage; 2], TemplateError> {
        let source = self.get(role).ok_or(TemplateError::Missing(role))?;
        render_source(role, source, vars)
    }
}

/// The system and user messages of a template's `source` for `vars`, rendered for `role`
/// (named in errors): for templates that are a role's second task, such as the Critic's
/// judgement of Chaos's tests ([`JUDGE`]).
pub fn render_source<S: Serialize>(
    role: Role,
    source: &str,
    vars: &S,
) -> Result<[ChatMessage; 2], TemplateError> {
    let (system, user) = split(source)?;
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    let render = |src: &str| -> Result<String, TemplateError> {
        env.render_str(src, vars)
            .map(|s| s.trim().to_string())
            .map_err(|e| TemplateError::Render {
                role,
                message: e.to_string(),
            })
    };
    let user = match user.split_once(CACHE_MARK) {
        Some((stable, rest)) => {
            let (stable, rest) = (render(stable)?, render(rest)?);
            let mut message = ChatMessage::user(match rest.is_empty() {
                true => stable.clone(),
                false => format!("{stable}\n\n{rest}"),
            });
            message.cache_prefix = stable.len();
            message
        }
        None => ChatMessage::user(render(user)?),
    };
    Ok([ChatMessage::system(render(system)?), user])
}

fn split(source: &str) -> Result<(&str, &str), TemplateError> {
    source
        .split_once(SEPARATOR)
        .ok_or(TemplateError::NoSeparator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_templates_compile() {
        let t = Templates::default();
        for role in Role::with_models() {
            Templates::check(t.get(role).expect("template")).expect("compiles");
        }
    }

    #[test]
    fn the_cache_mark_ends_the_stable_prefix() {
        let mut t = Templates::default();
        t.set(
            Role::Critic,
            "Review.\n<!-- user -->\n# Tests\n{{ tests }}\n<!-- cache -->\n# Proposal\n{{ proposal }}\n".into(),
        );
        let vars = serde_json::json!({"tests": "t1", "proposal": "p1"});
        let [system, user] = t.render(Role::Critic, &vars).expect("renders");
        assert_eq!(system.content, "Review.");
        assert_eq!(user.content, "# Tests\nt1\n\n# Proposal\np1");
        assert_eq!(&user.content[..user.cache_prefix], "# Tests\nt1");
        // The bundled templates all mark their prefix, and it holds the tests.
        let bundle = serde_json::json!({
            "iteration": 1, "target": {"path": "m.py", "language": "python", "content": "x"},
            "test_file": {"path": "test_m.py", "content": "def test(): pass"},
            "test_command": "pytest", "proposal": "y",
            "last_results": {"summary": "1 failed", "passed": false, "failing": ["t"], "failures": [], "omitted": 0, "output": "boom"},
            "layout": {"framework": "pytest", "language": "python", "file_name": "test_chaos_round_1.py", "import_hint": "import m"},
            "strategies": ["boundary", "property"], "round": 1, "max_rounds": 3,
        });
        for role in Role::with_models() {
            let [_, user] = Templates::default().render(role, &bundle).expect("renders");
            let stable = &user.content[..user.cache_prefix];
            assert!(stable.contains("def test(): pass"), "{role}: {stable}");
            assert!(
                !stable.contains("# Target"),
                "{role}: the target varies: {stable}"
            );
        }
        // The Critic's judgement of Chaos's tests too.
        let mut judged = bundle.clone();
        judged["suite"] = "def test_empty(): median([])".into();
        judged["failures"] = serde_json::json!([{"test": "c::test_empty", "message": "boom"}]);
        let [_, user] = render_source(Role::Critic, JUDGE, &judged).expect("renders");
        assert!(user.content[..user.cache_prefix].contains("def test(): pass"));
        assert!(
            user.content.contains("## c::test_empty"),
            "{}",
            user.content
        );
    }
}
