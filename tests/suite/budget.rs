//! The budget's promises through the binary, against local servers that count and bill as real
//! ones were seen to: unpriced models, a server that counts more prompt tokens than an estimate,
//! replies without usage on every protocol, a proxy's own cost, and a provider that ignores
//! `max_tokens`.

use super::support::*;

/// A fix that takes two iterations on the Python fixture.
fn two_iterations(llm: &MockLlm) {
    llm.helpful().script(
        "artisan",
        [
            text(code("python", HALF_FIXED_PY)),
            text(code("python", FIXED_PY)),
        ],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unpriced_model_is_refused_at_start_unless_allowed() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    two_iterations(&llm);
    let original = std::fs::read_to_string(dir.path().join("median.py")).unwrap();
    assert_exits_saying(
        ralph(dir.path(), &llm).args(["median.py", "--models", "openai/smollm2-135m"]),
        2,
        &[
            "no price is known for openai/smollm2-135m",
            "prices:",
            "budgets.allow_unpriced: true",
        ],
    );
    assert!(llm.requests().await.is_empty(), "refused before any call");
    assert_file(dir.path(), "median.py", original);

    write_config(dir.path(), "budgets:\n  allow_unpriced: true\n");
    let report = ralph_report(
        dir.path(),
        &llm,
        &["median.py", "--models", "openai/smollm2-135m"],
        0,
    );
    assert_eq!(report["cost_usd"], 0.0);
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("budgets.allow_unpriced: openai/smollm2-135m has no known price"),
        "{notes}"
    );
}

/// Found against llama.cpp: a priced local model whose server counts more prompt tokens than
/// o200k × 1.15 estimates (2,948 against 2,770), and replies that use all they are granted.
/// The reservation must bound the prompt by its bytes, so the budget holds. The server here
/// counts 0.6 tokens a character (a small vocabulary on code), and several budgets make one
/// of the last calls land where an estimate would still let it through.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_counting_more_tokens_than_estimated_cannot_cross_the_budget() {
    for budget in ["0.010", "0.013", "0.017", "0.021", "0.026"] {
        let dir = fixture("py-median");
        let llm = MockLlm::start().await;
        llm.bill(Billing {
            tokens_per_char: Some(0.6),
            ..Billing::default()
        });
        // Never a fix: the run goes on until the budget stops it. Each reply bills all the
        // output it is granted.
        for role in ["librarian", "artisan", "critic"] {
            llm.always(
                role,
                Answer::Text {
                    text: if role == "critic" {
                        "VERDICT: APPROVE".into()
                    } else {
                        code("python", HALF_FIXED_PY)
                    },
                    completion_tokens: 1_000_000,
                },
            );
        }
        write_config(
            dir.path(),
            "prices:\n  openai/smollm2-135m: { input: 1.0, output: 0.01 }\n\
             circuit_breaker:\n  entropy_threshold: 100\n",
        );
        ralph(dir.path(), &llm)
            .args(["median.py", "--models", "openai/smollm2-135m"])
            .args(["--budget", budget, "-m", "30"])
            .assert()
            .code(3);
        let report = report(dir.path());
        let spent = report["cost_usd"].as_f64().unwrap();
        let cap: f64 = budget.parse().unwrap();
        assert!(spent <= cap + 1e-12, "spent {spent} of {cap}: {report}");
        assert!(report.get("overruns").is_none(), "{report}");
    }
}

