//! The commands that work through specs: `batch`, `inbox`, `query` and `agent`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::ui::{TapeArgs, ViewArgs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BatchOutput {
    /// A line as each entry starts and ends (and each run's live view at `--parallel 1`), then
    /// the summary, on stderr.
    Human,
    /// `batch-report.json` on stdout.
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct BatchArgs {
    /// Specs (`.md`, Markdown with front matter) and files to fix, in order; none: the
    /// config's `batch:` entries.
    #[arg(value_name = "SPEC|FILE")]
    pub entries: Vec<PathBuf>,
    /// Run up to N entries at once (two that touch the same file never run at once).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub parallel: usize,
    /// A cap in US dollars over every entry: every model call of every entry must fit in what is
    /// left, so no entry can overdraw it, even in parallel.
    #[arg(long, value_name = "USD")]
    pub total_budget: Option<f64>,
    /// Each entry's cost cap per target in US dollars, where the entry sets none.
    #[arg(long, value_name = "USD")]
    pub budget: Option<f64>,
    /// Each entry's iteration limit, where the entry sets none.
    #[arg(short = 'm', long = "max-iterations", value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Each entry's models (`role=model,...` or one model), where the entry sets none.
    #[arg(long)]
    pub models: Option<String>,
    /// Each entry's test command, where the entry sets none.
    #[arg(short = 't', long = "test-command")]
    pub test_command: Option<String>,
    /// Chaos off, where an entry does not turn it on.
    #[arg(long)]
    pub no_adversarial: bool,
    /// Every entry's runs check the tests and the Critic only (no Chaos, no coverage or
    /// mutation gate), where the entry sets no `profile` of its own.
    #[arg(long)]
    pub quick: bool,
    /// Config file (default: ./ralph.config.yaml, else the nearest in a parent up to the git
    /// root); its `batch:` section lists the entries run when none is named.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum)]
    pub output: Option<BatchOutput>,
    #[command(flatten)]
    pub view: ViewArgs,
    #[command(flatten)]
    pub tape: TapeArgs,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// What to do (default: list).
    #[command(subcommand)]
    pub action: Option<InboxAction>,
}

#[derive(Debug, Subcommand)]
pub enum InboxAction {
    /// Queue SPEC... (Markdown with YAML front matter), each as a new pending record.
    Add {
        #[arg(required = true, value_name = "SPEC")]
        specs: Vec<PathBuf>,
    },
    /// Every record: id, status, spec, and how long ago it was added, started or finished.
    List,
    /// Remove the record with this id (q-xxxx), or the records of this spec; never an active
    /// one.
    Remove {
        #[arg(value_name = "ID|SPEC")]
        what: String,
    },
    /// Remove every pending record (active, done and failed ones stay).
    Clear,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    #[command(subcommand)]
    pub what: QueryWhat,
}

#[derive(Debug, Subcommand)]
pub enum QueryWhat {
    /// Every inbox record, as a JSON array.
    Inbox,
}

#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// Stop after N specs are completed (counting those of an interrupted session resumed).
    #[arg(long, value_name = "N")]
    pub max_specs: Option<u32>,
    /// The session's spending cap in US dollars: every model call must fit in what is left,
    /// and the agent stops when it is spent.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop after N failed specs in a row (default 3, or the config's `agent.max_failures`).
    #[arg(long, value_name = "N")]
    pub max_failures: Option<u32>,
    /// Plan each pending spec and show its targets; run nothing, change nothing in the inbox
    /// or the tree (a plan made is kept for the real run).
    #[arg(long)]
    pub dry_run: bool,
    /// Start although tracked files have uncommitted changes (each spec commits or stashes only
    /// the files it changed).
    #[arg(long)]
    pub allow_dirty: bool,
    /// Run up to N specs at once, each in its own git worktree (never two on one file); their
    /// commits land in queue order.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub parallel: usize,
    /// When the inbox is empty, wait for specs added later (Ctrl+C stops) instead of ending.
    #[arg(long)]
    pub watch: bool,
    /// Every spec's runs check the tests and the Critic only (no Chaos, no coverage or
    /// mutation gate), where the spec sets no `profile` of its own.
    #[arg(long)]
    pub quick: bool,
    /// Config file (default: ./ralph.config.yaml, else the nearest in a parent up to the git
    /// root); a spec's own `config` wins for its runs.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
    #[command(flatten)]
    pub tape: TapeArgs,
}
