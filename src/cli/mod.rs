//! The `ralph-loop` command line.

use std::path::PathBuf;

mod queue;
mod ui;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

pub use queue::{AgentArgs, BatchArgs, BatchOutput, InboxAction, InboxArgs, QueryArgs, QueryWhat};
pub use ui::{LimitArgs, TapeArgs, Ui, ViewArgs};

#[derive(Debug, Parser)]
#[command(
    name = "ralph-loop",
    version,
    about = "Fix a file until its tests pass: several LLMs, as actors, within a budget.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fix FILE until its tests pass (the default command).
    Run(Box<RunArgs>),
    /// Continue an interrupted session from where it stopped.
    Resume(ResumeArgs),
    /// Print the report of the last session (or of SESSION).
    Status(StatusArgs),
    /// Inspect and maintain the MemoryVault (`.ralph/memory.db`) of the project here.
    Vault(VaultArgs),
    /// LocalGuard: what would be masked before anything leaves the machine.
    Guard(GuardArgs),
    /// The queue of specs agent mode works through (`.ralph/inbox.jsonl`): add, list, remove,
    /// clear.
    Inbox(InboxArgs),
    /// Machine-readable views of the project's state, as JSON (`query inbox`).
    Query(QueryArgs),
    /// Work through the inbox: each spec planned, fixed by the loop and committed, until the
    /// inbox is empty or a limit is reached.
    Agent(AgentArgs),
    /// Fix many files or specs, one after another or N at once, within one total budget.
    Batch(BatchArgs),
    /// The coding-agent CLIs ralph-loop can run (Claude Code, Codex, Aider, ...): which are
    /// installed and signed in, and their models.
    Agents(AgentsArgs),
    /// Run a coding agent (Claude Code, Codex, Aider, ...) again and again on PROMPT, a fresh
    /// process each iteration, under the Regent, until its work is done and the tests agree.
    Loop(LoopArgs),
    /// The agent loop's circuit breaker (`.ralph/regent-state.json`).
    Breaker(BreakerArgs),
    /// The web dashboard of every session and agent loop of the project here, live and past,
    /// until Ctrl+C. It prints its URL, which carries the token every request needs.
    Dashboard(DashboardArgs),
    /// Play a session or agent loop back from its event log, in the TUI, the web dashboard or
    /// lines; or export it as one HTML page or an asciicast recording.
    Replay(ReplayArgs),
    /// The project's hooks and plugins: check them, trust them as they are (a new or changed
    /// hook does not run until you do), import them from Claude Code or Codex.
    Hooks(HooksArgs),
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
    /// The config file (default: ./ralph.config.yaml or the nearest one above); its `hooks:`
    /// and the `ralph-plugins.yaml` beside it are the hooks.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Check `hooks:` and `ralph-plugins.yaml` and list each hook: stages, kind, on_failure,
    /// and whether it is trusted. Exits 2 on an invalid file.
    Validate,
    /// Trust every hook of the project as it is now (or the ones named): its declaration and
    /// the files its command names, by content hash.
    Trust {
        /// Hook names (default: all).
        names: Vec<String>,
    },
    /// Print a `hooks:` section carrying over the hooks of Claude Code or Codex.
    Import {
        /// Whose hooks: `claude` (.claude/settings.json, .claude/settings.local.json) or
        /// `codex` (.codex/, ~/.codex/ or $CODEX_HOME: config.toml and hooks.json).
        #[arg(long, value_enum)]
        from: ImportFrom,
        /// Read this settings file instead (JSON, or TOML for Codex's config.toml).
        #[arg(long, value_name = "FILE")]
        settings: Option<PathBuf>,
    },
}

/// The coding agent whose hooks `hooks import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFrom {
    Claude,
    Codex,
}

#[derive(Debug, Clone, Args)]
pub struct LoopArgs {
    /// The prompt file (Markdown), read afresh each iteration.
    pub prompt: PathBuf,
    /// The agent to run (`ralph-loop agents list`; default: `regent.agent`). claude, codex,
    /// gemini, aider, opencode, qwen and claude-acp run in CI; agy, cursor, auggie and goose are
    /// unverified.
    #[arg(long)]
    pub agent: Option<String>,
    /// The agent's model (`ralph-loop agents models NAME`; default: `regent.model`, else its own).
    #[arg(long)]
    pub model: Option<String>,
    /// A Markdown task list (`- [ ] ID: task`) the agent works through and checks off.
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// The test command (default: `testing.command`, else detected from the manifest).
    #[arg(short = 't', long = "test-command")]
    pub test_command: Option<String>,
    /// Config file (default: ./ralph.config.yaml, else the nearest in a parent up to the git root).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum)]
    pub output: Option<OutputFormat>,
    #[command(flatten)]
    pub view: ViewArgs,
}

