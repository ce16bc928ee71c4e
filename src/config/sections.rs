//! The file's top level ([`Config`]) and the sections that are plain settings: budgets, memory,
//! the circuit breaker, critic, librarian, chaos, testing, success criteria, linting, sandbox and
//! output.
//! The sections keyed by role are in `roles`, the providers' in `providers`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ralph_actors::policy::budget::Price;
use ralph_actors::settings::{Analyze, ChaosSettings, CriticMode, OnFailure, Profile, Strategy};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::checks::{
    analyze_mode, at_least_one, context_share, must_be_true, non_empty_list, opt_at_least_one_u64,
    opt_at_least_one_usize, opt_directory, opt_language, opt_non_empty, opt_positive, opt_url,
    positive, price_map, similarity, Text,
};
use super::gate::{coverage_gate, mutation_gate, Gate};
use super::guard::LocalGuardConfig;
use super::providers::{provider_map, ProviderConfig};
use super::roles::{Models, Prompts};
use crate::models;

/// The whole file. Every section may be left out; what is left out keeps its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub models: Models,
    /// Provider name (one of [`models::PROVIDERS`]) → its connection settings.
    #[serde(deserialize_with = "provider_map")]
    pub providers: BTreeMap<String, ProviderConfig>,
    pub budgets: Budgets,
    pub memory: Memory,
    pub circuit_breaker: CircuitBreaker,
    pub critic: CriticConfig,
    pub librarian: LibrarianConfig,
    pub chaos: ChaosConfig,
    pub local_guard: LocalGuardConfig,
    pub testing: Testing,
    pub success_criteria: SuccessCriteria,
    /// `quick`: the tests and the Critic only, no Chaos and no gates (`--quick`).
    pub profile: Profile,
    pub linting: Linting,
    pub sandbox: SandboxConfig,
    pub agent: AgentConfig,
    /// Coding-agent CLIs beyond the built-in ones, or replacing one of the same name.
    pub agents: Vec<crate::agents::AgentDef>,
    /// `ralph-loop loop`: the Regent's supervision of the agent, its breaker and exit gate.
    pub regent: super::regent::RegentConfig,
    /// `ralph-loop loop`: its commits and pushes.
    pub git: super::regent::GitConfig,
    /// `ralph-loop loop`: when a project is too new to be tested.
    pub build: super::regent::BuildConfig,
    /// The entries of `ralph-loop batch` without arguments, in order.
    pub batch: Vec<super::batch::BatchEntry>,
    /// `provider/model` → price, over the bundled table. Keys given as aliases are canonicalised.
    #[serde(deserialize_with = "price_map")]
    pub prices: BTreeMap<String, Price>,
    pub prompts: Prompts,
    pub output: Output,
    /// What a run that ends without success leaves in the target.
    #[serde(deserialize_with = "on_failure")]
    pub on_failure: OnFailure,
    /// Commands run at the fix loop's stages (see `docs/plugins.md`).
    /// Keyed by stage name (checked by `hooks::check_section`, so an error names the key).
    pub hooks: BTreeMap<String, Vec<super::hooks::HookEntry>>,
    /// The directory of the file this was loaded from, `None` for built-in defaults. `load`
    /// has already resolved every relative path of the file against it.
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            models: Models::default(),
            providers: models::AVAILABLE
                .iter()
                .map(|p| (p.to_string(), ProviderConfig::default_for(p)))
                .collect(),
            budgets: Budgets::default(),
            memory: Memory::default(),
            circuit_breaker: CircuitBreaker::default(),
            critic: CriticConfig::default(),
            librarian: LibrarianConfig::default(),
            chaos: ChaosConfig::default(),
            local_guard: LocalGuardConfig::default(),
            testing: Testing::default(),
            success_criteria: SuccessCriteria::default(),
            profile: Profile::Full,
            linting: Linting::default(),
            sandbox: SandboxConfig::default(),
            agent: AgentConfig::default(),
            agents: Vec::new(),
            regent: super::regent::RegentConfig::default(),
            git: super::regent::GitConfig::default(),
            build: super::regent::BuildConfig::default(),
            batch: Vec::new(),
            prices: BTreeMap::new(),
            prompts: Prompts::default(),
            output: Output::default(),
            on_failure: OnFailure::Best,
            hooks: BTreeMap::new(),
            base_dir: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budgets {
    #[serde(deserialize_with = "at_least_one")]
    pub max_iterations: u32,
    #[serde(deserialize_with = "positive")]
    pub max_cost_usd: f64,
    /// `None`: no time limit.
    #[serde(deserialize_with = "opt_positive")]
    pub max_duration_minutes: Option<f64>,
    /// Lets a run call models with no known price (counted at $0 unless the provider reports a
    /// cost); without it such a run is refused at start, since the budget could not bound it.
    pub allow_unpriced: bool,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            max_iterations: 30,
            max_cost_usd: 2.0,
            max_duration_minutes: None,
            allow_unpriced: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Memory {
    #[serde(deserialize_with = "at_least_one")]
    pub context_reset_frequency: u32,
    /// The MemoryVault (`.ralph/memory.db`): recall earlier fix attempts and record new ones.
    pub enabled: bool,
    /// Cosine similarity a recorded failure needs to be recalled.
    #[serde(deserialize_with = "similarity")]
    pub similarity_threshold: f32,
    /// Attempts shown to the Artisan at most.
    #[serde(deserialize_with = "at_least_one")]
    pub max_recall: usize,
    /// Attempts kept in the vault; the least useful are pruned after a run.
    #[serde(deserialize_with = "at_least_one")]
    pub max_patterns: usize,
    pub embedder: EmbedderConfig,
    /// Export anonymised successful fixes to `global_uri` and recall others' from it.
    pub global_sharing: bool,
    /// A directory shared between projects (or machines, on a shared file system).
    #[serde(deserialize_with = "opt_directory")]
    pub global_uri: Option<String>,
}

impl Default for Memory {
    fn default() -> Self {
        Self {
            context_reset_frequency: 1,
            enabled: true,
            similarity_threshold: 0.85,
            max_recall: 5,
            max_patterns: 1000,
            embedder: EmbedderConfig::default(),
            global_sharing: false,
            global_uri: None,
        }
    }
}

/// Which model turns failure signatures into vectors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// Hashed character n-grams: offline, no download, stable across versions.
    #[default]
    Hashed,
    /// `/v1/embeddings` of OpenAI or any OpenAI-compatible server.
    Openai,
    /// Ollama's `/api/embed`.
    Ollama,
    /// Gemini's `embedContent` (batched).
    Gemini,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedderConfig {
    pub provider: EmbedderKind,
    /// The embedding model (`text-embedding-3-small`, `nomic-embed-text`, `gemini-embedding-001`);
    /// each provider has a default.
    #[serde(deserialize_with = "opt_non_empty")]
    pub model: Option<String>,
    /// `None`: `providers.<provider>.base_url`, else the provider's public endpoint.
    #[serde(deserialize_with = "opt_url")]
    pub base_url: Option<String>,
    /// `None`: `providers.<provider>.api_key_env`, else the provider's standard variable.
    #[serde(deserialize_with = "opt_non_empty")]
    pub api_key_env: Option<String>,
    /// The vector length: the hashed embedder's buckets (256), or the dimension a provider
    /// model is asked for; needed for a provider model ralph-loop does not know.
    #[serde(deserialize_with = "opt_at_least_one_usize")]
    pub dims: Option<usize>,
    #[serde(deserialize_with = "at_least_one")]
    pub timeout_seconds: u64,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        Self {
            provider: EmbedderKind::Hashed,
            model: None,
            base_url: None,
            api_key_env: None,
            dims: None,
            timeout_seconds: 30,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CircuitBreaker {
    #[serde(deserialize_with = "at_least_one")]
    pub entropy_threshold: u32,
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        Self {
            entropy_threshold: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CriticConfig {
    /// `false` is `mode: off`, whatever `mode` says.
    pub enabled: bool,
    /// When the review runs and what it decides: before the tests (`gate`), beside them and
    /// binding (`binding`) or advising (`parallel`), `off`, or `auto`: `binding` when the tests
    /// take longer than a review, else `parallel`.
    pub mode: CriticMode,
    pub max_rejections: u32,
}

impl Default for CriticConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            mode: CriticMode::Auto,
            max_rejections: 2,
        }
    }
}

impl CriticConfig {
    /// The mode a run uses: `enabled: false` turns the Critic off.
    pub fn effective_mode(&self) -> CriticMode {
        if self.enabled {
            self.mode
        } else {
            CriticMode::Off
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LibrarianConfig {
    /// When the Librarian asks its model for an analysis of the last failure.
    #[serde(deserialize_with = "analyze_mode")]
    pub analyze: Analyze,
    /// The share of the Artisan's context window the project's files may fill.
    #[serde(deserialize_with = "context_share")]
    pub context_share: f64,
    /// The Artisan's call waits for the analysis of its iteration (the behaviour before issue
    /// 45); by default the analysis runs beside it and reaches its next call.
    pub wait_for_analysis: bool,
}

impl Default for LibrarianConfig {
    fn default() -> Self {
        Self {
            analyze: Analyze::Auto,
            context_share: 0.25,
            wait_for_analysis: false,
        }
    }
}

/// Chaos, the adversary that attacks a fix whose unit tests pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChaosConfig {
    /// On for `ralph-loop`, off for the `micro-agent` binary; `--adversarial` /
    /// `--no-adversarial` override it.
    pub enabled: bool,
    /// What Chaos tries: `boundary`, `property`, `concurrency` (the default), `mutation`.
    #[serde(deserialize_with = "non_empty_list")]
    pub strategies: Vec<Strategy>,
    /// Rounds at most: each a new attack, or a re-run of the findings a fix still fails.
    #[serde(deserialize_with = "at_least_one")]
    pub max_rounds: u32,
    /// Repairs of a test file that cannot run, per round.
    pub max_repairs: u32,
    /// The longest one mutation run may take.
    #[serde(deserialize_with = "at_least_one")]
    pub mutation_timeout_seconds: u64,
    /// On success, add Chaos's accepted test files to the project beside its unit tests.
    pub keep_tests: bool,
}

impl Default for ChaosConfig {
    fn default() -> Self {
        let core = ChaosSettings::default();
        Self {
            enabled: core.enabled,
            strategies: core.strategies,
            max_rounds: core.max_rounds,
            max_repairs: core.max_repairs,
            mutation_timeout_seconds: core.mutation_timeout.as_secs(),
            keep_tests: core.keep_tests,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Testing {
    /// `None`: detected from the project manifest.
    #[serde(deserialize_with = "opt_non_empty")]
    pub command: Option<String>,
    pub test_file: Option<PathBuf>,
    pub prompt_file: Option<PathBuf>,
    #[serde(deserialize_with = "at_least_one")]
    pub timeout_seconds: u64,
    #[serde(deserialize_with = "at_least_one")]
    pub max_output_bytes: usize,
    #[serde(deserialize_with = "at_least_one")]
    pub prompt_output_bytes: usize,
    /// `typescript`, `javascript`, `python` or `rust`: only that language's tests run. `None`:
    /// every language found in the project's manifests, in turn.
    #[serde(deserialize_with = "opt_language")]
    pub language: Option<String>,
    /// Re-runs of a failed test run; a test that fails and then passes is FLAKY.
    pub flaky_retries: u32,
    /// Let the Artisan edit, delete or skip tests.
    pub allow_test_edits: bool,
    /// How `ralph-loop loop` judges the tests: `gate` (all must pass), `tdd` (no regression
    /// against a baseline) or `report` (record only). The fix loop always needs them all to
    /// pass.
    pub mode: super::regent::TestMode,
    /// `tdd`: the baseline's file, relative to the config file.
    pub baseline_file: PathBuf,
    pub baseline_scope: super::regent::BaselineScope,
}

impl Default for Testing {
    fn default() -> Self {
        Self {
            command: None,
            test_file: None,
            prompt_file: None,
            timeout_seconds: 300,
            max_output_bytes: 1024 * 1024,
            prompt_output_bytes: 12 * 1024,
            language: None,
            flaky_retries: 0,
            allow_test_edits: false,
            mode: super::regent::TestMode::Gate,
            baseline_file: PathBuf::from(".ralph/test_baseline.json"),
            baseline_scope: super::regent::BaselineScope::Global,
        }
    }
}

/// When a run has succeeded. Every criterion set must be met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SuccessCriteria {
    /// Always required; the key exists so a config may say so.
    #[serde(deserialize_with = "must_be_true")]
    pub tests_pass: bool,
    /// Percent of the lines the run changed that the tests (Chaos's passing files counting)
    /// run, 0 to 100 (90 by default); `null`: coverage is not measured. With Chaos off, a
    /// threshold the config sets is judged on each test run's line coverage instead.
    #[serde(deserialize_with = "coverage_gate")]
    pub coverage_threshold: Gate,
    /// The most linter errors allowed; `None`: the linter does not run.
    pub linter_errors: Option<u32>,
    /// While Chaos is on, success needs every adversarial test it found failing (and the
    /// Critic kept) to pass; `false` reports Chaos's findings without fixing them.
    pub adversarial_tests_pass: bool,
    /// The operational mutation score (percent, 70 to 100; 80 by default) of the changed lines
    /// success needs while Chaos is on. `null`: mutation testing runs only when
    /// `chaos.strategies` lists it.
    #[serde(deserialize_with = "mutation_gate")]
    pub mutation_score_min: Gate,
}

impl Default for SuccessCriteria {
    fn default() -> Self {
        Self {
            tests_pass: true,
            coverage_threshold: Gate::default_at(90.0),
            linter_errors: None,
            adversarial_tests_pass: true,
            mutation_score_min: Gate::default_at(80.0),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Linting {
    /// The linter command; `None`: eslint, ruff or clippy by the target's language.
    #[serde(deserialize_with = "opt_non_empty")]
    pub command: Option<String>,
}

/// What agent mode does with the work of a spec that failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailedWork {
    /// A stash named `ralph: failed <spec>`, and the private ref `refs/ralph/failed/<id>`.
    #[default]
    Stash,
    /// The files put back as they were; the work kept under `refs/ralph/failed/<id>` only.
    Reset,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// What becomes of a failed spec's changes.
    pub on_failure: FailedWork,
    /// Consecutive failed specs that stop the agent (flag `--max-failures`).
    #[serde(deserialize_with = "at_least_one")]
    pub max_failures: u32,
    /// Where `--parallel` makes each spec's git worktree (default: the user's cache folder,
    /// `ralph-loop/worktrees/<project>`). Relative to the config file.
    pub worktrees: Option<PathBuf>,
    /// Untracked folders of the project a worktree links to rather than lacks (installed
    /// dependencies, build caches), where the project has them.
    pub worktree_links: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            on_failure: FailedWork::Stash,
            max_failures: 3,
            worktrees: None,
            worktree_links: ["node_modules", ".venv", "venv", "target"]
                .map(String::from)
                .to_vec(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxType {
    /// A process group on this machine.
    #[default]
    Process,
    /// A Docker container (needs a running Docker engine).
    Docker,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    #[serde(rename = "type")]
    pub kind: SandboxType,
    /// `None`: no memory limit.
    #[serde(deserialize_with = "opt_at_least_one_u64")]
    pub memory_limit_mb: Option<u64>,
    /// The container image for `type: docker`; `None` picks one for the language.
    #[serde(deserialize_with = "opt_non_empty")]
    pub image: Option<String>,
    /// How hooks and plugins are isolated (see `docs/plugins.md`).
    pub hooks: super::hooks::HookIsolation,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            kind: SandboxType::Process,
            memory_limit_mb: Some(2048),
            image: None,
            hooks: super::hooks::HookIsolation::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Output {
    #[default]
    Human,
    Json,
    Jsonl,
}

impl Output {
    pub fn as_str(self) -> &'static str {
        match self {
            Output::Human => "human",
            Output::Json => "json",
            Output::Jsonl => "jsonl",
        }
    }
}

impl From<Output> for crate::cli::OutputFormat {
    fn from(output: Output) -> Self {
        match output {
            Output::Human => Self::Human,
            Output::Json => Self::Json,
            Output::Jsonl => Self::Jsonl,
        }
    }
}

impl std::str::FromStr for Output {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "human" => Ok(Output::Human),
            "json" => Ok(Output::Json),
            "jsonl" => Ok(Output::Jsonl),
            other => Err(format!(
                "unknown output `{other}` (expected human, json or jsonl)"
            )),
        }
    }
}

/// By hand, as [`Output`]: a clear message for a bad value.
fn on_failure<'de, D: Deserializer<'de>>(d: D) -> Result<OnFailure, D::Error> {
    let name = Text {
        expecting: "best, original or last",
        check: |s| s.parse::<OnFailure>().map(|o| o.as_str().into()),
    };
    d.deserialize_str(name)?.parse().map_err(de::Error::custom)
}

// By hand: the derived impl answers a non-string with yaml_serde's "expected a YAML tag".
impl<'de> Deserialize<'de> for Output {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = Text {
            expecting: "human, json or jsonl",
            check: |s| s.parse::<Output>().map(|o| o.as_str().into()),
        };
        d.deserialize_str(name)?.parse().map_err(de::Error::custom)
    }
}
