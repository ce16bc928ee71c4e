//! A whole fix run on each provider's own protocol, fallbacks from a dead provider, and the
//! cost of each run against the bundled price table.

use super::support::*;

/// Fixes the Python fixture with every role on `model`, served by `llm`; returns the report.
async fn fix_on(
    llm: &MockLlm,
    model: &str,
    env: &[(&str, String)],
    config: Option<&str>,
) -> serde_json::Value {
    let dir = fixture("py-median");
    if let Some(config) = config {
        write_config(dir.path(), config);
    }
    llm.helpful().script(
        "artisan",
        [
            text(code("python", HALF_FIXED_PY)),
            text(code("python", FIXED_PY)),
        ],
    );
    ralph_with_env(dir.path(), env)
        .args(["median.py", "--no-adversarial", "--models", model])
        .assert()
        .code(0);
    assert_file(dir.path(), "median.py", FIXED_PY);
    let report = report(dir.path());
    assert_eq!(report["iterations"], 2);
    report
}

/// The report's cost is the reported tokens at `input`/`output` dollars per million, exactly;
/// prompt tokens read from or written to a cache (Anthropic's) at the model's cache prices.
fn assert_priced(report: &serde_json::Value, model: &str, input: f64, output: f64) {
    let tokens = &report["tokens"];
    let (i, o) = (
        tokens["input_tokens"].as_f64().unwrap(),
        tokens["output_tokens"].as_f64().unwrap(),
    );
    let (read, written) = (
        tokens["cache_read_tokens"].as_f64().unwrap(),
        tokens["cache_write_tokens"].as_f64().unwrap(),
    );
    assert!(i > 0.0 && o > 0.0, "{report}");
    // Anthropic's cache: reads at a tenth of the input price, writes at 1.25 times.
    let expected =
        ((i - read - written) * input + read * input * 0.1 + written * input * 1.25 + o * output)
            / 1_000_000.0;
    let cost = report["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "cost {cost} != {expected}");
    let by_model = report["cost_by_model"].as_object().unwrap();
    assert_eq!(by_model.keys().collect::<Vec<_>>(), [model]);
}

#[tokio::test(flavor = "multi_thread")]
async fn fixes_on_anthropic() {
    let llm = MockLlm::start_with(Protocol::Anthropic).await;
    let env = [
        ("ANTHROPIC_BASE_URL", llm.uri()),
        ("ANTHROPIC_API_KEY", "sk-ant-test".into()),
    ];
    let report = fix_on(&llm, "claude", &env, None).await;
    assert_priced(&report, "anthropic/claude-sonnet-4-5", 3.0, 15.0);
    assert!(llm.models().await.iter().all(|m| m == "claude-sonnet-4-5"));
    assert!(llm
        .headers("x-api-key")
        .await
        .iter()
        .all(|k| k == "sk-ant-test"));
    assert!(llm
        .requests()
        .await
        .iter()
        .all(|(_, r)| r["stream"] == true && r["max_tokens"].as_u64().is_some()));
}

#[tokio::test(flavor = "multi_thread")]
async fn fixes_on_gemini_without_streaming() {
    let llm = MockLlm::start_with(Protocol::Gemini).await;
    let env = [
        ("GEMINI_BASE_URL", llm.uri()),
        ("GOOGLE_API_KEY", "g-test".into()),
    ];
    let config = "providers:\n  gemini:\n    stream: false\n";
    let report = fix_on(&llm, "flash", &env, Some(config)).await;
    assert_priced(&report, "gemini/gemini-2.5-flash", 0.30, 2.50);
    assert!(llm.models().await.iter().all(|m| m == "gemini-2.5-flash"));
    assert!(
        llm.headers("x-goog-api-key")
            .await
            .iter()
            .all(|k| k == "g-test"),
        "GOOGLE_API_KEY stands in for GEMINI_API_KEY"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fixes_on_ollama() {
    let llm = MockLlm::start_with(Protocol::Ollama).await;
    let report = fix_on(
        &llm,
        "ollama/qwen2.5-coder:7b",
        &[("OLLAMA_HOST", llm.uri())],
        None,
    )
    .await;
    assert_priced(&report, "ollama/qwen2.5-coder:7b", 0.0, 0.0);
    assert!(llm.models().await.iter().all(|m| m == "qwen2.5-coder:7b"));
}

#[tokio::test(flavor = "multi_thread")]
async fn fixes_on_azure() {
    let llm = MockLlm::start_with(Protocol::Azure).await;
    let env = [
        ("AZURE_OPENAI_ENDPOINT", llm.uri()),
        ("AZURE_OPENAI_API_KEY", "az-test".into()),
    ];
    // Azure deployments are named by their owner: their price comes from the config.
    let config = "prices:\n  azure/code-fixer: { input: 2.0, output: 8.0 }\n";
    let report = fix_on(&llm, "azure/code-fixer", &env, Some(config)).await;
    assert_priced(&report, "azure/code-fixer", 2.0, 8.0);
    assert!(llm.models().await.iter().all(|m| m == "code-fixer"));
    assert!(llm.headers("api-key").await.iter().all(|k| k == "az-test"));
}

#[tokio::test(flavor = "multi_thread")]
async fn fixes_on_openai_priced_to_the_cent() {
    let llm = MockLlm::start().await;
    let env = [
        ("OPENAI_BASE_URL", llm.base_url()),
        ("OPENAI_API_KEY", "sk-test".into()),
    ];
    let report = fix_on(&llm, "openai/gpt-4.1-mini", &env, None).await;
    assert_priced(&report, "openai/gpt-4.1-mini", 0.40, 1.60);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_provider_falls_back_to_a_live_one() {
    let dir = fixture_with_config("py-median", "models:\n  artisan:\n    model: anthropic/claude-sonnet-4-5\n    fallbacks: [openai/gpt-4.1]\nproviders:\n  anthropic:\n    max_retries: 1\n");
    let llm = artisan_always("python", FIXED_PY).await;
    assert_exits_saying(
        ralph(dir.path(), &llm)
            .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .args(["median.py"]),
        0,
        &["falling back to openai/gpt-4.1"],
    );
    let report = report(dir.path());
    let fallbacks = report["fallbacks"].as_array().unwrap();
    assert_eq!(fallbacks.len(), 1, "{report}");
    assert_eq!(fallbacks[0]["from"], "anthropic/claude-sonnet-4-5");
    assert_eq!(fallbacks[0]["to"], "openai/gpt-4.1");
    assert_eq!(fallbacks[0]["role"], "artisan");
    assert!(report["cost_by_model"].get("openai/gpt-4.1").is_some());
    assert!(
        report["cost_by_model"]
            .get("anthropic/claude-sonnet-4-5")
            .is_none(),
        "the dead provider cost nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn defaults_need_only_one_providers_key() {
    // Nothing configured: the spec's defaults (Gemini, Claude, a small GPT); with only an
    // OpenAI key each role runs on its OpenAI fallback, and says so.
    let dir = fixture("py-median");
    let llm = artisan_always("python", FIXED_PY).await;
    assert_exits_saying(
        ralph(dir.path(), &llm).args(["median.py"]),
        0,
        &["the artisan runs on openai/gpt-4.1", "ANTHROPIC_API_KEY"],
    );
    let models = llm.models().await;
    assert!(
        models.iter().all(|m| m == "gpt-4.1" || m == "gpt-4.1-mini"),
        "{models:?}"
    );
}

/// The user's own example, `--models librarian=gemini,artisan=claude,critic=gpt-mini`: three
/// roles on three providers' wire protocols in one run, each priced at its own model's rate.
#[tokio::test(flavor = "multi_thread")]
async fn three_roles_on_three_providers_in_one_run() {
    let gemini = MockLlm::start_with(Protocol::Gemini).await;
    let anthropic = MockLlm::start_with(Protocol::Anthropic).await;
    let openai = MockLlm::start().await;
    gemini.helpful();
    openai.helpful();
    anthropic.script(
        "artisan",
        [
            text(code("python", HALF_FIXED_PY)),
            text(code("python", FIXED_PY)),
        ],
    );
    // The Librarian's analysis on every failure, so that its provider is called.
    let dir = fixture_with_config("py-median", "librarian: { analyze: always }\n");
    let env = [gemini.env(), anthropic.env(), openai.env()].concat();
    ralph_with_env(dir.path(), &env)
        .args([
            "median.py",
            "--no-adversarial",
            "--models",
            "librarian=gemini,artisan=claude,critic=gpt-mini",
        ])
        .assert()
        .code(0);
    assert_file(dir.path(), "median.py", FIXED_PY);
    // Each server heard only its own role.
    for (llm, role) in [
        (&gemini, "librarian"),
        (&anthropic, "artisan"),
        (&openai, "critic"),
    ] {
        let requests = llm.requests().await;
        assert!(!requests.is_empty(), "{role}");
        assert!(
            requests.iter().all(|(r, _)| r == role),
            "{role}: {requests:?}"
        );
    }
    let report = report(dir.path());
    let by_model = report["cost_by_model"].as_object().unwrap();
    let mut models: Vec<&str> = by_model.keys().map(String::as_str).collect();
    models.sort();
    assert_eq!(
        models,
        [
            "anthropic/claude-sonnet-4-5",
            "gemini/gemini-2.5-pro",
            "openai/gpt-4.1-mini"
        ]
    );
    for (role, model) in [
        ("librarian", "gemini/gemini-2.5-pro"),
        ("artisan", "anthropic/claude-sonnet-4-5"),
        ("critic", "openai/gpt-4.1-mini"),
    ] {
        let by_role = report["cost_by_role"][role].as_f64().unwrap();
        assert!(by_role > 0.0, "{role}");
        assert_eq!(by_role, by_model[model].as_f64().unwrap(), "{role}");
    }
}

/// Found against llama.cpp: a slow model's call past `timeout_seconds` ended the run with no
/// hint. It is tried once more (here answered), the first attempt is charged as abandoned, and
/// the retry, like every provider retry, shows in the live view and the report.
#[tokio::test(flavor = "multi_thread")]
async fn a_timed_out_call_is_retried_and_retries_are_shown() {
    let dir = fixture("py-median");
    let llm = artisan_script([
        slow(code("python", FIXED_PY), std::time::Duration::from_secs(4)),
        text(code("python", FIXED_PY)),
    ])
    .await;
    // The Critic's first request meets a busy server, retried by the provider client.
    llm.script(
        "critic",
        [
            Answer::Status {
                status: 503,
                body:
                    r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#
                        .into(),
                headers: vec![("retry-after".into(), "0".into())],
            },
            text("VERDICT: APPROVE"),
        ],
    );
    write_config(
        dir.path(),
        "providers:\n  openai:\n    timeout_seconds: 1\n",
    );
    let stderr = stderr_at(
        ralph(dir.path(), &llm).args(["median.py", "--models", "gpt-mini"]),
        0,
    );
    assert_has(&stderr, &["no reply within 1s; a slow model (a local one on a CPU) may need more: raise providers.openai.timeout_seconds", "trying openai/gpt-4.1-mini once more", "openai: status 503 (attempt 1); retrying in"]);
    assert!(
        !stderr.contains("\u{1b}["),
        "no colour codes off a terminal"
    );
    let report = report(dir.path());
    assert_eq!(report["abandoned_calls"], 1);
    let warnings = report["warnings"].to_string();
    assert_has(&warnings, &["retrying in", "once more"]);
}

/// A reply the provider cut short at `max_tokens` is said to the user: a warning on the run's
/// events, so in the report, though the part that notices it (the HTTP reply's reader) knows
/// nothing of the run.
#[tokio::test(flavor = "multi_thread")]
async fn a_reply_cut_short_is_a_warning_in_the_report() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let chunk = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4.1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let body = chunk(
        serde_json::json!({"role": "assistant", "content": code("python", FIXED_PY)}),
        serde_json::Value::Null,
    ) + &chunk(serde_json::json!({}), serde_json::json!("length"))
        + "data: [DONE]\n\n";
    llm.helpful().script(
        "artisan",
        [Answer::Status {
            status: 200,
            body,
            headers: vec![("content-type".into(), "text/event-stream".into())],
        }],
    );
    ralph(dir.path(), &llm).arg("median.py").assert().code(0);
    let report = report(dir.path());
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(
        warnings
            .iter()
            .filter(|w| w.contains("reached max_tokens") && w.contains("cut short"))
            .count(),
        1,
        "{warnings:?}"
    );
}