#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// The address to listen on (default 127.0.0.1 and a free port).
    #[arg(long, value_name = "ADDR")]
    pub ui_bind: Option<std::net::SocketAddr>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The run to play: its folder in `.ralph/` (`session-…`, `loop-…`) or the start of its id
    /// (default: the most recent).
    pub session: Option<String>,
    #[command(flatten)]
    pub view: ViewArgs,
    /// How fast: 2 plays twice as fast as it ran, 0 as fast as the view can take. A wait longer
    /// than 3 s plays as 3 s.
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub speed: f64,
    /// Write the run to FILE instead of playing it: `.html`, a page that stands alone (the
    /// dashboard's view, no server); `.cast`, an asciicast v3 recording of the TUI.
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BreakerArgs {
    #[command(subcommand)]
    pub action: BreakerAction,
}

#[derive(Debug, Subcommand)]
pub enum BreakerAction {
    /// Close the breaker and clear its counters; a running loop takes it before its next
    /// iteration.
    Reset,
}

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub action: AgentsAction,
    /// The config file (default: ./ralph.config.yaml or the nearest one above); its `agents:`
    /// section adds agents or replaces built-in ones.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum AgentsAction {
    /// Every agent ralph-loop knows: installed or not, signed in or not, its output format.
    List,
    /// The models agent NAME offers (listed by the agent and cached; `--refresh` asks again).
    Models {
        name: String,
        #[arg(long)]
        refresh: bool,
    },
    /// Define an agent in the config file's `agents:` (asked for on a terminal, from the flags
    /// otherwise).
    Add(Box<AgentAddArgs>),
}

/// A new agent's definition; on a terminal, what is not given is asked for.
#[derive(Debug, Clone, Default, Args)]
pub struct AgentAddArgs {
    /// Its name (letters, digits, `-` and `_`); a built-in's name replaces the built-in.
    pub name: Option<String>,
    /// What people call it.
    #[arg(long)]
    pub title: Option<String>,
    /// An executable that runs it (repeat for alternatives, by preference).
    #[arg(long = "binary", value_name = "NAME")]
    pub binaries: Vec<String>,
    /// An argument of a headless run, in order (repeat); `{model}` and `{prompt}` are filled in.
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// How the prompt reaches it: `stdin` (default) or `argument` (the `{prompt}` argument).
    #[arg(long, value_name = "VIA")]
    pub prompt: Option<String>,
    /// Its output: `plain`, `aider`, `claude-stream-json`, `codex-json`, `opencode-json`, `gemini-stream-json`, or `acp` (it speaks
    /// the Agent Client Protocol on its stdio).
    #[arg(long)]
    pub format: Option<String>,
    /// An environment variable whose presence means it is signed in (repeat).
    #[arg(long = "auth-env", value_name = "VAR")]
    pub auth_env: Vec<String>,
    /// A file whose presence means it is signed in (repeat; `~/` is the home directory).
    #[arg(long = "auth-file", value_name = "PATH")]
    pub auth_files: Vec<String>,
    /// An argument of the command that lists its models (repeat).
    #[arg(long = "models-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub models_args: Vec<String>,
    /// Its output reports the money spent.
    #[arg(long)]
    pub reports_cost: bool,
}

/// How a batch shows itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// A live view on stderr.
    Human,
    /// The final report as one JSON document on stdout.
    Json,
    /// Every event as one JSON line on stdout; the last is the final report.
    Jsonl,
}

/// What a run that ends without success leaves in the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailureArg {
    /// The best state reached: the version whose tests did best (the default).
    Best,
    /// The file as it was before the run.
    Original,
    /// The file as the run last left it.
    Last,
}

