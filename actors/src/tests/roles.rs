//! The role actors, one at a time, each over mocks of the traits it uses.

use std::sync::Arc;

use actix::Actor;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::error::Error;
use crate::events::event::Event;
use crate::ports::file_io::FromFileIo;
use crate::ports::llm::{ChatMessage, MockTokenCounter};
use crate::ports::workspace::WorkspaceError;
use crate::prompt::bundle::ContextBundle;
use crate::prompt::reply::{Proposal, Verdict};
use crate::roles::artisan::{Artisan, Generate};
use crate::roles::critic::{Critic, Review};
use crate::roles::history::ResetContext;
use crate::roles::librarian::{context_budget, Analyse, GatherContext, Librarian};
use crate::roles::tester::{RunTests, Tester};
use crate::schema::context::{ContextChoice, ContextRelation, ExcludedFile, RelatedFile};
use crate::schema::test_run::{CaseStatus, Category, Location, TestCase, TestRun};
use crate::settings::Analyze;
use crate::settings::{ModelSpec, RunSettings};

// ---------------------------------------------------------------------------------------------
// Librarian

/// A workspace mock that expects each file to be read exactly once.
fn workspace_read_once() -> MockWorkspace {
    let mut ws = MockWorkspace::new();
    ws.expect_target()
        .times(1)
        .returning(|| Ok(source(TARGET_PATH, TARGET)));
    ws.expect_test_file()
        .times(1)
        .returning(|| Ok(Some(source("tests/test_stats.py", TESTS))));
    ws.expect_prompt().times(1).returning(|| {
        Ok(Some(source(
            "src/stats.py.prompt.md",
            "Keep it O(n log n).",
        )))
    });
    ws.expect_manifest().times(1).returning(|| {
        Ok(Some(source(
            "pyproject.toml",
            "[project]\nname = \"stats\"\n",
        )))
    });
    ws.expect_related().times(1).returning(|_, budget| {
        Ok(ContextPack {
            budget,
            ..ContextPack::default()
        })
    });
    ws.expect_write_target().never();
    ws
}

/// The last test run as the Supervisor hands it to the Librarian, in memory.
fn last_run(last: Option<TestRun>) -> Option<Arc<TestRun>> {
    last.map(Arc::new)
}

/// An LLM mock that must not be called.
fn silent_llm() -> MockLlmClient {
    let mut llm = MockLlmClient::new();
    llm.expect_complete().never();
    llm
}

/// A workspace with the target only: no test file, prompt or manifest; `related` left to the test.
fn target_only_workspace() -> MockWorkspace {
    let mut ws = MockWorkspace::new();
    ws.expect_target()
        .returning(|| Ok(source(TARGET_PATH, TARGET)));
    ws.expect_test_file().returning(|| Ok(None));
    ws.expect_prompt().returning(|| Ok(None));
    ws.expect_manifest().returning(|| Ok(None));
    ws
}

/// A caller whose model must not be called, and a subscription to its events.
fn silent_caller() -> (Arc<Caller>, crate::events::bus::Subscription) {
    observed_caller(silent_llm())
}

/// The Librarian's question for `iteration` with no last results and no history.
fn fresh(iteration: u32) -> GatherContext {
    GatherContext {
        iteration,
        last: None,
        history: Default::default(),
    }
}

/// A caller over `llm`, and a subscription to its events.
fn observed_caller(llm: MockLlmClient) -> (Arc<Caller>, crate::events::bus::Subscription) {
    let events = EventBus::discard();
    let rx = events.subscribe();
    let caller = Arc::new(Caller::new(
        Arc::new(llm),
        super::guard_off(),
        Arc::new(ByteBoundCounter),
        Arc::new(Ledger::new(
            100.0,
            prices(INPUT_PRICE, OUTPUT_PRICE),
            EventBus::discard(),
        )),
        events,
    ));
    (caller, rx)
}

/// The default settings, the Librarian never asked for an analysis.
fn never_analysing() -> RunSettings {
    let mut s = settings();
    s.librarian_analyze = Analyze::Never;
    s
}

/// The context the Librarian gathers after `run`, from a workspace it reads once.
async fn gather_after(settings: RunSettings, run: TestRun) -> ContextBundle {
    gather(
        settings,
        workspace_read_once(),
        last_run(Some(run)),
        silent_llm(),
    )
    .await
    .expect("context")
}

