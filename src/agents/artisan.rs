//! An agent CLI as the fix loop's Artisan (`--models artisan=agent:claude`): each Artisan call
//! runs the agent once, supervised, in the project, on the prompt ralph-loop wrote (already
//! masked by LocalGuard). The agent edits the target in place; its edit becomes the Artisan's
//! proposal and the target is put back, so the Supervisor keeps everything else as with a
//! model: the Critic reads the diff before anything is written, then the tests, the breaker,
//! the budget and Chaos.
//!
//! Only the target may change. In a git repository, whatever else the agent changed (a file
//! it was not asked to touch, a new one) is undone after its run, and the reply says so.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use ralph_actors::policy::budget::Price;
use ralph_actors::ports::llm::{ChatMessage, ChatReply, GuardedRequest, LlmClient, LlmError};
use ralph_actors::schema::agent::AgentEvent;
use ralph_actors::schema::usage::Usage;
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::cost::Meter;
use super::definition::AgentDef;
use super::invoke::{texts, AgentEnding, Invocation, Limits};
use super::launch::launch;
use super::wire::{pointed, Lazy};
use crate::gateway::Gateway;
use crate::git::Repo;
use crate::process::groups::ProcessGroups;

/// The provider name of agent models: `agent/claude`, `agent/codex/gpt-5.5`.
pub const PROVIDER: &str = "agent";

/// The agent named by an `agent/NAME[/MODEL]` model, and the model it is asked to use.
pub fn split_model(model: &str) -> Option<(&str, Option<&str>)> {
    let rest = model.strip_prefix(PROVIDER)?.strip_prefix('/')?;
    Some(match rest.split_once('/') {
        Some((name, model)) => (name, Some(model)),
        None => (rest, None),
    })
}

/// The agent behind the Artisan's model.
pub struct AgentArtisan {
    pub def: AgentDef,
    pub binary: PathBuf,
    /// `agent/NAME[/MODEL]`, as the run's settings name it.
    pub model_name: String,
    pub root: PathBuf,
    pub target: PathBuf,
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    pub limits: Limits,
    pub reaper: Option<PathBuf>,
    pub groups: ProcessGroups,
    /// The agent model's price, for the cost of an agent that reports none.
    pub price: Price,
    pub retry: Retry,
    /// The project's repository: what the agent changes beyond the target is undone in it.
    pub repo: Option<Repo>,
    /// The model gateway its calls go through, when they do (see [`allowance`]).
    pub wire: Option<Lazy>,
}

/// How a crashed or hung agent is run again: `regent.max_retries`, after
/// `regent.retry_backoff_seconds` doubling up to `regent.max_backoff_seconds`.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub max_retries: u32,
    pub first: std::time::Duration,
    pub cap: std::time::Duration,
}

/// What each path `git status` lists held before the agent ran (`None`: it did not exist).
type Saved = BTreeMap<PathBuf, Option<Vec<u8>>>;

impl AgentArtisan {
    fn error(&self, message: String) -> LlmError {
        LlmError::Config {
            model: self.model_name.clone(),
            message,
        }
    }

    /// The prompt: the Artisan's messages as one text, then how to answer as an agent.
    fn prompt(&self, messages: &[ChatMessage]) -> String {
        let mut out = String::new();
        for m in messages {
            out.push_str(&m.content);
            out.push_str("\n\n");
        }
        let target = self.target.strip_prefix(&self.root).unwrap_or(&self.target);
        out.push_str(&format!(
            "## How to answer\nYou work in {root}. Make the change by editing `{target}` in place \
             with your tools. Change no other file: the tests and the rest of the project are \
             fixed, and any other change is undone. Do not commit. You need not repeat the file \
             in your reply: it is read from disk. End with a short summary of what you changed.\n",
            root = self.root.display(),
            target = target.display(),
        ));
        out
    }

    /// The paths `git status` lists (relative to the repository's root), with their contents:
    /// what the agent must leave as it found. `None` outside a git repository.
    fn dirty(&self) -> Option<Saved> {
        let repo = self.repo.as_ref()?;
        let paths = repo.dirty().ok()?;
        let read = |p: PathBuf| {
            let content = std::fs::read(repo.root.join(&p)).ok();
            (p, content)
        };
        Some(paths.into_iter().map(read).collect())
    }

    /// Undoes what the agent changed beyond the target and `.ralph/`; returns the paths undone.
    fn undo_others(&self, before: &Saved) -> Vec<String> {
        let (Some(repo), Some(now)) = (self.repo.as_ref(), self.dirty()) else {
            return Vec::new();
        };
        let target = self.target.strip_prefix(&repo.root).unwrap_or(&self.target);
        let ralph = self.root.join(crate::session::RALPH_DIR);
        let ralph = ralph.strip_prefix(&repo.root).unwrap_or(&ralph);
        let touched = now
            .keys()
            .chain(before.keys())
            .filter(|p| *p != target && !p.starts_with(ralph) && before.get(*p) != now.get(*p));
        let mut undone = Vec::new();
        for path in touched.collect::<std::collections::BTreeSet<_>>() {
            let file = repo.root.join(path);
            let restored = match before.get(path) {
                // As it was before the agent: its content, or not there.
                Some(Some(content)) => std::fs::write(&file, content).is_ok(),
                Some(None) => std::fs::remove_file(&file).is_ok(),
                // Clean before: as HEAD has it, or gone when HEAD has it not (a new file).
                None => repo.restore(path).is_ok() || std::fs::remove_file(&file).is_ok(),
            };
            match restored {
                true => undone.push(path.display().to_string()),
                false => tracing::warn!("could not undo the agent's change to {}", path.display()),
            }
        }
        undone
    }
}