/// The flags of a run. Saved in the session folder so `resume` runs with the same ones.
#[derive(Debug, Clone, Default, Args, Serialize, Deserialize)]
pub struct RunArgs {
    /// The file to fix.
    #[arg(required = true)]
    pub file: Option<PathBuf>,
    /// The test command (default: config `testing.command`, else detected from the manifest).
    #[arg(short = 't', long = "test-command", alias = "test")]
    pub test_command: Option<String>,
    /// The test file shown to the models (default: found by naming convention).
    #[arg(short = 'f', long = "test-file", alias = "testFile")]
    pub test_file: Option<PathBuf>,
    /// A Markdown file of instructions (default: `<FILE>.prompt.md` when it exists).
    #[arg(short = 'p', long)]
    pub prompt: Option<PathBuf>,
    #[command(flatten)]
    #[serde(flatten)]
    pub limits: LimitArgs,
    /// Models per role: `librarian=gpt-mini,artisan=openai/gpt-4.1,critic=gpt-mini`, or one
    /// model for every role.
    #[arg(long)]
    pub models: Option<String>,
    /// Only this language's tests (typescript, javascript, python, rust); default: every language
    /// whose manifest is found, in turn.
    #[arg(long, value_name = "LANGUAGE")]
    pub language: Option<String>,
    /// Let the Artisan edit, delete or skip tests (otherwise such a proposal is rejected).
    #[arg(long)]
    pub allow_test_edits: bool,
    /// Chaos attacks a fix whose unit tests pass before the run may succeed (the default for
    /// ralph-loop; config `chaos.enabled`).
    #[arg(long, overrides_with = "no_adversarial")]
    #[serde(default)]
    pub adversarial: bool,
    /// No Chaos: the run succeeds when the unit tests pass.
    #[arg(long, overrides_with = "adversarial")]
    #[serde(default)]
    pub no_adversarial: bool,
    /// Tests and the Critic only: no Chaos, no coverage or mutation gate (`profile: quick`).
    #[arg(long, conflicts_with = "adversarial")]
    #[serde(default)]
    pub quick: bool,
    /// The profile a spec's front matter sets: it wins over `--quick` and the config.
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ralph_actors::settings::Profile>,
    /// What a run that ends without success leaves in the file (default: best, or the config's
    /// `on_failure`).
    #[arg(long, value_enum, value_name = "STATE")]
    #[serde(default)]
    pub on_failure: Option<OnFailureArg>,
    /// Config file (default: ./ralph.config.yaml, else the nearest in a parent up to the git root).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// How to show progress and the result (default: human, or the config's `output`).
    #[arg(long, value_enum)]
    pub output: Option<OutputFormat>,
    #[command(flatten)]
    #[serde(skip)]
    pub view: ViewArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub tape: TapeArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ResumeArgs {
    /// The session to continue (default: the last one that stopped short of success).
    pub session: Option<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Words for the Artisan, shown as the user's from the next iteration on.
    #[arg(long, value_name = "TEXT")]
    pub guidance: Option<String>,
    #[arg(long, value_enum)]
    pub output: Option<OutputFormat>,
    #[command(flatten)]
    pub view: ViewArgs,
}

#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// A session id (default: the most recent session).
    pub session: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VaultArgs {
    #[command(subcommand)]
    pub action: VaultAction,
    /// The config file (default: ./ralph.config.yaml or the nearest one above); it names the
    /// embedder and `memory.max_patterns`.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of text (stats, search).
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum VaultAction {
    /// Attempts, success rate, signatures, languages, models, size on disk.
    Stats,
    /// The recorded attempts whose failure reads most like TEXT.
    Search {
        text: String,
        /// How many to show.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Write every attempt to FILE, one JSON object per line (without vectors).
    Export { file: PathBuf },
    /// Add the attempts of FILE (an export) not already in the vault, embedded anew.
    Import { file: PathBuf },
    /// Delete the least useful attempts down to `memory.max_patterns` (or --max), then compact.
    Prune {
        #[arg(long)]
        max: Option<usize>,
    },
}

#[derive(Debug, Args)]
pub struct GuardArgs {
    #[command(subcommand)]
    pub action: GuardAction,
    /// The config file (default: ./ralph.config.yaml or the nearest one above); its
    /// `local_guard` section (rules, patterns, allowlist, kinds) is what is checked.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum GuardAction {
    /// Prints what would be masked in PATH... (files, or directories walked as git sees them,
    /// hidden files included): kind, file, line and a redacted preview. Exits 1 when it finds
    /// anything, 0 when not: usable as a pre-commit check.
    Scan {
        /// Files or directories (default: the current directory).
        paths: Vec<PathBuf>,
    },
}