async fn gather(
    settings: RunSettings,
    ws: MockWorkspace,
    last: Option<Arc<TestRun>>,
    llm: MockLlmClient,
) -> crate::Result<ContextBundle> {
    let librarian = Librarian::new(
        Arc::new(ws),
        default_caller(llm),
        Arc::new(settings),
        "pytest".into(),
    )
    .start();
    let msg = GatherContext {
        iteration: 3,
        last,
        history: Default::default(),
    };
    let mut bundle = ask(&librarian, msg).await?;
    // As the Supervisor does when the Librarian says an analysis is due.
    if bundle.analysis_reason.is_some() {
        let analysis = ask(
            &librarian,
            Analyse {
                iteration: 3,
                context: Arc::new(bundle.clone()),
                cancel: CancellationToken::new(),
            },
        )
        .await?;
        bundle.analysis = Some(analysis).filter(|a| !a.is_empty());
    }
    Ok(bundle)
}

#[actix_rt::test]
async fn librarian_reads_the_project_and_the_last_results_fresh() {
    let bundle = gather(
        settings(),
        workspace_read_once(),
        last_run(Some(passing())),
        silent_llm(),
    )
    .await
    .expect("context");
    assert_eq!(bundle.iteration, 3);
    assert_eq!(
        (bundle.target.path.as_str(), bundle.target.content.as_str()),
        (TARGET_PATH, TARGET)
    );
    assert_eq!(bundle.target.language, "python");
    assert_eq!(bundle.test_file, Some(source("tests/test_stats.py", TESTS)));
    assert_eq!(bundle.instructions.as_deref(), Some("Keep it O(n log n)."));
    assert_eq!(
        bundle.manifest.as_ref().map(|m| m.path.as_str()),
        Some("pyproject.toml")
    );
    assert_eq!(bundle.test_command, "pytest");
    let last = bundle.last_results.expect("the last results");
    assert!(last.passed);
    assert_eq!(last.summary, "passed (2 tests)");
    assert_eq!(bundle.analysis, None, "a passing run needs no analysis");
}

#[actix_rt::test]
async fn librarian_asks_for_an_analysis_once_when_the_last_run_failed() {
    let log = Log::default();
    let mut mock = MockLlmClient::new();
    let seen = log.clone();
    mock.expect_complete().times(1).returning(move |request| {
        seen.lock().unwrap().push(request.into_inner());
        Ok(reply(
            "  The median never sorts its input.\n",
            usage(100, 10),
        ))
    });
    let bundle = gather(
        settings(),
        workspace_read_once(),
        last_run(Some(failing("AssertionError: 3 != 2.5"))),
        mock,
    )
    .await
    .expect("context");
    assert_eq!(
        bundle.analysis.as_deref(),
        Some("The median never sorts its input.")
    );
    let last = bundle.last_results.expect("the last results");
    assert!(!last.passed);
    assert_eq!(last.failing, vec![FAILING_ID.to_string()]);

    let sent = requests(&log, Role::Librarian);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].model, MODEL);
    assert_eq!(sent[0].messages.len(), 2, "system and user, no history");
    let prompt = user_prompt(&sent[0]);
    assert!(prompt.contains(FAILING_ID), "{prompt}");
    assert!(prompt.contains("AssertionError: 3 != 2.5"), "{prompt}");
    assert!(prompt.contains(TARGET), "{prompt}");
}

#[actix_rt::test]
async fn librarian_does_not_analyse_when_librarian_analyze_is_off() {
    let s = never_analysing();
    let bundle = gather(
        s,
        workspace_read_once(),
        last_run(Some(failing("AssertionError"))),
        silent_llm(),
    )
    .await
    .expect("context");
    assert_eq!(bundle.analysis, None);
    assert!(!bundle.last_results.expect("the last results").passed);
}

#[actix_rt::test]
async fn librarian_does_not_analyse_without_earlier_results() {
    let bundle = gather(
        settings(),
        workspace_read_once(),
        last_run(None),
        silent_llm(),
    )
    .await
    .expect("context");
    assert_eq!(bundle.last_results, None);
    assert_eq!(bundle.analysis, None);
}

fn choice(path: &str, distance: u32, relation: ContextRelation, reason: &str) -> ContextChoice {
    ContextChoice {
        path: path.into(),
        distance,
        relation,
        reason: reason.into(),
    }
}

