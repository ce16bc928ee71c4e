use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ralph_actors::prompt::templates::Templates;
use ralph_actors::role::Role;
use ralph_actors::settings::{Analyze, CriticMode, ModelSpec};

use super::*;

const EXAMPLE: &str = include_str!("../../ralph.config.yaml");

fn parse_str(source: &str) -> Result<Config, ConfigError> {
    parse(source, Path::new("ralph.config.yaml"))
}

fn err(source: &str) -> (String, ConfigError) {
    let e = parse_str(source).expect_err("should fail");
    (e.to_string(), e)
}

/// Asserts that `source` fails to parse with a message holding every one of `pieces`.
fn assert_fails_with(source: &str, pieces: &[&str]) {
    let (msg, _) = err(source);
    for piece in pieces {
        assert!(msg.contains(piece), "{source:?}: no {piece:?} in {msg}");
    }
}

/// Asserts that `source` fails to parse with a message that begins `start`.
fn assert_fails_starting(source: &str, start: &str) {
    let (msg, _) = err(source);
    assert!(msg.starts_with(start), "{source:?}: {msg}");
}

#[test]
fn example_parses_to_the_defaults() {
    let config = parse_str(EXAMPLE).expect("example parses");
    let mut expected = Config::default();
    expected.prices.insert(
        "openai/my-finetune".into(),
        ralph_actors::policy::budget::Price {
            input: 0.30,
            output: 1.20,
            cache_read: None,
            cache_write: None,
        },
    );
    expected.base_dir = Some(PathBuf::new());
    // The example spells out each provider's key variable, which the defaults leave to the
    // provider's standard one.
    for (provider, var) in [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
        ("azure", "AZURE_OPENAI_API_KEY"),
    ] {
        if let Some(p) = expected.providers.get_mut(provider) {
            p.api_key_env = Some(var.into());
        }
    }
    assert_eq!(config, expected);
    for role in Role::with_models() {
        assert_eq!(config.model(role), Config::default().model(role));
    }
}

/// Dotted paths of the leaves of `v`; `models` entries stop at the role (an entry is a string or
/// a map) and `prices` at the section (its keys are model names).
fn key_paths(v: &serde_json::Value, prefix: &mut Vec<String>, out: &mut BTreeSet<String>) {
    let stop = matches!(prefix.as_slice(), [s] if s == "prices")
        || matches!(prefix.as_slice(), [s, _] if s == "models");
    match v {
        serde_json::Value::Object(map) if !map.is_empty() && !stop => {
            for (k, v) in map {
                prefix.push(k.clone());
                key_paths(v, prefix, out);
                prefix.pop();
            }
        }
        _ => {
            out.insert(prefix.join("."));
        }
    }
}

