//! The schema of `ralph.config.yaml`: every key, its default, and the check on its value.
//!
//! Values are checked while they are deserialised (`deserialize_with`, and the `Deserialize`
//! impls of the key types below) rather than afterwards, so that a bad value's error carries the
//! line, column and key path the YAML deserialiser knows at that moment.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::path::PathBuf;

use ralph_actors::policy::budget::Price;
use ralph_actors::role::Role;
use ralph_actors::settings::ModelSpec;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::models::{self, ModelName};

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
    pub testing: Testing,
    pub success_criteria: SuccessCriteria,
    pub linting: Linting,
    pub sandbox: SandboxConfig,
    /// `provider/model` → price, over the bundled table. Keys given as aliases are canonicalised.
    #[serde(deserialize_with = "price_map")]
    pub prices: BTreeMap<String, Price>,
    pub prompts: Prompts,
    pub output: Output,
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
            testing: Testing::default(),
            success_criteria: SuccessCriteria::default(),
            linting: Linting::default(),
            sandbox: SandboxConfig::default(),
            prices: BTreeMap::new(),
            prompts: Prompts::default(),
            output: Output::default(),
            base_dir: None,
        }
    }
}

/// Each model role's model (`models:`), keyed by role. A role left out keeps its default
/// ([`models::default_models`]); a key that names no model role is an error that lists them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Models(BTreeMap<Role, ModelEntry>);

impl Default for Models {
    fn default() -> Self {
        Self(
            Role::with_models()
                .filter_map(|role| {
                    let d = models::default_models(role)?;
                    let entry = ModelEntry {
                        model: d.model.to_string(),
                        temperature: None,
                        max_tokens: Some(role.info().default_max_tokens),
                        fallbacks: d.fallbacks.iter().map(|m| m.to_string()).collect(),
                    };
                    Some((role, entry))
                })
                .collect(),
        )
    }
}

impl Models {
    /// The entry of a model role; `None` for a role that calls no model.
    pub fn get(&self, role: Role) -> Option<&ModelEntry> {
        self.0.get(&role)
    }

    pub fn get_mut(&mut self, role: Role) -> Option<&mut ModelEntry> {
        self.0.get_mut(&role)
    }
}

/// The names of the roles that call a model, for "expected one of" in errors.
fn model_role_names() -> &'static [&'static str] {
    static NAMES: std::sync::LazyLock<Vec<&'static str>> =
        std::sync::LazyLock::new(|| Role::with_models().map(Role::as_str).collect());
    &NAMES
}

/// Reads a map keyed by model role, each value with `T`'s own deserialiser, over `base` (the
/// defaults): the one place where a config section keyed by role is parsed.
fn role_map<'de, D, T>(d: D, base: BTreeMap<Role, T>) -> Result<BTreeMap<Role, T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    /// A key of the map: the name of a model role. Refused while the key is read, so that the
    /// error's path ends with the key (`prompts.tester`), as a struct's unknown field would.
    struct RoleKey(Role);
    impl<'de> Deserialize<'de> for RoleKey {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let name = String::deserialize(d)?;
            name.parse::<Role>()
                .map(RoleKey)
                .map_err(|_| de::Error::unknown_field(&name, model_role_names()))
        }
    }
    struct RoleMapVisitor<T>(BTreeMap<Role, T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for RoleMapVisitor<T> {
        type Value = BTreeMap<Role, T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map from role to its setting")
        }
        fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
            while let Some(RoleKey(role)) = map.next_key()? {
                self.0.insert(role, map.next_value()?);
            }
            Ok(self.0)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(self.0)
        }
    }
    d.deserialize_map(RoleMapVisitor(base))
}

impl<'de> Deserialize<'de> for Models {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        role_map(d, Models::default().0).map(Models)
    }
}

/// A role's model: written as a bare name (`gpt-mini`) or as a map `{model, temperature,
/// max_tokens}`. `model` is held canonical (`provider/model`), aliases resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelEntry {
    pub model: String,
    pub temperature: Option<f32>,
    /// `None`: the role's default ([`RoleInfo::default_max_tokens`](ralph_actors::role::RoleInfo)).
    pub max_tokens: Option<u32>,
    /// Models tried in turn when this one fails (canonical names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
}

impl ModelEntry {
    /// The core's view of this entry for `role`.
    pub fn spec(&self, role: Role) -> ModelSpec {
        ModelSpec {
            model: self.model.clone(),
            temperature: self.temperature,
            max_tokens: self
                .max_tokens
                .unwrap_or_else(|| role.info().default_max_tokens),
            fallbacks: self.fallbacks.clone(),
        }
    }
}

