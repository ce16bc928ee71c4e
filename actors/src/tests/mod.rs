//! Unit tests of the role actors and the Supervisor, run under actix with `mockall` mocks of the
//! outside-world traits: no network, no processes, no files.
//!
//! The LLM client, the test runner and the workspace are `mockall` mocks; the session store of the
//! Supervisor tests is [`MemStore`], a small in-memory fake that keeps everything saved so the
//! tests can read it back.

mod beside;
mod caller;
mod chaos;
mod guard;
mod machine;
mod roles;
mod session;
mod supervisor;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::events::bus::EventBus;
use crate::policy::budget::{Ledger, Price, Prices};
use crate::ports::llm::{
    ByteBoundCounter, ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError, MockLlmClient,
    Speaker, TokenCounter,
};
use crate::ports::runner::{MockTestRunner, RunnerError, TestRunner};
use crate::ports::store::{SessionStore, StoreError};
use crate::ports::workspace::{MockWorkspace, SourceFile};
use crate::role::Role;
use crate::roles::caller::Caller;
use crate::schema::context::ContextPack;
use crate::schema::report::Report;
use crate::schema::state::{IterationRecord, SessionState};
use crate::schema::test_run::{
    CaseStatus, Category, Coverage, ResultSource, RunStatus, TestCase, TestRun, Totals,
};
use crate::schema::usage::Usage;
use crate::settings::RunSettings;

/// The one model every role runs on unless a test says otherwise.
const MODEL: &str = "test/model";
/// Dollars per million tokens of [`MODEL`].
const INPUT_PRICE: f64 = 1.0;
const OUTPUT_PRICE: f64 = 2.0;

const TARGET_PATH: &str = "src/stats.py";
const TARGET: &str = "def median(xs):\n    return xs[len(xs) // 2]\n";
const FIXED: &str = "def median(xs):\n    s = sorted(xs)\n    n = len(s)\n    return (s[(n - 1) // 2] + s[n // 2]) / 2\n";
const TESTS: &str =
    "from stats import median\n\ndef test_even():\n    assert median([4, 1, 3, 2]) == 2.5\n";
const FAILING_ID: &str = "tests/test_stats.py::test_even";

/// Waits at most this long for anything a test awaits: a hang is a failure, not a stuck suite.
const NO_HANG: Duration = Duration::from_secs(5);

/// The defaults of the brief, every role on [`MODEL`], with every call on the critical path
/// (the Librarian's analysis whenever the last run failed, waited for, the Critic's review before the
/// tests): the scripted tests count on that order. The `auto` policies have their own tests.
fn settings() -> RunSettings {
    let mut s = RunSettings::with_model(MODEL);
    s.librarian_analyze = crate::settings::Analyze::Always;
    s.wait_for_analysis = true;
    s.critic_mode = crate::settings::CriticMode::Gate;
    s
}

/// LocalGuard's actor over a guard that is off: the roles' tests are not about masking
/// (`guard.rs` is).
fn guard_off() -> actix::Addr<crate::roles::local_guard::LocalGuard> {
    use actix::Actor;
    crate::roles::local_guard::LocalGuard::new(
        Arc::new(ralph_guard::Guard::off()),
        EventBus::discard(),
    )
    .start()
}

fn prices(input: f64, output: f64) -> Prices {
    Prices(BTreeMap::from([(
        MODEL.to_string(),
        Price {
            input,
            output,
            cache_read: None,
            cache_write: None,
        },
    )]))
}

/// What `usage` costs at [`INPUT_PRICE`] and [`OUTPUT_PRICE`].
fn cost_of(usage: Usage) -> f64 {
    (usage.input_tokens as f64 * INPUT_PRICE + usage.output_tokens as f64 * OUTPUT_PRICE)
        / 1_000_000.0
}

fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    }
}

fn reply(text: &str, usage: Usage) -> ChatReply {
    ChatReply {
        text: text.to_string(),
        usage,
        model: MODEL.to_string(),
        ..ChatReply::default()
    }
}

/// An Artisan reply holding `code` in one fenced block.
fn code_reply(code: &str) -> String {
    format!("Here is the whole file:\n```python\n{code}```\nIt sorts before picking the middle.")
}

fn passing() -> TestRun {
    TestRun {
        exit_code: Some(0),
        duration_ms: 7,
        source: ResultSource::Text,
        framework: Some("pytest".into()),
        totals: Totals {
            passed: 2,
            ..Totals::default()
        },
        output: "2 passed in 0.01s\n".into(),
        ..TestRun::new("pytest", RunStatus::Passed)
    }
}