/// A pack as the file-system workspace would build it: the target, one helper it imports, and
/// a farther file left out with its signatures.
fn helper_pack(budget: u32) -> ContextPack {
    ContextPack {
        placed: vec![choice(TARGET_PATH, 0, ContextRelation::Target, "target")],
        related: vec![RelatedFile {
            choice: choice(
                "src/helpers.py",
                1,
                ContextRelation::Imported,
                "imported by target",
            ),
            content: "def mean(xs):\n    return sum(xs) / len(xs)\n".into(),
            language: "python".into(),
            tokens: 21,
        }],
        excluded: vec![ExcludedFile {
            path: "src/far.py".into(),
            distance: 2,
            signatures: vec!["def far(x)".into(), "class Far".into()],
        }],
        excluded_count: 3,
        tokens: 120,
        budget,
        warnings: Vec::new(),
    }
}

#[actix_rt::test]
async fn librarian_packs_related_files_reports_them_and_the_prompt_shows_them() {
    let mut s = never_analysing();
    s.context_windows.insert(Role::Artisan, 100_000);
    s.context_share = 0.2;
    let mut ws = target_only_workspace();
    // The budget is the share of the Artisan's window, counted for the Artisan's model.
    ws.expect_related()
        .withf(|model, budget| model == MODEL && *budget == 20_000)
        .times(1)
        .returning(|_, budget| Ok(helper_pack(budget)));
    let (caller, mut rx) = silent_caller();
    let settings = Arc::new(s);
    let librarian = Librarian::new(Arc::new(ws), caller, settings.clone(), "pytest".into()).start();
    let bundle = ask(&librarian, fresh(2)).await.expect("context");

    let event = rx.try_recv().expect("an event");
    assert_eq!(
        event.event,
        Event::ContextGathered {
            iteration: 2,
            included: vec![
                choice(TARGET_PATH, 0, ContextRelation::Target, "target"),
                choice(
                    "src/helpers.py",
                    1,
                    ContextRelation::Imported,
                    "imported by target"
                ),
            ],
            excluded: 3,
            tokens: 120,
            budget: 20_000,
        }
    );
    assert_eq!(bundle.context.included.len(), 2);
    assert_eq!(bundle.unlisted, 2, "3 left out, 1 of them listed");

    let [_, user] = settings
        .templates
        .render(Role::Artisan, &bundle)
        .expect("renders");
    let prompt = user.content;
    assert!(
        prompt.contains(
            "# Related files, nearest first\n\n## `src/helpers.py` (imported by target)\n```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n\n```"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains("- `src/far.py`: def far(x); class Far\n- and 2 more\n"),
        "{prompt}"
    );
    // The target is shown once, in its own section.
    assert_eq!(prompt.matches(TARGET).count(), 1, "{prompt}");
    let [_, brief] = settings
        .templates
        .render(Role::Librarian, &bundle)
        .expect("renders");
    assert!(brief
        .content
        .contains("## `src/helpers.py` (imported by target)"));
}

#[actix_rt::test]
async fn librarian_goes_on_without_the_graph_and_warns() {
    let s = never_analysing();
    let mut ws = target_only_workspace();
    // No window known: the documented fallback, times the default share.
    ws.expect_related()
        .withf(|_, budget| *budget == 8_000)
        .returning(|_, _| Err(WorkspaceError::Graph("cannot parse the graph".into())));
    let (caller, mut rx) = silent_caller();
    let librarian = Librarian::new(Arc::new(ws), caller, Arc::new(s), "pytest".into()).start();
    let bundle = ask(&librarian, fresh(1)).await.expect("the run goes on");
    assert!(bundle.related.is_empty());
    match &rx.try_recv().expect("a warning").event {
        Event::Warning { message } => {
            assert!(message.contains("cannot parse the graph"), "{message}")
        }
        other => panic!("expected a warning, got {other:?}"),
    }
    assert!(matches!(
        rx.try_recv().map(|e| e.event.clone()),
        Some(Event::ContextGathered { budget: 8_000, ref included, .. }) if included == &[choice(TARGET_PATH, 0, ContextRelation::Target, "target")]
    ));
}

#[actix_rt::test]
async fn librarian_shows_each_graph_warning_once_and_at_most_ten() {
    let s = never_analysing();
    let mut ws = target_only_workspace();
    // Every build reports the same long file; the second iteration's build adds 14 more.
    let builds = std::sync::atomic::AtomicUsize::new(0);
    ws.expect_related().times(2).returning(move |_, budget| {
        let n = builds.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut warnings = vec!["src/big.py has 12000 lines (over 10000)".to_string()];
        if n == 1 {
            warnings.extend((0..14).map(|i| format!("src/f{i}.py: permission denied")));
        }
        Ok(ContextPack {
            budget,
            warnings,
            ..ContextPack::default()
        })
    });
    let (caller, mut rx) = silent_caller();
    let librarian = Librarian::new(Arc::new(ws), caller, Arc::new(s), "pytest".into()).start();
    let mut warnings = Vec::new();
    for iteration in 1..=2 {
        ask(&librarian, fresh(iteration))
            .await
            .expect("the run goes on");
        while let Some(event) = rx.try_recv() {
            if let Event::Warning { message } = &event.event {
                warnings.push((iteration, message.clone()));
            }
        }
    }
    assert_eq!(
        warnings[0],
        (
            1,
            "import graph: src/big.py has 12000 lines (over 10000)".to_string()
        )
    );
    assert!(warnings[1..].iter().all(|(i, _)| *i == 2), "{warnings:?}");
    assert_eq!(warnings.len(), 11, "{warnings:?}");
    assert_eq!(warnings[9].1, "import graph: src/f8.py: permission denied");
    assert!(
        warnings[10].1.contains("more warnings held back"),
        "{warnings:?}"
    );
}

#[test]
fn the_context_budget_fits_the_smaller_window_of_the_roles_that_read_it() {
    let mut s = settings();
    s.context_share = 0.25;
    s.context_windows.insert(Role::Artisan, 200_000);
    s.context_windows.insert(Role::Librarian, 100_000);
    s.librarian_analyze = Analyze::Never;
    assert_eq!(context_budget(&s), 50_000);
    s.librarian_analyze = Analyze::Always;
    assert_eq!(context_budget(&s), 25_000);
    s.context_windows.insert(Role::Librarian, 1_000_000);
    assert_eq!(context_budget(&s), 50_000);
}

#[actix_rt::test]
async fn librarian_cuts_the_test_output_to_its_tail() {
    let mut s = never_analysing();
    s.max_test_output_bytes = 100;
    let mut run = failing("AssertionError");
    // A run the tool's output named no test in: the output is all the Artisan gets.
    run.tests.clear();
    run.output = (0..50).map(|i| format!("output line {i:02}\n")).collect();
    let full = run.output.len();
    let bundle = gather_after(s, run).await;
    let output = bundle.last_results.expect("the last results").output;

    let (marker, tail) = output
        .split_once('\n')
        .expect("a marker line, then the tail");
    let cut = full - tail.len();
    assert_eq!(
        marker,
        format!("[... {cut} earlier bytes of output cut ...]")
    );
    assert!(tail.len() <= 100, "{} bytes kept", tail.len());
    assert!(
        tail.starts_with("output line "),
        "cut on a line boundary: {tail:?}"
    );
    assert!(
        tail.ends_with("output line 49\n"),
        "the tail is kept: {tail:?}"
    );
    assert!(!tail.contains("output line 00"));
}

#[actix_rt::test]
async fn librarian_lists_failures_most_relevant_first_within_the_cap() {
    let mut s = never_analysing();
    s.max_test_output_bytes = 900;
    let mut run = failing("AssertionError");
    let case = |id: &str, category, file: &str, message: &str| TestCase {
        id: id.into(),
        status: CaseStatus::Fail,
        category: Some(category),
        location: Some(Location {
            file: file.into(),
            line: Some(3),
            column: None,
        }),
        message: Some(message.into()),
        ..TestCase::default()
    };
    run.tests = vec![
        case(
            "t::elsewhere",
            Category::Logic,
            "lib/other.py",
            "assert 1 == 2",
        ),
        case(
            "t::in_target",
            Category::Logic,
            "src/stats.py",
            "assert 2 == 3",
        ),
        case(
            "t::import",
            Category::Syntax,
            "src/stats.py",
            "SyntaxError: invalid syntax",
        ),
        case("t::huge", Category::Performance, "x.py", &"x".repeat(1900)),
    ];
    run.output = "tool output\n".repeat(200);
    let bundle = gather_after(s, run).await;
    let results = bundle.last_results.expect("the last results");
    let ids: Vec<&str> = results.failures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, vec!["t::import", "t::in_target", "t::elsewhere"]);
    assert_eq!(results.omitted, 1, "the huge one did not fit");
    assert_eq!(
        results.failures[0].location.as_deref(),
        Some("src/stats.py:3")
    );
    assert_eq!(results.failures[0].category.as_deref(), Some("SYNTAX"));
    assert!(
        results.output.len() <= 900 / 4 + 64,
        "{}",
        results.output.len()
    );
}

