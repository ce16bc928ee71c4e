//! What ralph-loop knows of one coding-agent CLI: how to find it, how to tell whether it is
//! signed in, how to list its models, and how to run it headless on a prompt with a model.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::gateway::GatewayDef;
use super::output::Format;

/// One agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentDef {
    /// The name `--agent` and `agent:NAME` take.
    pub name: String,
    /// What people call it.
    #[serde(default)]
    pub title: String,
    /// The executables that run it, by preference; the first found on PATH is used.
    pub binaries: Vec<String>,
    /// How to tell that it can work (signed in, a key set).
    #[serde(default)]
    pub auth: Auth,
    /// Where its models come from: written `fixed: {names: [...]}` or `command: {args: [...]}`.
    #[serde(
        default,
        deserialize_with = "model_source",
        serialize_with = "serde_yaml::with::singleton_map::serialize"
    )]
    pub models: ModelSource,
    /// The arguments of a headless run. `{model}` is replaced by the model; an argument that
    /// holds `{model}` is left out, with the one before it when that is a flag, when no model
    /// is chosen. `{prompt}` is replaced by the prompt when it goes as an argument.
    pub args: Vec<String>,
    /// How the prompt reaches it.
    #[serde(default)]
    pub prompt: PromptVia,
    /// Its output's format.
    pub format: Format,
    /// Whether its structured output reports the money spent (else it is computed from its
    /// token counts and the price table, or estimated from the text).
    #[serde(default)]
    pub reports_cost: bool,
    /// How to point it at the model gateway, so that LocalGuard and the budget cover its own
    /// calls; without it, it calls its provider itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayDef>,
}

/// How the prompt reaches the agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptVia {
    /// Written to its stdin, which is then closed.
    #[default]
    Stdin,
    /// The `{prompt}` argument.
    Argument,
}

/// How to tell that an agent can work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// Any of these set in the environment will do.
    #[serde(default)]
    pub env: Vec<String>,
    /// Any of these files existing will do (`~/` is the home directory).
    #[serde(default)]
    pub files: Vec<String>,
}

/// Where an agent's models come from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelSource {
    /// The agent lists none: it takes whatever its own config names.
    #[default]
    None,
    /// A command's output, one model per line (`- ` bullets and blank lines dropped).
    Command { args: Vec<String> },
    /// A fixed list (aliases the agent accepts).
    Fixed { names: Vec<String> },
}

/// `models:` as the docs write it, a map of one key (`fixed: {names: [...]}`), or as a YAML tag
/// (`!fixed`), which `agents add` wrote before.
fn model_source<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ModelSource, D::Error> {
    use serde::de::Error;
    use serde_yaml::value::{Tag, TaggedValue, Value};
    let value = Value::deserialize(d)?;
    let value = match value {
        Value::Mapping(map) if map.len() == 1 => {
            let mut entries = map.into_iter();
            match entries.next() {
                Some((Value::String(variant), inner)) => Value::Tagged(Box::new(TaggedValue {
                    tag: Tag::new(variant),
                    value: inner,
                })),
                Some((key, inner)) => {
                    let mut map = serde_yaml::Mapping::new();
                    map.insert(key, inner);
                    Value::Mapping(map)
                }
                None => Value::Null,
            }
        }
        other => other,
    };
    serde_yaml::from_value(value).map_err(D::Error::custom)
}

/// What `check` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum AuthState {
    /// Signed in: `how` says by what (an environment variable, a credentials file).
    Ready { how: String },
    /// None of its keys or credentials files was found.
    Missing { wanted: String },
    /// It has no check ralph-loop knows of.
    Unknown,
}

impl AgentDef {
    /// What people call it (`Claude Code`), else its name.
    pub fn title_or_name(&self) -> &str {
        if self.title.is_empty() {
            &self.name
        } else {
            &self.title
        }
    }

    /// The first of its executables on `path` (a PATH value).
    pub fn locate(&self, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
        self.binaries
            .iter()
            .find_map(|bin| crate::fsutil::which(bin, path))
    }