/// The agent's last word: its result's text, else all it said.
fn final_text(events: &[AgentEvent]) -> String {
    let result = events.iter().rev().find_map(|e| match e {
        AgentEvent::Result { text, .. } if !text.trim().is_empty() => Some(text.clone()),
        _ => None,
    });
    result.unwrap_or_else(|| texts(events).join("\n"))
}

/// The Artisan's reply for an edited target: the new file in a fence longer than any run of
/// backticks in it, then the agent's summary without fence lines (the reply's one block is the
/// file).
fn reply_with(code: &str, summary: &str, undone: &[String]) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let summary: Vec<&str> = summary
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect();
    let mut reply = format!("{fence}\n{code}");
    if !code.ends_with('\n') {
        reply.push('\n');
    }
    reply.push_str(&format!("{fence}\n\n{}\n", summary.join("\n").trim()));
    if !undone.is_empty() {
        reply.push_str(&format!(
            "\nUndone (only the target may change): {}\n",
            undone.join(", ")
        ));
    }
    reply
}

/// What one run of the agent left.
struct Run {
    /// The target as the agent left it, when it changed.
    changed: Option<Vec<u8>>,
    text: String,
    undone: Vec<String>,
    /// Why it crashed or hung without an edit.
    failed: Option<String>,
}

impl AgentArtisan {
    /// One supervised run; the target is put back and other changes undone, whatever happened.
    async fn run_once(
        &self,
        prompt: &str,
        meter: &mut Meter,
        gateway: Option<&Gateway>,
    ) -> Result<Run, LlmError> {
        let original = std::fs::read(&self.target)
            .map_err(|e| self.error(format!("cannot read {}: {e}", self.target.display())))?;
        let before = self.dirty();
        let (_, model) = split_model(&self.model_name).unwrap_or((&self.def.name, None));
        let (def, env) = pointed(&self.def, &self.env, gateway);
        let invocation = Invocation {
            def,
            binary: self.binary.clone(),
            prompt: prompt.to_string(),
            model: model.map(str::to_owned),
            cwd: self.root.clone(),
            env,
            limits: self.limits,
            reaper: self.reaper.clone(),
            on_busy: None,
        };
        // Dropped (the run cancelled), the run's process group is killed with it.
        let outcome = launch(invocation, CancellationToken::new(), &self.groups, |e| {
            meter.see(e)
        })
        .await;
        let edited = std::fs::read(&self.target).ok();
        // The target as it was: the Supervisor writes the proposal once the Critic has read it.
        if edited.as_deref() != Some(original.as_slice()) {
            std::fs::write(&self.target, &original).map_err(|e| {
                self.error(format!("cannot restore {}: {e}", self.target.display()))
            })?;
        }
        let undone = before.map_or_else(Vec::new, |b| self.undo_others(&b));
        let outcome = outcome.map_err(|e| self.error(format!("could not be started: {e}")))?;
        let changed = edited.filter(|e| *e != original);
        let failed = (changed.is_none() && !outcome.finished()).then(|| {
            let why = match outcome.ending {
                AgentEnding::Hung => "hung (no output and no activity)".to_string(),
                AgentEnding::ActiveTimeout => "ran past regent.active_timeout_minutes".into(),
                AgentEnding::Exited(Some(code)) => format!("exited with code {code}"),
                other => format!("{other:?}"),
            };
            let tail: Vec<&str> = outcome.output.lines().rev().take(3).collect();
            format!(
                "agent {} {why} without editing the target: {}",
                self.def.name,
                tail.join(" | ")
            )
        });
        Ok(Run {
            changed,
            text: final_text(&outcome.events),
            undone,
            failed,
        })
    }
}

/// What an Artisan call's runs came to.
#[derive(Default)]
struct Spent {
    cost: f64,
    usage: Usage,
    estimated: bool,
    /// Calls the model gateway refused for the budget.
    refused: u32,
}