#[actix_rt::test]
async fn librarian_turns_a_workspace_error_into_error_workspace() {
    let mut ws = MockWorkspace::new();
    ws.expect_target().returning(|| {
        Err(WorkspaceError::read(
            "src/stats.py",
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied"),
        ))
    });
    let err = gather(settings(), ws, None, silent_llm())
        .await
        .expect_err("a workspace error");
    assert!(
        matches!(&err, Error::Workspace(m) if m.to_string() == "cannot read src/stats.py: permission denied"),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Artisan

/// A context bundle as the Librarian would build it.
fn bundle() -> Arc<ContextBundle> {
    let bundle = serde_json::json!({
        "iteration": 1,
        "target": { "path": TARGET_PATH, "content": TARGET, "language": "python" },
        "test_file": { "path": "tests/test_stats.py", "content": TESTS },
        "instructions": null,
        "manifest": null,
        "test_command": "pytest",
        "last_results": {
            "summary": "failed: 1 failed, 1 passed",
            "passed": false,
            "failing": [FAILING_ID],
            "output": "E   AssertionError: 3 != 2.5",
        },
        "analysis": "Sort the list first.",
    });
    Arc::new(serde_json::from_value(bundle).expect("a valid bundle"))
}

fn generate(critique: Option<&str>) -> Generate {
    Generate {
        iteration: 1,
        context: bundle(),
        critique: critique.map(String::from),
        cancel: CancellationToken::new(),
    }
}

async fn propose(
    artisan: &actix::Addr<Artisan>,
    critique: Option<&str>,
) -> crate::Result<Proposal> {
    ask(artisan, generate(critique)).await
}

/// An Artisan over an LLM mock that answers every request with `text`.
fn artisan(s: RunSettings, log: &Log, text: impl Into<String>) -> actix::Addr<Artisan> {
    let text = text.into();
    let mock = always(log, Ok(reply(&text, usage(1000, 200))));
    Artisan::new(default_caller(mock), Arc::new(s)).start()
}

#[actix_rt::test]
async fn artisan_request_carries_role_model_temperature_and_max_tokens() {
    let mut s = settings();
    s.models.insert(
        Role::Artisan,
        ModelSpec {
            model: MODEL.into(),
            temperature: Some(0.2),
            max_tokens: 4000,
            fallbacks: Vec::new(),
        },
    );
    let log = Log::default();
    propose(&artisan(s, &log, "no code"), None)
        .await
        .expect("proposal");
    let sent = requests(&log, Role::Artisan);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].role, Role::Artisan);
    assert_eq!(sent[0].model, MODEL);
    assert_eq!(sent[0].temperature, Some(0.2));
    assert_eq!(
        sent[0].max_tokens, 4000,
        "a generous budget grants the spec's max_tokens"
    );
    assert_eq!(sent[0].messages[0].speaker, Speaker::System);
}