    /// Whether it can work, from `env` and the files under `home`.
    pub fn check(&self, env: &dyn Fn(&str) -> Option<String>, home: Option<&Path>) -> AuthState {
        if self.auth.env.is_empty() && self.auth.files.is_empty() {
            return AuthState::Unknown;
        }
        if let Some(var) = self
            .auth
            .env
            .iter()
            .find(|v| env(v).is_some_and(|value| !value.is_empty()))
        {
            return AuthState::Ready {
                how: format!("${var}"),
            };
        }
        for file in &self.auth.files {
            let path = match (file.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                (Some(_), None) => continue,
                (None, _) => PathBuf::from(file),
            };
            if path.exists() {
                return AuthState::Ready { how: file.clone() };
            }
        }
        let mut wanted: Vec<String> = self.auth.env.iter().map(|v| format!("${v}")).collect();
        wanted.extend(self.auth.files.iter().cloned());
        AuthState::Missing {
            wanted: wanted.join(" or "),
        }
    }

    /// What a definition from config must hold: a name of letters, digits, `-` and `_`, an
    /// executable, arguments, and `{prompt}` among them when the prompt goes as one.
    pub fn validate(&self) -> Result<(), String> {
        let name_ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            return Err("name: use letters, digits, `-` and `_`".into());
        }
        if self.binaries.is_empty() || self.binaries.iter().any(|b| b.trim().is_empty()) {
            return Err("binaries: name at least one executable".into());
        }
        if let Some(gateway) = &self.gateway {
            if gateway.args.iter().any(|a| a.contains("{token}")) {
                return Err("gateway.args: `{token}` goes in `gateway.env` only (a command line is readable by every user's `ps`)".into());
            }
        }
        let takes_prompt = self.args.iter().any(|a| a.contains("{prompt}"));
        match self.prompt {
            PromptVia::Argument if !takes_prompt => {
                Err("args: `prompt: argument` needs a `{prompt}` argument".into())
            }
            PromptVia::Stdin if takes_prompt => {
                Err("args: `{prompt}` is only for `prompt: argument`".into())
            }
            _ => Ok(()),
        }
    }

    /// The arguments of a run on `prompt` with `model`.
    pub fn run_args(&self, prompt: &str, model: Option<&str>) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            if arg.contains("{model}") {
                match model {
                    Some(m) => out.push(arg.replace("{model}", m)),
                    // The flag before a missing value goes with it.
                    None => {
                        if out
                            .last()
                            .is_some_and(|f| f.starts_with('-') && !f.contains('='))
                        {
                            out.pop();
                        }
                    }
                }
            } else if arg.contains("{prompt}") {
                if self.prompt == PromptVia::Argument {
                    out.push(arg.replace("{prompt}", prompt));
                }
            } else {
                out.push(arg.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn models_read_as_the_docs_write_them_and_as_a_tag_and_are_written_as_the_docs_do() {
        let read = |models: &str| -> AgentDef {
            serde_yaml::from_str(&format!(
                "name: m\ntitle: M\nbinaries: [m]\nargs: [run]\nformat: plain\n{models}"
            ))
            .unwrap()
        };
        let fixed = ModelSource::Fixed {
            names: vec!["small".into(), "large".into()],
        };
        assert_eq!(
            read("models:\n  fixed: { names: [small, large] }\n").models,
            fixed
        );
        assert_eq!(
            read("models: !fixed\n  names: [small, large]\n").models,
            fixed
        );
        assert_eq!(
            read("models:\n  command: { args: [models] }\n").models,
            ModelSource::Command {
                args: vec!["models".into()]
            }
        );
        assert_eq!(read("").models, ModelSource::None);
        let bad: Result<AgentDef, _> = serde_yaml::from_str(
            "name: m\ntitle: M\nbinaries: [m]\nargs: [run]\nformat: plain\nmodels:\n  listed: {}\n",
        );
        assert!(bad.unwrap_err().to_string().contains("listed"));
        let mut written = read("models:\n  fixed: { names: [small, large] }\n");
        written.models = fixed;
        let yaml = serde_yaml::to_string(&written).unwrap();
        assert!(yaml.contains("models:\n  fixed:\n    names:"), "{yaml}");
    }

    fn def() -> AgentDef {
        AgentDef {
            name: "x".into(),
            title: "X".into(),
            binaries: vec!["x-agent".into(), "x".into()],
            auth: Auth {
                env: vec!["X_KEY".into()],
                files: vec!["~/.x/creds.json".into()],
            },
            models: ModelSource::None,
            args: vec![
                "-p".into(),
                "--model".into(),
                "{model}".into(),
                "{prompt}".into(),
            ],
            prompt: PromptVia::Argument,
            format: Format::Plain,
            reports_cost: false,
            gateway: None,
        }
    }

    #[test]
    fn arguments_leave_out_a_missing_model_with_its_flag() {
        let d = def();
        assert_eq!(
            d.run_args("fix it", Some("m1")),
            ["-p", "--model", "m1", "fix it"]
        );
        assert_eq!(d.run_args("fix it", None), ["-p", "fix it"]);
        let stdin = AgentDef {
            prompt: PromptVia::Stdin,
            ..def()
        };
        assert_eq!(stdin.run_args("fix it", None), ["-p"]);
    }

    #[test]
    fn a_gateway_section_is_read_and_keeps_the_token_off_the_command_line() {
        let yaml = "name: mine\nbinaries: [my-agent]\nargs: []\nformat: plain\ngateway:\n  provider: openai\n  env: {MY_BASE: \"{url}/v1\", MY_KEY: \"{token}\"}\n";
        let d: AgentDef = serde_yaml::from_str(yaml).unwrap();
        let g = d.gateway.clone().unwrap();
        assert_eq!(g.provider, crate::gateway::Provider::Openai);
        assert_eq!(g.env["MY_KEY"], "{token}");
        assert_eq!(d.validate(), Ok(()));
        assert!(g.serves(None) && g.serves(Some("anything")));
        let only = crate::agents::gateway::GatewayDef {
            models: vec!["openai/".into()],
            ..g.clone()
        };
        assert!(only.serves(Some("openai/gpt-4.1")));
        assert!(!only.serves(Some("anthropic/claude-sonnet-4-5")) && !only.serves(None));
        let mut leaky = d.clone();
        leaky.gateway.as_mut().unwrap().args = vec!["--key={token}".into()];
        assert!(leaky.validate().unwrap_err().starts_with("gateway.args"));
    }

    #[test]
    fn the_first_executable_on_path_is_found() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("x"), "").unwrap();
        std::fs::write(b.join("x-agent"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(b.join("x-agent"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let path = std::env::join_paths([&a, &b]).unwrap();
        // `a/x` is not executable; `b/x-agent` is preferred anyway.
        assert_eq!(def().locate(Some(&path)), Some(b.join("x-agent")));
        assert_eq!(def().locate(None), None);
    }

    #[test]
    fn auth_is_ready_by_a_variable_or_a_file_and_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let none = |_: &str| None;
        assert_eq!(
            def().check(&none, Some(dir.path())),
            AuthState::Missing {
                wanted: "$X_KEY or ~/.x/creds.json".into()
            }
        );
        let set = |v: &str| (v == "X_KEY").then(|| "k".to_string());
        assert_eq!(
            def().check(&set, Some(dir.path())),
            AuthState::Ready {
                how: "$X_KEY".into()
            }
        );
        std::fs::create_dir_all(dir.path().join(".x")).unwrap();
        std::fs::write(dir.path().join(".x/creds.json"), "{}").unwrap();
        assert_eq!(
            def().check(&none, Some(dir.path())),
            AuthState::Ready {
                how: "~/.x/creds.json".into()
            }
        );
    }
}
