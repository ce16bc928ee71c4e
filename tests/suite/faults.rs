//! Faults on the wire, for each provider protocol: whole runs through a proxy that cuts
//! replies mid-stream, stalls, ends a stream inside an event, duplicates or reorders its
//! events, answers with a proxy's HTML page, gzip garbage or a 200 carrying an error. Every
//! run must end with a report, the documented exit code, its best state on disk, and a bill no
//! smaller than what the server billed (and exactly it when no reply was lost).

mod proxy;

use proxy::{Fault, FaultProxy, Served};

use super::support::*;

/// One provider's wire, priced so that its money can be checked.
struct Wire {
    protocol: Protocol,
    provider: &'static str,
    model: &'static str,
    /// Dollars per million input and output tokens, as the run prices the model.
    price: (f64, f64),
    /// Config lines of the wire's own (prices of models the bundled table leaves free or
    /// does not know).
    config: &'static str,
}

const WIRES: [Wire; 5] = [
    Wire {
        protocol: Protocol::OpenAi,
        provider: "openai",
        model: "openai/gpt-4.1-mini",
        price: (0.40, 1.60),
        config: "",
    },
    Wire {
        protocol: Protocol::Azure,
        provider: "azure",
        model: "azure/code-fixer",
        price: (2.0, 8.0),
        config: "prices:\n  azure/code-fixer: { input: 2.0, output: 8.0 }\n",
    },
    Wire {
        protocol: Protocol::Anthropic,
        provider: "anthropic",
        model: "claude",
        price: (3.0, 15.0),
        config: "",
    },
    Wire {
        protocol: Protocol::Gemini,
        provider: "gemini",
        model: "flash",
        price: (0.30, 2.50),
        config: "",
    },
    Wire {
        protocol: Protocol::Ollama,
        provider: "ollama",
        model: "ollama/qwen2.5-coder:7b",
        price: (1.0, 2.0),
        config: "prices:\n  ollama/qwen2.5-coder:7b: { input: 1.0, output: 2.0 }\n",
    },
];

/// How a run with one fault on the Artisan's second call must end.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ends {
    /// The fault is retried or its spoilt proposal undone: the file is fixed.
    Fixed,
    /// The call fails for good (not retried: the server may have billed it, or the reply is
    /// not the protocol): exit 1, the best state (the first iteration's) on disk.
    Failed,
}

/// Every fault, and how a run that meets it ends.
const FAULTS: [(Fault, Ends); 9] = [
    (Fault::Cut, Ends::Failed),
    (Fault::Stall, Ends::Fixed),
    (Fault::HalfEvent, Ends::Failed),
    (Fault::Duplicate, Ends::Fixed),
    (Fault::Reorder, Ends::Fixed),
    (Fault::HtmlPage(502), Ends::Fixed),
    (Fault::HtmlOk, Ends::Failed),
    (Fault::GzipGarbage, Ends::Failed),
    (Fault::ErrorBody, Ends::Fixed),
];

/// `env` with every URL of `from` pointing at `to` instead.
fn through(env: Vec<(&'static str, String)>, from: &str, to: &str) -> Vec<(&'static str, String)> {
    env.into_iter()
        .map(|(k, v)| (k, v.replace(from, to)))
        .collect()
}

/// Whether a request's reply was lost after a success status: the server may have billed
/// it, so the run charges its reservation (a captive portal's page included: the run cannot
/// tell it from a provider's reply it cannot read).
fn lost(s: &Served) -> bool {
    matches!(
        s.fault,
        Some(Fault::Cut | Fault::Stall | Fault::HalfEvent | Fault::GzipGarbage | Fault::HtmlOk)
    )
}

/// Runs the Python fixture on `wire` with `fault` on the Artisan's second call: what was wrong
/// with how the run ended, if anything.
async fn run_with(wire: &Wire, fault: Fault, ends: Ends) -> Option<String> {
    let llm = MockLlm::start_with(wire.protocol).await;
    llm.helpful()
        .script("artisan", [text(code("python", HALF_FIXED_PY))])
        .always("artisan", text(code("python", FIXED_PY)));
    let proxy = FaultProxy::start(wire.protocol, &llm.uri()).await;
    proxy.plan("artisan", [None, Some(fault)]);
    let dir = fixture("py-median");
    write_config(
        dir.path(),
        &format!(
            "providers:\n  {}:\n    idle_timeout_seconds: 1\n{}",
            wire.provider, wire.config
        ),
    );
    let env = through(llm.env(), &llm.uri(), &proxy.url);
    let out = ralph_with_env(dir.path(), &env)
        .args(["median.py", "--no-adversarial", "--models", wire.model])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let said = format!(
        "{:?} on {}: {}\n{}",
        fault,
        wire.provider,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, kept) = match ends {
        Ends::Fixed => (0, FIXED_PY),
        Ends::Failed => (1, HALF_FIXED_PY),
    };
    if out.status.code() != Some(code) {
        return Some(format!("exit {:?}, not {code}: {said}", out.status.code()));
    }
    if std::fs::read_to_string(dir.path().join("median.py")).unwrap() != kept {
        return Some(format!("not the expected median.py on disk: {said}"));
    }
    let report = report(dir.path());
    let served = proxy.served();
    if !served
        .iter()
        .any(|s| s.fault == Some(fault) && s.role == "artisan")
    {
        return Some(format!("the fault was never served: {said}\n{served:?}"));
    }
    let (input, output) = wire.price;
    let billed: f64 = served
        .iter()
        .filter_map(|s| s.billed)
        .map(|b| b.cost(input, output))
        .sum();
    let cost = report["cost_usd"].as_f64().unwrap();
    let money = format!("cost {cost}, billed {billed}: {served:?}\n{report}");
    if served.iter().any(lost) {
        // A reply the server billed and the run never read is charged its reservation, at
        // least what the server billed for it.
        if cost < billed * (1.0 - 1e-9) || report["abandoned_calls"].as_u64() < Some(1) {
            return Some(format!("a lost reply not charged: {money}\n{said}"));
        }
    } else if (cost - billed).abs() >= 1e-9 {
        return Some(format!("not charged what was billed: {money}\n{said}"));
    }
    None
}

/// Runs every fault on `wire`, and fails with every run that ended wrong.
async fn every_fault_on(wire: &Wire) {
    let mut wrong = Vec::new();
    for (fault, ends) in FAULTS {
        if let Some(why) = run_with(wire, fault, ends).await {
            wrong.push(format!("{fault:?}: {why}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fault_on_openai() {
    every_fault_on(&WIRES[0]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fault_on_azure() {
    every_fault_on(&WIRES[1]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fault_on_anthropic() {
    every_fault_on(&WIRES[2]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fault_on_gemini() {
    every_fault_on(&WIRES[3]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fault_on_ollama() {
    every_fault_on(&WIRES[4]).await;
}