/// A failed run of one test whose failure text is `message`.
fn failing(message: &str) -> TestRun {
    TestRun {
        status: RunStatus::Failed,
        exit_code: Some(1),
        totals: Totals {
            passed: 1,
            failed: 1,
            ..Totals::default()
        },
        tests: vec![TestCase {
            id: FAILING_ID.into(),
            status: CaseStatus::Fail,
            message: Some(message.into()),
            ..TestCase::default()
        }],
        output: format!("FAILED {FAILING_ID}\nE   {message}\n1 failed, 1 passed\n"),
        ..passing()
    }
}

fn source(path: &str, content: &str) -> SourceFile {
    SourceFile {
        path: path.into(),
        content: content.into(),
    }
}

/// Every request the LLM mock saw, in order.
type Log = Arc<Mutex<Vec<ChatRequest>>>;

/// An LLM mock that records each request and answers `answer(request, n)`, where `n` counts the
/// earlier requests of the same role.
fn llm(
    log: &Log,
    answer: impl Fn(&ChatRequest, usize) -> Result<ChatReply, LlmError> + Send + 'static,
) -> MockLlmClient {
    let log = log.clone();
    let mut mock = MockLlmClient::new();
    mock.expect_complete().returning(move |request| {
        let n = {
            let mut log = log.lock().unwrap();
            let n = log.iter().filter(|r| r.role == request.role).count();
            log.push((*request).clone());
            n
        };
        answer(&request, n)
    });
    mock
}

/// An LLM mock that records each request and answers every one with `answer`.
fn always(log: &Log, answer: Result<ChatReply, LlmError>) -> MockLlmClient {
    llm(log, move |_, _| answer.clone())
}

fn requests(log: &Log, role: Role) -> Vec<ChatRequest> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|r| r.role == role)
        .cloned()
        .collect()
}

/// The request's last user message: what the role was asked this time.
fn user_prompt(request: &ChatRequest) -> &str {
    let last = request.messages.last().expect("a request has messages");
    assert_eq!(last.speaker, Speaker::User);
    &last.content
}

/// Sends `msg` to `addr` and waits for the answer: no answer within [`NO_HANG`], or a mailbox
/// closed, fails the test.
async fn ask<A, M>(addr: &actix::Addr<A>, msg: M) -> M::Result
where
    A: actix::Handler<M>,
    A::Context: actix::dev::ToEnvelope<A, M>,
    M: actix::Message + Send + 'static,
    M::Result: Send,
{
    tokio::time::timeout(NO_HANG, addr.send(msg))
        .await
        .expect("no hang")
        .expect("mailbox")
}

/// Fails, showing the reason, unless the run's reason contains `text`.
#[track_caller]
fn assert_reason(report: &Report, text: &str) {
    assert!(report.reason.contains(text), "{}", report.reason);
}

/// Fails, showing every line, unless one of `lines` contains `text`.
#[track_caller]
fn assert_says(lines: &[String], text: &str) {
    assert!(
        lines.iter().any(|l| l.contains(text)),
        "no line says {text:?}: {lines:?}"
    );
}

/// The Caller the Supervisor would build, over `llm`, with a ledger capped at `cap` dollars.
fn caller(
    llm: impl LlmClient + 'static,
    counter: impl TokenCounter + 'static,
    prices: Prices,
    cap: f64,
) -> Arc<Caller> {
    Arc::new(Caller::new(
        Arc::new(llm),
        guard_off(),
        Arc::new(counter),
        Arc::new(Ledger::new(cap, prices, EventBus::discard())),
        EventBus::discard(),
    ))
}

fn default_caller(llm: MockLlmClient) -> Arc<Caller> {
    caller(
        llm,
        ByteBoundCounter,
        prices(INPUT_PRICE, OUTPUT_PRICE),
        100.0,
    )
}

/// A workspace mock over one target file whose content is `file`: reads see the last write.
fn workspace(file: &Arc<Mutex<String>>) -> MockWorkspace {
    let mut ws = MockWorkspace::new();
    let read = file.clone();
    ws.expect_target()
        .returning(move || Ok(source(TARGET_PATH, &read.lock().unwrap())));
    let written = file.clone();
    ws.expect_write_target().returning(move |content| {
        *written.lock().unwrap() = content;
        Ok(())
    });
    ws.expect_test_file()
        .returning(|| Ok(Some(source("tests/test_stats.py", TESTS))));
    ws.expect_prompt().returning(|| Ok(None));
    ws.expect_related().returning(|_, budget| {
        Ok(ContextPack {
            budget,
            ..ContextPack::default()
        })
    });
    ws.expect_manifest().returning(|| {
        Ok(Some(source(
            "pyproject.toml",
            "[project]\nname = \"stats\"\n",
        )))
    });
    ws
}