/// The map form of [`ModelEntry`]; a derived impl, so an unknown key in it is reported as such
/// with its path (an `#[serde(untagged)]` enum would hide that behind "did not match any variant").
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntryMap {
    #[serde(deserialize_with = "model_name")]
    model: String,
    #[serde(default, deserialize_with = "temperature")]
    temperature: Option<f32>,
    #[serde(default, deserialize_with = "opt_at_least_one")]
    max_tokens: Option<u32>,
    #[serde(default, deserialize_with = "model_names")]
    fallbacks: Vec<String>,
}

impl<'de> Deserialize<'de> for ModelEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = ModelEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a model name or a map {model, temperature, max_tokens, fallbacks}")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<ModelEntry, E> {
                let model = MODEL.visit_str(name)?;
                Ok(ModelEntry {
                    model,
                    temperature: None,
                    max_tokens: None,
                    fallbacks: Vec::new(),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ModelEntry, A::Error> {
                let m = ModelEntryMap::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ModelEntry {
                    model: m.model,
                    temperature: m.temperature,
                    max_tokens: m.max_tokens,
                    fallbacks: m.fallbacks,
                })
            }
        }
        d.deserialize_any(EntryVisitor)
    }
}

/// How to reach one provider. Only `openai` (any OpenAI-compatible server) is callable in this
/// build; the others are accepted here and refused at start-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    /// `None`: the provider's endpoint variable (`OPENAI_BASE_URL`), else its public endpoint.
    #[serde(deserialize_with = "opt_url")]
    pub base_url: Option<String>,
    /// `None`: the provider's standard key variable (`OPENAI_API_KEY`).
    #[serde(deserialize_with = "opt_non_empty")]
    pub api_key_env: Option<String>,
    #[serde(deserialize_with = "at_least_one")]
    pub timeout_seconds: u64,
    /// A reply stream silent this long counts as stalled and is retried.
    #[serde(deserialize_with = "at_least_one")]
    pub idle_timeout_seconds: u64,
    pub max_retries: u32,
    pub stream: bool,
    /// Requests per minute this run may send to the provider, shared by every role.
    #[serde(deserialize_with = "opt_at_least_one")]
    pub requests_per_minute: Option<u32>,
    /// Tokens (prompt and reply) per minute, likewise.
    #[serde(deserialize_with = "opt_at_least_one")]
    pub tokens_per_minute: Option<u32>,
    /// Azure OpenAI's `api-version`; only under `azure`.
    #[serde(
        deserialize_with = "opt_non_empty",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_version: Option<String>,
}

/// The `api-version` Azure OpenAI is called with unless configured.
pub const AZURE_API_VERSION: &str = "2024-10-21";

impl ProviderConfig {
    /// The defaults of one provider: Azure has an `api_version`.
    pub fn default_for(provider: &str) -> Self {
        Self {
            api_version: (provider == "azure").then(|| AZURE_API_VERSION.to_string()),
            ..Self::default()
        }
    }
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key_env: None,
            timeout_seconds: 120,
            idle_timeout_seconds: 60,
            max_retries: 3,
            stream: true,
            requests_per_minute: None,
            tokens_per_minute: None,
            api_version: None,
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
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            max_iterations: 30,
            max_cost_usd: 2.0,
            max_duration_minutes: None,
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
    pub enabled: bool,
    pub max_rejections: u32,
}

impl Default for CriticConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_rejections: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LibrarianConfig {
    pub analyze: bool,
    /// The share of the Artisan's context window the project's files may fill.
    #[serde(deserialize_with = "context_share")]
    pub context_share: f64,
}

impl Default for LibrarianConfig {
    fn default() -> Self {
        Self {
            analyze: true,
            context_share: 0.25,
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
    /// Percent of lines covered, 0 to 100; `None`: coverage is not measured.
    #[serde(deserialize_with = "opt_percent")]
    pub coverage_threshold: Option<f64>,
    /// The most linter errors allowed; `None`: the linter does not run.
    pub linter_errors: Option<u32>,
}

impl Default for SuccessCriteria {
    fn default() -> Self {
        Self {
            tests_pass: true,
            coverage_threshold: None,
            linter_errors: None,
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
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            kind: SandboxType::Process,
            memory_limit_mb: Some(2048),
            image: None,
        }
    }
}

/// Template overrides (`prompts:`), one file per model role; a role left out (or `null`) keeps
/// its bundled template.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompts(BTreeMap<Role, PathBuf>);

/// Every model role, `null` where the bundled template is kept: the shape the example file
/// documents.
impl Serialize for Prompts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let all: BTreeMap<Role, Option<&PathBuf>> =
            Role::with_models().map(|r| (r, self.0.get(&r))).collect();
        all.serialize(s)
    }
}