impl AgentArtisan {
    /// Runs the agent until it edits the target, or fails out of retries (a crashed or hung
    /// agent is run again after a backoff, as the Regent does), or the gateway refuses it a
    /// call (running it again could only be refused again).
    async fn runs(
        &self,
        prompt: &str,
        gateway: Option<&Arc<Gateway>>,
    ) -> Result<(Run, Spent), LlmError> {
        let mut backoff = Backoff::new(self.retry.first, self.retry.cap);
        let mut spent = Spent::default();
        let mut attempt = 0;
        loop {
            let mut meter = Meter::new(self.price, prompt);
            if let Some(gateway) = gateway {
                meter = meter.on_wire(gateway.clone());
            }
            let result = self
                .run_once(prompt, &mut meter, gateway.map(|g| &**g))
                .await;
            // Every run is paid for, a failed one too.
            let (run_cost, cost_estimated) = meter.cost();
            spent.cost += run_cost;
            spent.estimated |= cost_estimated || meter.tokens_estimated();
            spent.refused += meter.refused();
            let tokens = meter.tokens();
            spent.usage += Usage {
                input_tokens: tokens.input,
                output_tokens: tokens.output,
                cache_read_tokens: tokens.cached_input.min(tokens.input),
                cache_write_tokens: 0,
            };
            let run = result?;
            match &run.failed {
                Some(why) if attempt < self.retry.max_retries && spent.refused == 0 => {
                    attempt += 1;
                    let wait = backoff.next_delay();
                    tracing::warn!("{why}; running it again in {:.1}s", wait.as_secs_f64());
                    tokio::time::sleep(wait).await;
                }
                // Out of retries, the failure is the reply: a proposal without code, which the
                // Supervisor sends back, and whose cost is counted.
                _ => return Ok((run, spent)),
            }
        }
    }
}

#[async_trait::async_trait]
impl LlmClient for AgentArtisan {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let request = request.into_inner();
        let prompt = self.prompt(&request.messages);
        let gateway = match &self.wire {
            Some(wire) => Some(
                wire.gateway()
                    .await
                    .map_err(|e| self.error(e.to_string()))?,
            ),
            None => None,
        };
        let allowed = allowance(request.max_tokens, self.price);
        if let Some(gateway) = &gateway {
            // The agent's calls in this Artisan call draw on what the Supervisor reserved.
            gateway.begin_iteration(0.0, allowed);
        }
        let (run, spent) = self.runs(&prompt, gateway.as_ref()).await?;
        // Refused with no edit made, the call leaves nothing to go on with: the run stops.
        let budget_refused = (run.changed.is_none() && spent.refused > 0).then(|| {
            format!(
                "cost limit reached: the model gateway refused {} a call, ${:.4} spent of the ${:.4} the budget had left for the Artisan",
                self.def.title_or_name(),
                spent.cost,
                allowed.unwrap_or(spent.cost)
            )
        });
        let text = match run.changed {
            Some(code) => {
                let code = String::from_utf8(code)
                    .map_err(|_| self.error("left the target not UTF-8".into()))?;
                reply_with(&code, &run.text, &run.undone)
            }
            None => {
                let mut text = run.failed.unwrap_or(run.text);
                if !run.undone.is_empty() {
                    text.push_str(&format!(
                        "\n\nUndone (only the target may change): {}\n",
                        run.undone.join(", ")
                    ));
                }
                text
            }
        };
        Ok(ChatReply {
            text,
            usage: spent.usage,
            model: self.model_name.clone(),
            cost_usd: Some(spent.cost),
            // The agent's calls were settled on the gateway's ledger: `spent.cost` is what they came to.
            lost_attempts: 0,
            usage_estimated: spent.estimated,
            budget_refused,
        })
    }
}

/// What one Artisan call behind the gateway may spend: the output the Supervisor's ledger
/// granted it at the agent model's price. Behind the gateway the Artisan's model asks for all
/// the output there is ([`UNBOUNDED_OUTPUT`]), so the grant is what the budget has left, and the
/// agent's calls together can never cost more than was reserved for them. `None` (no cap but
/// the run's budget) for a model with no output price.
pub fn allowance(max_tokens: u32, price: Price) -> Option<f64> {
    (price.output > 0.0).then(|| max_tokens as f64 * price.output / 1_000_000.0)
}

/// The Artisan's output limit when an agent behind the gateway is its model: the ledger
/// lowers it to what the budget can pay, which is then the run's [`allowance`].
pub const UNBOUNDED_OUTPUT: u32 = u32::MAX;

/// Routes the Artisan's agent model to the agent and every other model to the providers.
pub struct WithAgent {
    pub agent: AgentArtisan,
    pub models: std::sync::Arc<dyn LlmClient>,
}

#[async_trait::async_trait]
impl LlmClient for WithAgent {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        match split_model(request.model()) {
            Some(_) => self.agent.complete(request).await,
            None => self.models.complete(request).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_actors::prompt::reply::extract_code;

    #[test]
    fn agent_models_split_into_agent_and_model() {
        assert_eq!(split_model("agent/claude"), Some(("claude", None)));
        assert_eq!(
            split_model("agent/codex/gpt-5.5"),
            Some(("codex", Some("gpt-5.5")))
        );
        assert_eq!(split_model("openai/gpt-4.1"), None);
    }

    #[test]
    fn the_reply_s_one_block_is_the_edited_file() {
        let code = "x = 1\n# a ``` fence inside\ny = 2\n";
        let reply = reply_with(
            code,
            "Changed x.\n```python\nlonger block that is not the file, longer than it\n```",
            &["notes.txt".into()],
        );
        assert_eq!(extract_code(&reply).as_deref(), Some(code));
        assert!(reply.contains("Undone (only the target may change): notes.txt"));
    }
}