/// A test-runner mock that answers `runs` in order, and panics (an error the test sees) when
/// called more often.
fn runner(runs: Vec<TestRun>) -> MockTestRunner {
    let mut mock = MockTestRunner::new();
    let mut runs = runs.into_iter();
    let times = runs.len();
    mock.expect_run()
        .times(times)
        .returning(move |_| Ok(runs.next().expect("a scripted run")));
    mock.expect_command().returning(|| "pytest".into());
    mock
}

/// A runner whose first run fails with `message` and whose second passes: one iteration fixes it.
fn fails_then_passes(message: &str) -> MockTestRunner {
    runner(vec![failing(message), passing()])
}

/// An in-memory session store that keeps everything it is asked to save.
#[derive(Default)]
struct MemStore {
    saved: Mutex<Saved>,
    /// Reading the last results fails as a damaged file would.
    damaged: bool,
}

#[derive(Default)]
struct Saved {
    results: Vec<(u32, TestRun)>,
    /// Chaos's runs: iteration, round, run.
    adversarial: Vec<(u32, u32, TestRun)>,
    /// Mutation reports, in the schema's form.
    mutation_reports: Vec<serde_json::Value>,
    iterations: Vec<IterationRecord>,
    states: Vec<SessionState>,
    reports: Vec<Report>,
    checkpoints: BTreeMap<u32, String>,
}

impl MemStore {
    fn saved(&self) -> std::sync::MutexGuard<'_, Saved> {
        self.saved.lock().unwrap()
    }

    /// A store whose results file cannot be read back.
    fn failing_reads() -> Self {
        Self {
            damaged: true,
            ..Self::default()
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for MemStore {
    async fn last_test_results(&self) -> Result<Option<TestRun>, StoreError> {
        if self.damaged {
            return Err(StoreError::Damaged {
                path: "test-results-iteration-0.json".into(),
                message: "EOF while parsing a value".into(),
            });
        }
        Ok(self.saved().results.last().map(|(_, run)| run.clone()))
    }
    async fn save_test_results(&self, iteration: u32, run: &TestRun) -> Result<(), StoreError> {
        self.saved().results.push((iteration, run.clone()));
        Ok(())
    }
    async fn save_adversarial_results(
        &self,
        iteration: u32,
        round: u32,
        run: &TestRun,
    ) -> Result<(), StoreError> {
        self.saved()
            .adversarial
            .push((iteration, round, run.clone()));
        Ok(())
    }
    async fn save_mutation_report(
        &self,
        document: &serde_json::Value,
    ) -> Result<String, StoreError> {
        self.saved().mutation_reports.push(document.clone());
        Ok(".ralph/session-test/mutation-report.json".into())
    }
    async fn append_iteration(&self, record: &IterationRecord) -> Result<(), StoreError> {
        self.saved().iterations.push(record.clone());
        Ok(())
    }
    async fn save_state(&self, state: &SessionState) -> Result<(), StoreError> {
        self.saved().states.push(state.clone());
        Ok(())
    }
    async fn save_report(&self, report: &Report) -> Result<(), StoreError> {
        self.saved().reports.push(report.clone());
        Ok(())
    }
    async fn test_results(&self, iteration: u32) -> Result<Option<TestRun>, StoreError> {
        Ok(self
            .saved()
            .results
            .iter()
            .rev()
            .find(|(n, _)| *n == iteration)
            .map(|(_, run)| run.clone()))
    }
    async fn save_checkpoint(&self, iteration: u32, content: &str) -> Result<(), StoreError> {
        self.saved()
            .checkpoints
            .insert(iteration, content.to_string());
        Ok(())
    }
    async fn load_checkpoint(&self, iteration: u32) -> Result<Option<String>, StoreError> {
        Ok(self.saved().checkpoints.get(&iteration).cloned())
    }
}

/// A slow provider: every call of the mock it wraps is answered after `delay`.
struct SlowLlm {
    inner: MockLlmClient,
    delay: Duration,
}

#[async_trait::async_trait]
impl LlmClient for SlowLlm {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        tokio::time::sleep(self.delay).await;
        self.inner.complete(request).await
    }
}

/// A long test suite: after its first `fast` runs, each run of the mock it wraps starts only when
/// the cancel token fires (as a real runner kills its process group), and `entered` is notified
/// when such a run begins.
struct SlowRunner {
    inner: MockTestRunner,
    fast: usize,
    calls: AtomicUsize,
    entered: Arc<Notify>,
}

#[async_trait::async_trait]
impl TestRunner for SlowRunner {
    async fn run(&self, cancel: CancellationToken) -> Result<TestRun, RunnerError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.fast {
            self.entered.notify_one();
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = tokio::time::sleep(Duration::from_secs(60)) => {}
            }
        }
        self.inner.run(cancel).await
    }

    fn command(&self) -> String {
        self.inner.command()
    }
}