/// A token counter mock that says whether it counts `exact`ly; what it counts is left to the test.
fn token_counter(exact: bool) -> MockTokenCounter {
    let mut counter = MockTokenCounter::new();
    counter.expect_is_exact().return_const(exact);
    counter
}

/// The requests of one proposal by an Artisan whose prompts `counter` counts, priced at `prices`
/// and capped at `cap` dollars; its LLM answers without code.
async fn propose_counted(counter: MockTokenCounter, prices: Prices, cap: f64) -> Vec<ChatRequest> {
    let log = Log::default();
    let mock = always(&log, Ok(reply("no code", usage(10, 10))));
    let artisan = Artisan::new(caller(mock, counter, prices, cap), Arc::new(settings())).start();
    propose(&artisan, None).await.expect("proposal");
    requests(&log, Role::Artisan)
}

#[actix_rt::test]
async fn artisan_max_tokens_is_lowered_to_what_the_budget_pays() {
    let mut counter = token_counter(true);
    counter
        .expect_count()
        .withf(|model, messages: &[ChatMessage]| model == MODEL && messages.len() == 2)
        .times(1)
        .return_const(1234u64);
    // Prompts are free and $0.01 at $10 per million output tokens buys 1000 of them.
    let sent = propose_counted(counter, prices(0.0, 10.0), 0.01).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].max_tokens, 1000);
    assert!(sent[0].max_tokens <= settings().model(Role::Artisan).max_tokens);
}