impl Prompts {
    pub fn get(&self, role: Role) -> Option<&PathBuf> {
        self.0.get(&role)
    }

    /// Every override, to resolve its path against the config file's directory.
    pub fn paths_mut(&mut self) -> impl Iterator<Item = &mut PathBuf> {
        self.0.values_mut()
    }
}

impl<'de> Deserialize<'de> for Prompts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let given: BTreeMap<Role, Option<PathBuf>> = role_map(d, BTreeMap::new())?;
        Ok(Prompts(
            given
                .into_iter()
                .filter_map(|(role, path)| Some((role, path?)))
                .collect(),
        ))
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

// ---- value checks -------------------------------------------------------------------------
//
// Each check runs inside the visitor of its value: yaml_serde places an error raised there at the
// value itself, whereas an error raised after `T::deserialize` returned would be placed at the
// start of the enclosing map, possibly lines away from the key at fault.

fn canonical_model(name: &str) -> Result<String, String> {
    ModelName::parse(name).map(|m| m.to_string())
}

/// A string passed through `check`.
struct Text {
    expecting: &'static str,
    check: fn(&str) -> Result<String, String>,
}

impl Visitor<'_> for Text {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        (self.check)(s).map_err(E::custom)
    }
}

/// A number (integer or not) passed through `check`.
struct Number {
    expecting: &'static str,
    check: fn(f64) -> Result<f64, String>,
}

impl Visitor<'_> for Number {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        (self.check)(v).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        self.visit_f64(v as f64)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        self.visit_f64(v as f64)
    }
}

/// A count where 0 would make the run meaningless (no iteration, no time, no output).
struct AtLeastOne<T>(PhantomData<T>);

impl<T: TryFrom<u64>> Visitor<'_> for AtLeastOne<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer of at least 1")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        if v == 0 {
            return Err(E::custom("must be at least 1, got 0"));
        }
        T::try_from(v).map_err(|_| E::custom(format!("{v} is too large")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(format!("must be at least 1, got {v}"))),
        }
    }
}

/// `null` or what the inner visitor accepts.
struct Optional<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Optional<V> {
    type Value = Option<V::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)?;
        f.write_str(" or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self.0).map(Some)
    }
}

const MODEL: Text = Text {
    expecting: "a model name (provider/model or an alias)",
    check: canonical_model,
};

fn model_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_str(MODEL)
}

/// A list of model names, each made canonical; an error names the entry's index.
fn model_names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    struct Name(#[serde(deserialize_with = "model_name")] String);
    Ok(Vec::<Name>::deserialize(d)?
        .into_iter()
        .map(|n| n.0)
        .collect())
}

fn at_least_one<'de, D: Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<T, D::Error> {
    d.deserialize_u64(AtLeastOne(PhantomData))
}

fn opt_at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    d.deserialize_option(Optional(AtLeastOne(PhantomData)))
}

fn opt_at_least_one_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(Optional(AtLeastOne(PhantomData)))
}

fn opt_at_least_one_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    d.deserialize_option(Optional(AtLeastOne(PhantomData)))
}

fn similarity<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    d.deserialize_f64(Number {
        expecting: "a cosine similarity above 0 and at most 1",
        check: |v| {
            if v > 0.0 && v <= 1.0 {
                Ok(v)
            } else {
                Err(format!("must be above 0 and at most 1, got {v}"))
            }
        },
    })
    .map(|v| v as f32)
}

/// The shared store is a directory in this build: LanceDB's object-store back-ends (s3, gs, az)
/// are optional features left out to keep the build within CI's time.
fn opt_directory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let dir = Text {
        expecting: "a directory path",
        check: |u| {
            if u.trim().is_empty() {
                Err("must not be empty".to_string())
            } else if let Some((scheme, _)) = u.split_once("://").filter(|(s, _)| *s != "file") {
                Err(format!(
                    "`{scheme}://` stores are not supported by this build; use a directory (a shared or synced file system works)"
                ))
            } else {
                Ok(u.strip_prefix("file://").unwrap_or(u).to_string())
            }
        },
    };
    d.deserialize_option(Optional(dir))
}

/// Above 0.40 the prompt alone would leave the "smart zone" every agent is kept in.
fn context_share<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_f64(Number {
        expecting: "a share of the context window, above 0 and at most 0.4",
        check: |v| {
            if v > 0.0 && v <= 0.4 {
                Ok(v)
            } else {
                Err(format!("must be above 0 and at most 0.4, got {v}"))
            }
        },
    })
}

fn opt_percent<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(Optional(Number {
        expecting: "a percentage between 0 and 100",
        check: |v| {
            if (0.0..=100.0).contains(&v) {
                Ok(v)
            } else {
                Err(format!("must be between 0 and 100, got {v}"))
            }
        },
    }))
}

