//! The agents ralph-loop knows without configuration. Each entry's flags follow its vendor's
//! documentation for headless use; `docs/agents.md` says which were run here and which were
//! not.

use super::definition::{AgentDef, Auth, ModelSource, PromptVia};
use super::gateway::GatewayDef;
use super::output::Format;
use crate::gateway::Provider;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A `gateway` section's variables.
fn vars(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Claude Code's sign-in, whether it runs as itself or behind its ACP adapter.
fn claude_auth() -> Auth {
    Auth {
        env: strings(&[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ]),
        files: strings(&["~/.claude/.credentials.json"]),
    }
}

/// Google's sign-in, shared by Antigravity and the Gemini CLI: a Gemini key or the Gemini
/// CLI's OAuth credentials.
fn google_auth() -> Auth {
    Auth {
        env: strings(&["GEMINI_API_KEY", "GOOGLE_API_KEY"]),
        files: strings(&["~/.gemini/oauth_creds.json"]),
    }
}

/// The built-ins whose definitions follow their vendors' documentation but that no test here
/// runs (their CLIs do not install from a registry this project's CI reaches): `agents list`,
/// `--help` and the README call them unverified. The others (`claude`, `codex`, `gemini`,
/// `aider`, `opencode`, `qwen`, `claude-acp`) run in CI (`tests/suite/real_agents.rs`).
pub const UNVERIFIED: &[&str] = &["agy", "cursor", "auggie", "goose"];

/// The built-ins that talk to their vendor's own service only: no setting points them at
/// another base URL, so no model gateway can stand between them and their model. `agents
/// list` says so.
pub const VENDOR_ONLY: &[&str] = &["agy", "cursor", "auggie"];

/// Every built-in agent, in the order `agents list` shows them.
pub fn builtins() -> Vec<AgentDef> {
    vec![
        claude(),
        codex(),
        agy(),
        gemini(),
        aider(),
        cursor(),
        auggie(),
        opencode(),
        goose(),
        qwen(),
        claude_acp(),
    ]
}

/// Claude Code, headless (`-p`) with its stream-json output; its calls go through the model
/// gateway.
fn claude() -> AgentDef {
    AgentDef {
        name: "claude".into(),
        title: "Claude Code".into(),
        binaries: strings(&["claude"]),
        auth: claude_auth(),
        // Its CLI has no command that lists models: the aliases it documents.
        models: ModelSource::Fixed {
            names: strings(&["sonnet", "opus", "haiku"]),
        },
        args: strings(&[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
            "--model",
            "{model}",
        ]),
        prompt: PromptVia::Stdin,
        format: Format::ClaudeStreamJson,
        reports_cost: true,
        gateway: Some(anthropic_gateway()),
    }
}

/// OpenAI's Codex CLI: `exec`, its JSON events on stdout, the prompt on stdin.
fn codex() -> AgentDef {
    AgentDef {
        name: "codex".into(),
        title: "OpenAI Codex CLI".into(),
        binaries: strings(&["codex"]),
        auth: Auth {
            env: strings(&["OPENAI_API_KEY", "CODEX_API_KEY"]),
            files: strings(&["~/.codex/auth.json"]),
        },
        // Its own catalog, as JSON (0.171.0; the models it knows how to drive).
        models: ModelSource::Command {
            args: strings(&["debug", "models"]),
        },
        args: strings(&[
            "exec",
            "--json",
            "--sandbox",
            "workspace-write",
            "--skip-git-repo-check",
            "--model",
            "{model}",
            "-",
        ]),
        prompt: PromptVia::Stdin,
        format: Format::CodexJson,
        reports_cost: false,
        gateway: Some(openai_responses_gateway()),
    }
}

/// Google Antigravity.
fn agy() -> AgentDef {
    AgentDef {
        name: "agy".into(),
        title: "Google Antigravity".into(),
        binaries: strings(&["agy"]),
        auth: google_auth(),
        models: ModelSource::Fixed {
            names: strings(&["gemini-3-pro", "gemini-2.5-pro", "gemini-2.5-flash"]),
        },
        args: strings(&["--model", "{model}", "-p", "{prompt}"]),
        prompt: PromptVia::Argument,
        format: Format::Plain,
        reports_cost: false,
        gateway: None,
    }
}

/// Gemini CLI (retired: see agy): headless (`-p`) with its stream-JSON output; its calls go
/// through the model gateway (`GOOGLE_GEMINI_BASE_URL`) when it is signed in with a Gemini key.
fn gemini() -> AgentDef {
    AgentDef {
        name: "gemini".into(),
        title: "Gemini CLI (retired: see agy)".into(),
        binaries: strings(&["gemini"]),
        auth: google_auth(),
        models: ModelSource::Fixed {
            names: strings(&["gemini-2.5-pro", "gemini-2.5-flash"]),
        },
        args: strings(&[
            "--yolo",
            "--output-format",
            "stream-json",
            "--model",
            "{model}",
            "-p",
            "{prompt}",
        ]),
        prompt: PromptVia::Argument,
        format: Format::GeminiStreamJson,
        reports_cost: false,
        gateway: Some(GatewayDef {
            provider: Provider::Gemini,
            env: vars(&[
                ("GOOGLE_GEMINI_BASE_URL", "{url}"),
                ("GEMINI_API_KEY", "{token}"),
            ]),
            args: Vec::new(),
            models: Vec::new(),
        }),
    }
}

/// Aider: one message a run (`--message`), its edits and costs read from its text.
fn aider() -> AgentDef {
    AgentDef {
        name: "aider".into(),
        title: "Aider".into(),
        binaries: strings(&["aider"]),
        auth: Auth {
            env: strings(&[
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "GEMINI_API_KEY",
                "DEEPSEEK_API_KEY",
                "OPENROUTER_API_KEY",
                "OPENAI_API_BASE",
            ]),
            files: strings(&["~/.aider.conf.yml"]),
        },
        models: ModelSource::Command {
            args: strings(&["--list-models", "/"]),
        },
        args: strings(&[
            "--yes-always",
            "--no-auto-commits",
            "--no-check-update",
            "--no-analytics",
            "--no-pretty",
            "--no-stream",
            "--no-show-model-warnings",
            "--model",
            "{model}",
            "--message",
            "{prompt}",
        ]),
        prompt: PromptVia::Argument,
        format: Format::Aider,
        reports_cost: false,
        gateway: Some(aider_gateway()),
    }
}

/// Cursor Agent.
fn cursor() -> AgentDef {
    AgentDef {
        name: "cursor".into(),
        title: "Cursor Agent".into(),
        binaries: strings(&["cursor-agent", "agent"]),
        auth: Auth {
            env: strings(&["CURSOR_API_KEY"]),
            files: strings(&["~/.cursor/cli-config.json"]),
        },
        models: ModelSource::Command {
            args: strings(&["--list-models"]),
        },
        args: strings(&[
            "-p",
            "--force",
            "--output-format",
            "text",
            "--model",
            "{model}",
            "{prompt}",
        ]),
        prompt: PromptVia::Argument,
        format: Format::Plain,
        reports_cost: false,
        gateway: None,
    }
}

/// Augment CLI.
fn auggie() -> AgentDef {
    AgentDef {
        name: "auggie".into(),
        title: "Augment CLI".into(),
        binaries: strings(&["auggie"]),
        auth: Auth {
            env: strings(&["AUGMENT_SESSION_AUTH"]),
            files: strings(&["~/.augment/session.json"]),
        },
        models: ModelSource::Command {
            args: strings(&["models", "list"]),
        },
        args: strings(&["--print", "--quiet", "--model", "{model}"]),
        prompt: PromptVia::Stdin,
        format: Format::Plain,
        reports_cost: false,
        gateway: None,
    }
}

/// OpenCode: `run` on its positional prompt, with its JSON events; its calls go through the model
/// gateway with an OpenAI model (`openai/…`, spoken over the Responses API), its provider's
/// base URL set by an inline config (`OPENCODE_CONFIG_CONTENT`, which outranks the user's own
/// files), its key from `OPENAI_API_KEY`.
fn opencode() -> AgentDef {
    AgentDef {
        name: "opencode".into(),
        title: "OpenCode".into(),
        binaries: strings(&["opencode"]),
        auth: Auth {
            env: strings(&["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]),
            files: strings(&["~/.local/share/opencode/auth.json"]),
        },
        models: ModelSource::Command {
            args: strings(&["models"]),
        },
        // `--auto`: a headless run has no one to ask, and asking refuses the tool call.
        args: strings(&[
            "run", "--auto", "--format", "json", "--model", "{model}", "{prompt}",
        ]),
        prompt: PromptVia::Argument,
        format: Format::OpenCodeJson,
        reports_cost: false,
        gateway: Some(GatewayDef {
            provider: Provider::Openai,
            env: vars(&[
                (
                    "OPENCODE_CONFIG_CONTENT",
                    r#"{"provider":{"openai":{"options":{"baseURL":"{url}/v1"}}}}"#,
                ),
                ("OPENAI_API_KEY", "{token}"),
            ]),
            args: Vec::new(),
            models: strings(&["openai/"]),
        }),
    }
}

/// goose.
fn goose() -> AgentDef {
    AgentDef {
        name: "goose".into(),
        title: "goose".into(),
        binaries: strings(&["goose"]),
        auth: Auth {
            env: Vec::new(),
            files: strings(&["~/.config/goose/config.yaml"]),
        },
        models: ModelSource::None,
        args: strings(&["run", "--no-session", "--text", "{prompt}"]),
        prompt: PromptVia::Argument,
        format: Format::Plain,
        reports_cost: false,
        gateway: None,
    }
}

/// The Agent Client Protocol: one backend for every agent that speaks it. Zed's adapter
/// of Claude Code (`@zed-industries/claude-code-acp` on npm) is the one built in; any
/// other ACP agent is an `agents:` entry with `format: acp`.
fn claude_acp() -> AgentDef {
    AgentDef {
        name: "claude-acp".into(),
        title: "Claude Code over ACP".into(),
        binaries: strings(&["claude-code-acp"]),
        auth: claude_auth(),
        models: ModelSource::None,
        args: Vec::new(),
        prompt: PromptVia::Stdin,
        format: Format::Acp,
        reports_cost: false,
        gateway: None,
    }
}

/// Qwen Code: headless on its positional prompt, with its stream-json output (Claude Code's
/// format); its calls go through the model gateway when it is signed in with an
/// OpenAI-compatible key (`OPENAI_API_KEY`, and `OPENAI_BASE_URL` for DashScope or another
/// compatible service), not with Qwen's own sign-in.
fn qwen() -> AgentDef {
    AgentDef {
        name: "qwen".into(),
        title: "Qwen Code".into(),
        binaries: strings(&["qwen"]),
        auth: Auth {
            env: strings(&["OPENAI_API_KEY", "DASHSCOPE_API_KEY"]),
            files: strings(&["~/.qwen/oauth_creds.json"]),
        },
        models: ModelSource::Fixed {
            names: strings(&["qwen3-coder-plus", "qwen3-coder-flash"]),
        },
        args: strings(&[
            "--yolo",
            "--output-format",
            "stream-json",
            "--model",
            "{model}",
            "{prompt}",
        ]),
        prompt: PromptVia::Argument,
        format: Format::ClaudeStreamJson,
        reports_cost: false,
        gateway: Some(GatewayDef {
            provider: Provider::Openai,
            env: vars(&[
                ("OPENAI_BASE_URL", "{url}/v1"),
                ("OPENAI_API_KEY", "{token}"),
            ]),
            args: strings(&["--auth-type", "openai"]),
            models: Vec::new(),
        }),
    }
}

/// Codex behind the gateway: a provider of its own defined by `-c` overrides (it reads its
/// provider from its config, not from `OPENAI_BASE_URL`), speaking the Responses API, whose key
/// it reads from a variable that holds the run's token.
fn openai_responses_gateway() -> GatewayDef {
    let provider = "model_providers.ralph-gateway";
    GatewayDef {
        provider: Provider::Openai,
        env: [("RALPH_GATEWAY_TOKEN".to_string(), "{token}".to_string())]
            .into_iter()
            .collect(),
        args: [
            "model_provider=\"ralph-gateway\"".to_string(),
            format!("{provider}.name=\"ralph-loop's model gateway\""),
            format!("{provider}.base_url=\"{{url}}/v1\""),
            format!("{provider}.env_key=\"RALPH_GATEWAY_TOKEN\""),
            format!("{provider}.wire_api=\"responses\""),
        ]
        .into_iter()
        .flat_map(|o| ["-c".to_string(), o])
        .collect(),
        models: Vec::new(),
    }
}

/// Aider behind the gateway when its model is OpenAI's: LiteLLM's OpenAI base URL and key
/// variables (Aider's `--openai-api-base` sets the same).
fn aider_gateway() -> GatewayDef {
    GatewayDef {
        provider: Provider::Openai,
        env: vars(&[
            ("OPENAI_API_BASE", "{url}/v1"),
            ("OPENAI_API_KEY", "{token}"),
        ]),
        args: Vec::new(),
        models: strings(&["openai/", "gpt-", "o1", "o3", "o4"]),
    }
}

/// Claude Code behind the gateway: its base URL and key variables (it sends the key as
/// `x-api-key`).
fn anthropic_gateway() -> GatewayDef {
    GatewayDef {
        provider: Provider::Anthropic,
        env: vars(&[
            ("ANTHROPIC_BASE_URL", "{url}"),
            ("ANTHROPIC_API_KEY", "{token}"),
        ]),
        args: Vec::new(),
        models: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn every_unverified_name_is_a_built_in() {
        let all = builtins();
        for name in UNVERIFIED.iter().chain(VENDOR_ONLY) {
            assert!(all.iter().any(|d| d.name == *name), "{name}");
        }
    }

    #[test]
    fn names_are_unique_and_each_runs_headless_on_its_prompt() {
        let all = builtins();
        let mut names: Vec<&str> = all.iter().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        for d in &all {
            let args = d.run_args("PROMPT", Some("M"));
            match d.prompt {
                PromptVia::Argument => assert!(args.contains(&"PROMPT".into()), "{}", d.name),
                PromptVia::Stdin => assert!(!args.contains(&"PROMPT".into()), "{}", d.name),
            }
            if d.args.iter().any(|a| a.contains("{model}")) {
                assert!(args.contains(&"M".into()), "{}", d.name);
                assert!(!d.run_args("PROMPT", None).contains(&"--model".into()));
            }
        }
    }
}