#[actix_rt::test]
async fn a_model_without_an_exact_tokenizer_is_reserved_by_bytes_near_the_budget() {
    // Found against llama.cpp: o200k × 1.15 estimated 2,770 prompt tokens where the server
    // counted 2,948. For such a model the byte count is reserved, however tight the budget.
    let mut counter = token_counter(false);
    counter.expect_count().never();
    // $1 per million prompt tokens and $10 per million output tokens, $0.01 in all.
    let sent = propose_counted(counter, prices(1.0, 10.0), 0.01).await;
    let bytes = ByteBoundCounter.count(MODEL, &sent[0].messages);
    let prompt_cost = bytes as f64 * (1.0 + crate::policy::budget::PROMPT_MARGIN) * 1.0 / 1e6;
    let affordable = ((0.01 - prompt_cost) * 1e6 / 10.0).floor() as u32;
    assert_eq!(
        sent[0].max_tokens, affordable,
        "{bytes} prompt bytes reserved"
    );
}

#[actix_rt::test]
async fn an_ample_budget_needs_no_exact_token_count() {
    let mut counter = token_counter(true);
    // The prompt's byte count already fits the budget: the tokenizer is never consulted.
    counter.expect_count().never();
    let sent = propose_counted(counter, prices(1.0, 10.0), 100.0).await;
    assert_eq!(
        sent[0].max_tokens,
        settings().model(Role::Artisan).max_tokens
    );
}

#[actix_rt::test]
async fn artisan_puts_the_critique_in_the_user_prompt() {
    let log = Log::default();
    let artisan = artisan(settings(), &log, "no code");
    propose(&artisan, None).await.expect("proposal");
    propose(
        &artisan,
        Some("- an even-length list must average the two middle values"),
    )
    .await
    .expect("proposal");
    let sent = requests(&log, Role::Artisan);
    assert!(
        !user_prompt(&sent[0]).contains("The Critic rejected"),
        "{}",
        user_prompt(&sent[0])
    );
    let revised = user_prompt(&sent[1]);
    assert!(
        revised.contains("The Critic rejected your previous proposal"),
        "{revised}"
    );
    assert!(
        revised.contains("- an even-length list must average the two middle values"),
        "{revised}"
    );
    assert!(
        revised.contains("Sort the list first."),
        "the Librarian's analysis is shown too: {revised}"
    );
}

#[actix_rt::test]
async fn artisan_extracts_the_code_block() {
    let log = Log::default();
    let text = code_reply(FIXED);
    let proposal = propose(&artisan(settings(), &log, text.clone()), None)
        .await
        .expect("proposal");
    assert_eq!(proposal.code.as_deref(), Some(FIXED));
    assert_eq!(proposal.reply, text);
}

#[actix_rt::test]
async fn artisan_without_a_code_block_proposes_no_code() {
    let log = Log::default();
    let proposal = propose(&artisan(settings(), &log, "I would sort the list."), None)
        .await
        .expect("a proposal, without code");
    assert_eq!(
        proposal,
        Proposal {
            code: None,
            reply: "I would sort the list.".into()
        }
    );
}

#[actix_rt::test]
async fn artisan_keeps_no_history_with_context_reset_frequency_1() {
    let log = Log::default();
    let artisan = artisan(settings(), &log, "first answer");
    propose(&artisan, None).await.expect("proposal");
    propose(&artisan, None).await.expect("proposal");
    let sent = requests(&log, Role::Artisan);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].messages.len(), 2, "system and user only");
    assert_eq!(sent[1].messages, sent[0].messages);
}

/// An Artisan that keeps its conversation for 3 iterations and always answers "first answer".
fn remembering_artisan(log: &Log) -> actix::Addr<Artisan> {
    let mut s = settings();
    s.context_reset_frequency = 3;
    artisan(s, log, "first answer")
}