#[test]
fn example_documents_every_key() {
    let example: serde_json::Value = serde_yaml::from_str(EXAMPLE).expect("example is YAML");
    let defaults = serde_json::to_value(Config::default()).expect("defaults serialise");
    let (mut documented, mut known) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&example, &mut Vec::new(), &mut documented);
    key_paths(&defaults, &mut Vec::new(), &mut known);
    assert_eq!(documented, known, "ralph.config.yaml and Config disagree");

    // The parts cut off above: one price entry, and one model entry in the map form with every key.
    assert!(
        example["prices"].as_object().is_some_and(|m| !m.is_empty()),
        "no example price"
    );
    let entry_keys: BTreeSet<&str> = example["models"]["artisan"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let known_entry_keys: BTreeSet<&str> = defaults["models"]["artisan"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(entry_keys, known_entry_keys);
    // Every line of the example says what it does.
    for (n, line) in EXAMPLE.lines().enumerate() {
        let body = line.trim();
        assert!(
            body.is_empty() || body.contains('#'),
            "line {} has no comment: {line}",
            n + 1
        );
    }
}

#[test]
fn empty_file_is_the_defaults() {
    for source in ["", "# nothing\n", "budgets:\n"] {
        let mut config = parse_str(source).expect("parses");
        config.base_dir = None;
        assert_eq!(config, Config::default(), "{source:?}");
    }
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let (msg, e) = err("budgets:\n  max_iterations: 3\n  max_cost: 2\n");
    assert!(
        msg.starts_with("ralph.config.yaml:3:3: budgets.max_cost: unknown key, expected one of `max_iterations`"),
        "{msg}"
    );
    assert!(matches!(e, ConfigError::Invalid { line: Some(3), .. }));
    assert_fails_starting(
        "output: human\nbudget:\n  max_cost_usd: 1\n",
        "ralph.config.yaml:2:1: budget: unknown key, expected one of",
    );
    assert_fails_starting(
        "models:\n  artisan: { model: gpt, temp: 0.3 }\n",
        "ralph.config.yaml:2:26: models.artisan.temp: unknown key",
    );
}

#[test]
fn bad_value_names_line_and_key() {
    let (msg, _) = err("# budgets\nbudgets:\n  max_cost_usd: lots\n");
    let expected =
        "budgets.max_cost_usd: invalid type: string \"lots\", expected a number greater than 0";
    assert_eq!(msg, format!("ralph.config.yaml:3:17: {expected}"));
    // (source, the error after "ralph.config.yaml:"): the position is the value's.
    let cases = [
        ("budgets:\n  max_iterations: 0", "2:19: budgets.max_iterations: must be at least 1"),
        ("budgets:\n  max_iterations: -2", "2:19: budgets.max_iterations: invalid type: integer `-2`, expected an integer of at least 1"),
        ("budgets:\n  max_iterations: 1.5", "2:19: budgets.max_iterations: invalid type: floating"),
        ("budgets:\n  max_cost_usd: -1", "2:17: budgets.max_cost_usd: must be a number greater than 0"),
        ("budgets:\n  max_cost_usd: .nan", "2:17: budgets.max_cost_usd: must be a number greater than 0"),
        ("budgets:\n  max_duration_minutes: 0", "2:25: budgets.max_duration_minutes: must be a number"),
        ("memory:\n  context_reset_frequency: 0", "2:28: memory.context_reset_frequency: must be at least 1"),
        ("circuit_breaker:\n  entropy_threshold: 0", "2:22: circuit_breaker.entropy_threshold: must be at"),
        ("testing:\n  timeout_seconds: 0", "2:20: testing.timeout_seconds: must be at least 1"),
        ("testing:\n  command: ''", "2:12: testing.command: must not be empty"),
        ("testing:\n  language: cobol", "2:13: testing.language: unknown language `cobol`"),
        ("success_criteria:\n  tests_pass: false", "2:15: success_criteria.tests_pass: tests_pass cannot be false"),
        ("success_criteria:\n  coverage_threshold: 120", "2:23: success_criteria.coverage_threshold: must be between 0 and 100, got 120"),
        ("sandbox:\n  type: vm", "2:9: sandbox.type: unknown variant `vm`"),
        ("sandbox:\n  memory_limit_mb: 0", "2:20: sandbox.memory_limit_mb: must be at least 1"),
        ("models:\n  critic:\n    model: gpt\n    temperature: 3", "4:18: models.critic.temperature: must be between"),
        ("models:\n  critic: { model: gpt, max_tokens: 0 }", "2:37: models.critic.max_tokens: must be at least 1"),
        ("output: xml", "1:9: output: unknown output `xml` (expected human, json or jsonl)"),
        ("providers:\n  openai: {}\n  acme: {}", "3:3: providers.acme: unknown provider `acme`"),
        ("providers:\n  openai:\n    base_url: localhost", "3:15: providers.openai.base_url: `localhost` is not"),
        ("providers:\n  openai:\n    stream: maybe", "3:13: providers.openai.stream: invalid type: string"),
        ("prices:\n  openai/x: { input: 1 }", "2:13: prices.openai/x: missing field `output`"),
        ("prices:\n  openai/x: { input: 1, output: -1 }", "2:33: prices.openai/x.output: must be a number, 0 or"),
        ("prompts:\n  tester: x.md", "2:3: prompts.tester: unknown key, expected one of `librarian`"),
    ];
    let mut wrong = Vec::new();
    for (source, expected) in cases {
        let (msg, _) = err(source);
        if !msg.starts_with(&format!("ralph.config.yaml:{expected}")) {
            wrong.push(format!("{source:?}\n  gave {msg}\n  want {expected}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn syntax_error_has_a_position() {
    let (msg, e) = err("budgets:\n\tmax_iterations: 1\n");
    assert!(msg.starts_with("ralph.config.yaml:2:1: "), "{msg}");
    assert!(msg.contains("cannot start any token"), "{msg}");
    assert!(matches!(
        e,
        ConfigError::Invalid {
            line: Some(2),
            column: Some(1),
            ..
        }
    ));
}

#[test]
fn bad_model_alias_is_an_error() {
    assert_fails_starting(
        "models:\n  artisan: mystery\n",
        "ralph.config.yaml:2:12: models.artisan: `mystery` is neither",
    );
    let acme = "models:\n  critic: { model: acme/x }\n";
    assert_fails_starting(acme, "ralph.config.yaml:2:");
    assert_fails_with(acme, &["models.critic.model: unknown provider `acme`"]);
    assert_fails_with(
        "prices:\n  mystery: { input: 1, output: 2 }\n",
        &["2:3: prices.mystery: `mystery` is neither"],
    );
}

#[test]
fn model_entries_as_string_or_map() {
    let config = parse_str("models:\n  librarian: gpt-nano\n  artisan: { model: claude, temperature: 0.2, max_tokens: 4000 }\n")
        .expect("parses");
    let spec = |r| config.model(r).expect("model role");
    assert_eq!(
        spec(Role::Librarian),
        ModelSpec {
            model: "openai/gpt-4.1-nano".into(),
            temperature: None,
            max_tokens: 1024,
            fallbacks: Vec::new(),
        }
    );
    assert_eq!(
        spec(Role::Artisan),
        ModelSpec {
            model: "anthropic/claude-sonnet-4-5".into(),
            temperature: Some(0.2),
            max_tokens: 4000,
            fallbacks: Vec::new(),
        }
    );
    assert_eq!(spec(Role::Critic).model, "openai/gpt-4.1-mini");
    // A map without max_tokens keeps the role's default.
    let config = parse_str("models:\n  artisan: { model: gpt-4o }\n").expect("parses");
    assert_eq!(
        config.model(Role::Artisan).map(|s| s.max_tokens),
        Some(8192)
    );
    assert_fails_with(
        "models:\n  artisan: { temperature: 0.2 }\n",
        &["models.artisan: missing field `model`"],
    );
    assert_fails_with(
        "models:\n  artisan: 3\n",
        &["models.artisan: invalid type: integer `3`, expected a model name or a map"],
    );
}

#[test]
fn prices_are_keyed_by_canonical_name() {
    let (msg, _) =
        err("prices:\n  gpt: { input: 1, output: 2 }\n  openai/gpt-4.1: { input: 1, output: 2 }\n");
    assert!(
        msg.starts_with(
            "ralph.config.yaml:3:3: prices.openai/gpt-4.1: openai/gpt-4.1 is priced twice"
        ),
        "{msg}"
    );
    let config =
        parse_str("prices:\n  gpt: { input: 1, output: 2, cache_read: 0.5 }\n").expect("parses");
    assert_eq!(
        config.prices.get("openai/gpt-4.1").map(|p| p.cache_read),
        Some(Some(0.5))
    );
}

#[test]
fn prompt_overrides_are_read_and_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(FILE_NAME);
    fs::create_dir(dir.path().join("p")).expect("mkdir");
    fs::write(
        dir.path().join("p/critic.md"),
        "Be strict.\n<!-- user -->\n{{ target.path }}\n",
    )
    .expect("write");
    fs::write(&file, "output: json\nprompts:\n  critic: p/critic.md\n").expect("write");
    let config = load(&file).expect("loads");
    assert_eq!(config.output, Output::Json);
    let text = config.prompt_template(Role::Critic).expect("reads");
    assert!(text.is_some_and(|t| t.starts_with("Be strict.")));
    assert_eq!(
        config.prompt_template(Role::Artisan).expect("no override"),
        None
    );
    let settings = config.run_settings().expect("settings");
    let critic = settings.templates.get(Role::Critic).expect("a template");
    assert!(critic.starts_with("Be strict."));
    assert_eq!(
        settings.templates.get(Role::Artisan),
        Templates::default().get(Role::Artisan)
    );
    settings.validate().expect("complete settings");

    fs::write(
        &file,
        "prompts:\n  librarian: null\n  artisan: missing.md\n",
    )
    .expect("write");
    let msg = load(&file).expect_err("missing template").to_string();
    assert!(
        msg.starts_with(&format!(
            "{}:3:3: prompts.artisan: cannot read",
            file.display()
        )),
        "{msg}"
    );

    fs::write(dir.path().join("p/bad.md"), "no separator\n").expect("write");
    fs::write(&file, "prompts:\n  artisan: p/bad.md\n").expect("write");
    let msg = load(&file).expect_err("bad template").to_string();
    assert!(msg.contains(":2:3: prompts.artisan: "), "{msg}");
}

#[test]
fn run_settings_follow_the_file() {
    let config = parse_str(
        "budgets: { max_iterations: 5, max_cost_usd: 0.5, max_duration_minutes: 1.5 }\n\
         memory: { context_reset_frequency: 2 }\ncritic: { enabled: false, max_rejections: 0 }\n\
         librarian: { analyze: false }\ncircuit_breaker: { entropy_threshold: 4 }\n\
         testing: { prompt_output_bytes: 100, flaky_retries: 2, allow_test_edits: true, language: TS }\n\
         success_criteria: { coverage_threshold: 85, linter_errors: 0 }\n",
    )
    .expect("parses");
    let s = config.run_settings().expect("settings");
    assert_eq!(
        (s.max_iterations, s.max_cost_usd, s.max_duration),
        (5, 0.5, Some(Duration::from_secs(90)))
    );
    assert_eq!((s.context_reset_frequency, s.entropy_threshold), (2, 4));
    assert_eq!(
        (s.critic_mode, s.critic_max_rejections, s.librarian_analyze),
        (CriticMode::Off, 0, Analyze::Never)
    );
    assert_eq!(s.max_test_output_bytes, 100);
    assert_eq!((s.flaky_retries, s.allow_test_edits), (2, true));
    // Chaos is on: the coverage gate is judged on the changed lines, after its attacks.
    assert_eq!(
        (s.chaos.coverage_min, s.coverage_threshold, s.linter_errors),
        (Some(85.0), None, Some(0))
    );
    assert_eq!(config.testing.language.as_deref(), Some("typescript"));
}

#[test]
fn endpoint_takes_file_then_environment_then_default() {
    let env = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".to_string());
    let none = |_: &str| None;
    let defaults = Config::default();
    let e = defaults.endpoint("openai", none);
    assert_eq!(e.base_url.as_deref(), Some("https://api.openai.com/v1"));
    assert_eq!(e.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!(
        (e.timeout, e.max_retries, e.stream),
        (Duration::from_secs(120), 3, true)
    );
    assert_eq!(
        defaults.endpoint("openai", env).base_url.as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    let config = parse_str("providers:\n  openai: { base_url: 'http://h/v1', api_key_env: MY_KEY, timeout_seconds: 5 }\n")
        .expect("parses");
    let e = config.endpoint("openai", env);
    assert_eq!(
        (e.base_url.as_deref(), e.api_key_env.as_deref()),
        (Some("http://h/v1"), Some("MY_KEY"))
    );
    assert_eq!(e.timeout, Duration::from_secs(5));
}

#[test]
fn discovery_order() {
    let root = tempfile::tempdir().expect("tempdir");
    let repo = root.path().join("repo");
    let deep = repo.join("a/b");
    fs::create_dir_all(&deep).expect("mkdir");
    fs::create_dir(repo.join(".git")).expect("mkdir");

    // Nothing anywhere: the defaults.
    assert_eq!(discover(None, &deep).expect("ok"), None);
    let (config, path) = load_discovered(None, &deep).expect("defaults");
    assert_eq!((config, path), (Config::default(), None));

    // Above the git root: never used.
    fs::write(root.path().join(FILE_NAME), "output: json\n").expect("write");
    assert_eq!(discover(None, &deep).expect("ok"), None);

    // At the git root, then nearer.
    fs::write(repo.join(FILE_NAME), "output: jsonl\n").expect("write");
    assert_eq!(
        discover(None, &deep).expect("ok"),
        Some(repo.join(FILE_NAME))
    );
    fs::write(repo.join("a").join(FILE_NAME), "output: json\n").expect("write");
    assert_eq!(
        discover(None, &deep).expect("ok"),
        Some(repo.join("a").join(FILE_NAME))
    );

    // In the current directory.
    fs::write(deep.join(FILE_NAME), "").expect("write");
    assert_eq!(
        discover(None, &deep).expect("ok"),
        Some(deep.join(FILE_NAME))
    );

    // An explicit path wins, relative to cwd, and must exist.
    fs::write(root.path().join("other.yaml"), "output: jsonl\n").expect("write");
    let found = discover(Some(Path::new("../../../other.yaml")), &deep).expect("ok");
    assert_eq!(found, Some(deep.join("../../../other.yaml")));
    let (config, _) =
        load_discovered(Some(Path::new("../../../other.yaml")), &deep).expect("loads");
    assert_eq!(config.output, Output::Jsonl);
    let e = discover(Some(Path::new("nope.yaml")), &deep).expect_err("missing");
    assert!(matches!(e, ConfigError::NotFound { .. }));
    assert_eq!(e.to_string(), "nope.yaml: config file not found");

    // Outside a git repository only the current directory counts.
    let plain = root.path().join("plain/sub");
    fs::create_dir_all(&plain).expect("mkdir");
    assert_eq!(discover(None, &plain).expect("ok"), None);
    fs::write(plain.join(FILE_NAME), "").expect("write");
    assert_eq!(
        discover(None, &plain).expect("ok"),
        Some(plain.join(FILE_NAME))
    );
}

#[test]
fn unreadable_file_names_its_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = load(&dir.path().join("gone.yaml")).expect_err("missing");
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(e.to_string().contains("gone.yaml: cannot read"), "{e}");
}

#[test]
fn the_critic_s_mode_and_the_librarian_s_analysis_policy() {
    let s = parse_str("")
        .expect("parses")
        .run_settings()
        .expect("settings");
    assert_eq!(
        (s.critic_mode, s.librarian_analyze),
        (CriticMode::Auto, Analyze::Auto)
    );
    for (yaml, mode, analyze) in [
        (
            "critic: { mode: gate }\nlibrarian: { analyze: always }",
            CriticMode::Gate,
            Analyze::Always,
        ),
        (
            "critic: { mode: parallel }\nlibrarian: { analyze: never }",
            CriticMode::Parallel,
            Analyze::Never,
        ),
        (
            "critic: { mode: off }\nlibrarian: { analyze: true }",
            CriticMode::Off,
            Analyze::Always,
        ),
        (
            "critic: { enabled: false, mode: gate }\nlibrarian: { analyze: auto }",
            CriticMode::Off,
            Analyze::Auto,
        ),
    ] {
        let s = parse_str(yaml)
            .expect("parses")
            .run_settings()
            .expect("settings");
        assert_eq!(
            (s.critic_mode, s.librarian_analyze),
            (mode, analyze),
            "{yaml}"
        );
    }
    assert_fails_with(
        "librarian:\n  analyze: sometimes\n",
        &["2:12: librarian.analyze: must be auto, always or never, got `sometimes`"],
    );
    assert_fails_with(
        "critic:\n  mode: later\n",
        &["2:9: critic.mode: unknown variant `later`"],
    );
}

/// The seed's User Story 6 (the completion promise), as its acceptance scenarios write it.
#[test]
fn the_seed_s_completion_promise_config_loads_as_written() {
    let s = parse_str(
        "success_criteria: {tests_pass: true, adversarial_tests_pass: true, coverage_threshold: 90}\n\
         budgets:\n  max_cost_usd: 2.00\n  max_duration_minutes: 15\n  max_iterations: 30\n\
         circuit_breaker:\n  entropy_threshold: 3\n",
    )
    .expect("parses")
    .run_settings()
    .expect("settings");
    assert!(s.chaos.enabled && s.chaos.must_pass);
    assert_eq!(s.chaos.coverage_min, Some(90.0));
    assert_eq!((s.max_cost_usd, s.max_iterations), (2.0, 30));
    assert_eq!(
        s.max_duration,
        Some(std::time::Duration::from_secs(15 * 60))
    );
    assert_eq!(s.entropy_threshold, 3);
}

#[test]
fn chaos_settings_and_their_errors() {
    let s = parse_str("")
        .expect("parses")
        .run_settings()
        .expect("settings");
    assert!(s.chaos.enabled && s.chaos.must_pass);
    assert_eq!((s.chaos.max_rounds, s.chaos.max_repairs), (3, 2));
    assert_eq!(s.model(Role::Chaos).model, "openai/gpt-4.1");
    let s = parse_str(
        "chaos:\n  strategies: [boundary]\n  max_rounds: 1\nsuccess_criteria:\n  adversarial_tests_pass: false\nmodels:\n  chaos: gpt-mini\n",
    )
    .expect("parses")
    .run_settings()
    .expect("settings");
    assert_eq!(
        s.chaos.strategies,
        vec![ralph_actors::settings::Strategy::Boundary]
    );
    assert_eq!(s.chaos.max_rounds, 1);
    assert!(!s.chaos.must_pass);
    assert_eq!(s.model(Role::Chaos).model, "openai/gpt-4.1-mini");
    // Off: Chaos's model is not resolved at all.
    let s = parse_str("chaos: { enabled: false }\n")
        .expect("parses")
        .run_settings()
        .expect("settings");
    assert!(!s.models.contains_key(&Role::Chaos));
    assert_fails_with(
        "chaos:\n  strategies: []\n",
        &["ralph.config.yaml:2:3: chaos.strategies: the list is empty"],
    );
    assert_fails_with(
        "chaos:\n  strategies: [boundary, fuzzing]\n",
        &["chaos.strategies", "unknown variant `fuzzing`"],
    );
    // Mutation testing: off by default, on by its strategy or a gate, the gate within 70..=100.
    assert!(!s.chaos.mutation());
    let s = parse_str(
        "success_criteria:\n  mutation_score_min: 85\nchaos:\n  mutation_timeout_seconds: 60\n",
    )
    .expect("parses")
    .run_settings()
    .expect("settings");
    assert!(s.chaos.mutation());
    assert_eq!(s.chaos.mutation_score_min, Some(85.0));
    assert_eq!(s.chaos.coverage_min, Some(90.0), "the default gate");
    assert_eq!(s.chaos.mutation_timeout, std::time::Duration::from_secs(60));
    for bad in ["69", "100.5"] {
        assert_fails_with(
            &format!("success_criteria:\n  mutation_score_min: {bad}\n"),
            &[
                "ralph.config.yaml:2:",
                "success_criteria.mutation_score_min",
                "between 70 and 100",
            ],
        );
    }
    assert_fails_with(
        "chaos:\n  max_rounds: 0\n",
        &["ralph.config.yaml:2:", "chaos.max_rounds"],
    );
}

/// FR-044's defaults: Chaos, coverage 90 % and mutation 80 % of the changed lines; `null` turns
/// a gate off; `quick` keeps the tests and the Critic only; with Chaos off, only a coverage
/// threshold the file set is judged, on each test run.
#[test]
fn the_gates_are_on_by_default_and_follow_chaos_and_the_profile() {
    let settings = |yaml: &str| {
        parse_str(yaml)
            .expect("parses")
            .run_settings()
            .expect("settings")
    };
    let s = settings("");
    assert_eq!(s.profile, ralph_actors::settings::Profile::Full);
    assert!(s.chaos.enabled && s.chaos.mutation());
    assert_eq!(
        (
            s.chaos.coverage_min,
            s.chaos.mutation_score_min,
            s.coverage_threshold
        ),
        (Some(90.0), Some(80.0), None)
    );
    let s = settings("success_criteria: {coverage_threshold: null, mutation_score_min: null}\n");
    assert_eq!(
        (s.chaos.coverage_min, s.chaos.mutation_score_min),
        (None, None)
    );
    assert!(s.chaos.enabled && !s.chaos.mutation());
    let s = settings("profile: quick\nsuccess_criteria: {coverage_threshold: 95}\n");
    assert_eq!(s.profile, ralph_actors::settings::Profile::Quick);
    assert!(!s.chaos.enabled && !s.chaos.mutation() && !s.models.contains_key(&Role::Chaos));
    assert_eq!((s.chaos.coverage_min, s.coverage_threshold), (None, None));
    let s = settings("chaos: {enabled: false}\n");
    assert_eq!((s.chaos.coverage_min, s.coverage_threshold), (None, None));
    let s = settings("chaos: {enabled: false}\nsuccess_criteria: {coverage_threshold: 75}\n");
    assert_eq!(
        (s.chaos.coverage_min, s.coverage_threshold),
        (None, Some(75.0))
    );
    assert_fails_with(
        "profile: thorough\n",
        &["ralph.config.yaml:1:", "profile", "quick"],
    );
}