fn opt_language<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_option(Optional(Text {
        expecting: "typescript, javascript, python or rust",
        check: |s| {
            s.parse::<crate::runner::language::Language>()
                .map(|l| l.as_str().to_string())
        },
    }))
}

/// `tests_pass` cannot be turned off: a run that ignores its tests has nothing to aim at.
fn must_be_true<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct True;
    impl Visitor<'_> for True {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("true")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
            if v {
                Ok(true)
            } else {
                Err(E::custom(
                    "tests_pass cannot be false: the tests passing is always required",
                ))
            }
        }
    }
    d.deserialize_bool(True)
}

const POSITIVE: Number = Number {
    expecting: "a number greater than 0",
    check: |v| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("must be a number greater than 0, got {v}"))
        }
    },
};

fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_f64(POSITIVE)
}

fn opt_positive<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(Optional(POSITIVE))
}

const NON_NEGATIVE: Number = Number {
    expecting: "a number, 0 or more",
    check: |v| {
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(format!("must be a number, 0 or more, got {v}"))
        }
    },
};

fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_f64(NON_NEGATIVE)
}

fn opt_non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(Optional(NON_NEGATIVE))
}

fn temperature<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
    let range = Number {
        expecting: "a temperature between 0 and 2",
        check: |t| {
            if (0.0..=2.0).contains(&t) {
                Ok(t)
            } else {
                Err(format!("must be between 0 and 2, got {t}"))
            }
        },
    };
    Ok(d.deserialize_option(Optional(range))?.map(|t| t as f32))
}

fn non_empty(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("must not be empty (use null for the default)".into());
    }
    Ok(s.to_string())
}

fn opt_non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_option(Optional(Text {
        expecting: "a non-empty string",
        check: non_empty,
    }))
}

fn opt_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let url = Text {
        expecting: "an http:// or https:// URL",
        check: |u| {
            if u.starts_with("http://") || u.starts_with("https://") {
                Ok(u.to_string())
            } else {
                Err(format!("`{u}` is not an http:// or https:// URL"))
            }
        },
    };
    d.deserialize_option(Optional(url))
}

/// A key of `providers:`; checked as a key so the error points at it.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct ProviderKey(String);

impl<'de> Deserialize<'de> for ProviderKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let known = Text {
            expecting: "a provider name",
            check: |name| {
                if models::PROVIDERS.contains(&name) {
                    Ok(name.to_string())
                } else {
                    Err(format!(
                        "unknown provider `{name}` (providers: {})",
                        models::PROVIDERS.join(", ")
                    ))
                }
            },
        };
        d.deserialize_str(known).map(ProviderKey)
    }
}

fn provider_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, ProviderConfig>, D::Error> {
    let raw = BTreeMap::<ProviderKey, ProviderConfig>::deserialize(d)?;
    Ok(raw.into_iter().map(|(k, v)| (k.0, v)).collect())
}

/// A key of `prices:`: a model name, canonicalised so it matches the names the run looks up,
/// and not one already priced: two names of one model (`gpt`, `openai/gpt-4.1`) would silently
/// shadow each other. Checked in the key's own visitor so the error points at the key.
struct NewPriceKey<'a>(&'a BTreeMap<String, Price>);

impl<'de> de::DeserializeSeed<'de> for NewPriceKey<'_> {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for NewPriceKey<'_> {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a model name (provider/model or an alias)")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        let model = MODEL.visit_str::<E>(s)?;
        if self.0.contains_key(&model) {
            return Err(E::custom(format!("{model} is priced twice")));
        }
        Ok(model)
    }
}

/// [`Price`] with each number checked; the same keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceEntry {
    #[serde(deserialize_with = "non_negative")]
    input: f64,
    #[serde(deserialize_with = "non_negative")]
    output: f64,
    #[serde(default, deserialize_with = "opt_non_negative")]
    cache_read: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    cache_write: Option<f64>,
}

fn price_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Price>, D::Error> {
    struct PriceMap;
    impl<'de> Visitor<'de> for PriceMap {
        type Value = BTreeMap<String, Price>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of model name to {input, output, cache_read, cache_write}")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(BTreeMap::new())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut prices = BTreeMap::new();
            while let Some(model) = map.next_key_seed(NewPriceKey(&prices))? {
                let p: PriceEntry = map.next_value()?;
                let price = Price {
                    input: p.input,
                    output: p.output,
                    cache_read: p.cache_read,
                    cache_write: p.cache_write,
                };
                prices.insert(model, price);
            }
            Ok(prices)
        }
    }
    d.deserialize_map(PriceMap)
}