#[actix_rt::test]
async fn artisan_carries_the_previous_turn_with_context_reset_frequency_3() {
    let log = Log::default();
    let artisan = remembering_artisan(&log);
    propose(&artisan, None).await.expect("proposal");
    propose(&artisan, Some("try again"))
        .await
        .expect("proposal");
    let sent = requests(&log, Role::Artisan);
    let (first, second) = (&sent[0].messages, &sent[1].messages);
    assert_eq!(first.len(), 2);
    assert_eq!(
        second.len(),
        4,
        "system, the previous user and assistant turns, the new user turn"
    );
    assert_eq!(second[0], first[0]);
    assert_eq!(second[1], first[1]);
    assert_eq!(second[2], ChatMessage::assistant("first answer"));
    assert!(user_prompt(&sent[1]).contains("try again"));
}

#[actix_rt::test]
async fn reset_context_clears_the_artisan_history() {
    let log = Log::default();
    let artisan = remembering_artisan(&log);
    propose(&artisan, None).await.expect("proposal");
    ask(&artisan, ResetContext).await;
    propose(&artisan, None).await.expect("proposal");
    let sent = requests(&log, Role::Artisan);
    assert_eq!(sent[1].messages.len(), 2, "no history after ResetContext");
}

#[actix_rt::test]
async fn a_panicking_llm_client_makes_the_artisan_answer_role_panicked() {
    let mut mock = MockLlmClient::new();
    mock.expect_complete().returning(|_| panic!("boom"));
    let artisan = Artisan::new(default_caller(mock), Arc::new(settings())).start();
    let err = propose(&artisan, None)
        .await
        .expect_err("a panic is an error");
    assert!(
        matches!(&err, Error::RolePanicked { role: Role::Artisan, message } if message == "boom"),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Critic

async fn review(text: &'static str) -> (Verdict, Vec<ChatRequest>) {
    let log = Log::default();
    let mock = always(&log, Ok(reply(text, usage(500, 50))));
    let critic = Critic::new(default_caller(mock), Arc::new(settings())).start();
    let msg = Review {
        iteration: 1,
        context: bundle(),
        code: FIXED.into(),
        cancel: CancellationToken::new(),
    };
    let verdict = ask(&critic, msg).await.expect("verdict");
    (verdict, requests(&log, Role::Critic))
}

#[actix_rt::test]
async fn critic_approve() {
    let (verdict, sent) = review("The logic is right.\nVERDICT: APPROVE").await;
    assert_eq!(
        verdict,
        Verdict {
            approved: true,
            reasons: "The logic is right.".into(),
            explicit: true
        }
    );
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].model, MODEL);
    assert!(
        user_prompt(&sent[0]).contains(FIXED),
        "the proposal is reviewed"
    );
}

#[actix_rt::test]
async fn critic_reject_carries_its_reasons() {
    let (verdict, _) = review("VERDICT: REJECT\n- an empty list raises IndexError").await;
    assert_eq!(
        verdict,
        Verdict {
            approved: false,
            reasons: "- an empty list raises IndexError".into(),
            explicit: true
        }
    );
}

#[actix_rt::test]
async fn critic_without_a_verdict_line_approves_implicitly() {
    let (verdict, _) = review("I am not sure about this one.").await;
    assert!(verdict.approved);
    assert!(!verdict.explicit);
}

// ---------------------------------------------------------------------------------------------
// Tester

async fn run_tests(runner: MockTestRunner, cancel: CancellationToken) -> crate::Result<TestRun> {
    let tester = Tester::new(Arc::new(runner), 0).start();
    ask(&tester, RunTests { cancel }).await
}

#[actix_rt::test]
async fn tester_returns_the_run_and_hands_the_cancel_token_to_the_runner() {
    let mut runner = MockTestRunner::new();
    runner
        .expect_run()
        .withf(|cancel: &CancellationToken| cancel.is_cancelled())
        .times(1)
        .returning(|_| Ok(passing()));
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert_eq!(run_tests(runner, cancel).await.expect("a run"), passing());
}

#[actix_rt::test]
async fn tester_turns_a_runner_error_into_error_runner() {
    let mut runner = MockTestRunner::new();
    runner.expect_run().times(1).returning(|_| {
        Err(RunnerError::Setup(
            "could not start `pytest`: not found".into(),
        ))
    });
    let err = run_tests(runner, CancellationToken::new())
        .await
        .expect_err("a runner error");
    assert!(
        matches!(&err, Error::Runner(m) if m.to_string() == "could not start `pytest`: not found"),
        "{err:?}"
    );
}