/// A reply with text and zero usage (Gemini's final stream chunk behind LiteLLM) is charged by
/// estimate and warned about once, on every protocol.
#[tokio::test(flavor = "multi_thread")]
async fn replies_without_usage_are_charged_by_estimate_on_every_protocol() {
    for (protocol, model) in [
        (Protocol::Gemini, "gemini/gemini-2.5-flash"),
        (Protocol::Anthropic, "anthropic/claude-haiku-4-5"),
        (Protocol::OpenAi, "openai/gpt-4.1-mini"),
        (Protocol::Ollama, "ollama/qwen2.5-coder:7b"),
    ] {
        let dir = fixture("py-median");
        let llm = MockLlm::start_with(protocol).await;
        llm.bill(Billing {
            zero_usage: true,
            ..Billing::default()
        });
        two_iterations(&llm);
        let mut cmd = assert_cmd::Command::cargo_bin("ralph-loop").unwrap();
        isolate(&mut cmd, dir.path());
        let env: &[(&str, String)] = match protocol {
            Protocol::Gemini => &[
                ("GEMINI_BASE_URL", llm.uri()),
                ("GEMINI_API_KEY", "g-test".into()),
            ],
            Protocol::Anthropic => &[
                ("ANTHROPIC_BASE_URL", llm.uri()),
                ("ANTHROPIC_API_KEY", "sk-ant-test".into()),
            ],
            Protocol::Ollama => &[("OLLAMA_HOST", llm.uri())],
            _ => &[
                ("OPENAI_BASE_URL", llm.base_url()),
                ("OPENAI_API_KEY", "sk-test".into()),
            ],
        };
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(["median.py", "--no-adversarial", "--models", model])
            .assert()
            .code(0);
        let report = report(dir.path());
        let calls = llm.requests().await.len() as u64;
        assert_eq!(report["estimated_calls"], calls, "{model}: {report}");
        assert!(report["tokens"]["input_tokens"].as_u64().unwrap() > 0);
        assert!(report["tokens"]["output_tokens"].as_u64().unwrap() > 0);
        if protocol != Protocol::Ollama {
            assert!(report["cost_usd"].as_f64().unwrap() > 0.0, "{model}");
        }
        let warnings: Vec<_> = report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w.as_str().unwrap().contains("reported no token usage"))
            .collect();
        assert_eq!(warnings.len(), 1, "{model}: {report}");
    }
}

/// A LiteLLM proxy prices each whole reply in `x-litellm-response-cost`: that is what is
/// charged, before any price table.
#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_s_reported_cost_is_what_is_charged() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    llm.bill(Billing {
        cost_header: Some("0.00125".into()),
        ..Billing::default()
    });
    two_iterations(&llm);
    write_config(dir.path(), "providers:\n  openai:\n    stream: false\n");
    let report = ralph_report(dir.path(), &llm, &["median.py", "--models", "gpt-mini"], 0);
    let calls = llm.requests().await.len() as f64;
    let cost = report["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - calls * 0.00125).abs() < 1e-12,
        "{cost} for {calls} calls"
    );
}

/// A provider that ignores `max_tokens` makes one call cost more than was reserved: the run
/// stops at once and the report names the call and the excess.
#[tokio::test(flavor = "multi_thread")]
async fn a_provider_ignoring_max_tokens_stops_the_run_and_is_named() {
    let dir = fixture("py-median");
    let llm = MockLlm::start().await;
    llm.bill(Billing {
        ignore_max_tokens: true,
        ..Billing::default()
    });
    llm.helpful().script(
        "artisan",
        [Answer::Text {
            text: code("python", FIXED_PY),
            completion_tokens: 200_000,
        }],
    );
    let report = ralph_report(dir.path(), &llm, &["median.py", "--models", "gpt-mini"], 3);
    assert_eq!(report["status"], "budget_exceeded");
    let overruns = report["overruns"].as_array().expect("overruns");
    assert_eq!(overruns.len(), 1, "{report}");
    let o = &overruns[0];
    assert_eq!(o["role"], "artisan");
    assert_eq!(o["model"], "openai/gpt-4.1-mini");
    let (cost, reserved) = (
        o["cost_usd"].as_f64().unwrap(),
        o["reserved_usd"].as_f64().unwrap(),
    );
    assert!(cost > reserved);
    assert!((o["excess_usd"].as_f64().unwrap() - (cost - reserved)).abs() < 1e-12);
    let reason = report["reason"].as_str().unwrap();
    assert!(
        reason.contains("billed 200000 output tokens where 8192 were allowed"),
        "{reason}"
    );
    assert_eq!(
        llm.requests_of("critic").await.len(),
        0,
        "no call after the overrun"
    );
}