#[actix_rt::test]
async fn a_panicking_runner_makes_the_tester_answer_role_panicked() {
    let mut runner = MockTestRunner::new();
    runner.expect_run().returning(|_| panic!("boom"));
    let err = run_tests(runner, CancellationToken::new())
        .await
        .expect_err("a panic is an error");
    assert!(
        matches!(&err, Error::RolePanicked { role: Role::Tester, message } if message == "boom"),
        "{err:?}"
    );
}

fn auth_error() -> LlmError {
    LlmError::Auth {
        provider: "test".into(),
        env_var: "TEST_API_KEY".into(),
        message: "bad key".into(),
    }
}

/// An LLM mock whose key [`MODEL`]'s provider refuses; every other model answers `text`.
fn refused_on_model(log: &Log, text: String) -> MockLlmClient {
    llm(log, move |request, _| {
        if request.model == MODEL {
            Err(auth_error())
        } else {
            Ok(reply(&text, usage(10, 10)))
        }
    })
}

fn with_fallback(fallback: &str) -> RunSettings {
    let mut s = settings();
    if let Some(spec) = s.models.get_mut(&Role::Artisan) {
        spec.fallbacks = vec![fallback.to_string()];
    }
    s
}

#[actix_rt::test]
async fn a_refused_model_falls_back_and_is_skipped_afterwards() {
    let log = Log::default();
    let mock = refused_on_model(&log, code_reply(FIXED));
    let (caller, mut rx) = observed_caller(mock);
    let artisan = Artisan::new(caller.clone(), Arc::new(with_fallback("test/backup"))).start();
    for _ in 0..2 {
        let proposal = propose(&artisan, None).await.expect("proposal");
        assert_eq!(proposal.code.as_deref(), Some(FIXED));
    }
    let models: Vec<String> = requests(&log, Role::Artisan)
        .into_iter()
        .map(|r| r.model)
        .collect();
    // The refused key is not tried again on the second call.
    assert_eq!(models, [MODEL, "test/backup", "test/backup"]);
    let records = caller.fallbacks();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0].from.as_str(), records[0].to.as_str()),
        (MODEL, "test/backup")
    );
    assert!(
        records[0].reason.contains("TEST_API_KEY"),
        "{}",
        records[0].reason
    );
    let mut saw_event = false;
    while let Some(e) = rx.try_recv() {
        saw_event |= matches!(e.event, crate::events::event::Event::Fallback(_));
    }
    assert!(saw_event);
}

#[actix_rt::test]
async fn a_rejected_request_does_not_fall_back() {
    let log = Log::default();
    let mock = llm(&log, |_, _| {
        Err(LlmError::ContextTooLong {
            provider: "test".into(),
            message: "too long".into(),
        })
    });
    let artisan =
        Artisan::new(default_caller(mock), Arc::new(with_fallback("test/backup"))).start();
    let err = propose(&artisan, None).await.expect_err("fails");
    assert!(
        matches!(err, Error::Llm(LlmError::ContextTooLong { .. })),
        "{err:?}"
    );
    assert_eq!(requests(&log, Role::Artisan).len(), 1);
}

#[actix_rt::test]
async fn a_fallback_never_bypasses_the_budget() {
    let log = Log::default();
    let mock = refused_on_model(&log, "no code".into());
    // The backup costs $1000 per million output tokens: a $0.01 budget buys 10, too few to ask.
    let mut p = prices(0.0, 0.0);
    p.0.insert(
        "test/backup".into(),
        Price {
            input: 0.0,
            output: 1000.0,
            cache_read: None,
            cache_write: None,
        },
    );
    let caller = Arc::new(Caller::new(
        Arc::new(mock),
        super::guard_off(),
        Arc::new(ByteBoundCounter),
        Arc::new(Ledger::new(0.01, p, EventBus::discard())),
        EventBus::discard(),
    ));
    let artisan = Artisan::new(caller, Arc::new(with_fallback("test/backup"))).start();
    let err = propose(&artisan, None).await.expect_err("refused");
    assert!(matches!(err, Error::Budget(_)), "{err:?}");
    assert_eq!(
        requests(&log, Role::Artisan).len(),
        1,
        "the backup was never called"
    );
}
