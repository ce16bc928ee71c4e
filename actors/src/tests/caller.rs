//! What a call is charged: the provider's reported cost, an estimate when no usage came, the
//! whole reservation when the call was abandoned, and an overrun that stops the run.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::*;
use crate::error::Error;
use crate::events::event::Event;
use crate::ports::llm::ChatMessage;
use crate::settings::ModelSpec;

fn spec(max_tokens: u32) -> ModelSpec {
    ModelSpec {
        model: MODEL.into(),
        temperature: None,
        max_tokens,
        fallbacks: Vec::new(),
    }
}

fn messages() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You fix code."),
        ChatMessage::user("Fix the median of an even-length list."),
    ]
}

/// One call of `role` with the usual request and model, never cancelled.
async fn call_as(caller: &Caller, role: Role) -> crate::error::Result<ChatReply> {
    caller
        .call(1, role, &spec(1000), messages(), &CancellationToken::new())
        .await
}

/// A Caller over `llm` whose ledger (capped at `cap`) and events the test can read.
fn metered(llm: MockLlmClient, cap: f64) -> (Arc<Caller>, Arc<Ledger>, EventBus) {
    let events = EventBus::new("caller-test");
    let ledger = Arc::new(Ledger::new(
        cap,
        prices(INPUT_PRICE, OUTPUT_PRICE),
        events.clone(),
    ));
    let caller = Arc::new(Caller::new(
        Arc::new(llm),
        super::guard_off(),
        Arc::new(ByteBoundCounter),
        ledger.clone(),
        events.clone(),
    ));
    (caller, ledger, events)
}

/// The model each call asked for, in order.
fn models_asked(log: &Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .map(|r| r.model.clone())
        .collect()
}

/// The messages of the events received so far that `pick` reads one from, in order.
fn messages_of(
    rx: &mut crate::events::bus::Subscription,
    pick: impl Fn(&Event) -> Option<&String>,
) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(e) = rx.try_recv() {
        out.extend(pick(&e.event).cloned());
    }
    out
}

fn warnings(rx: &mut crate::events::bus::Subscription) -> Vec<String> {
    messages_of(rx, |e| match e {
        Event::Warning { message } => Some(message),
        _ => None,
    })
}

#[actix_rt::test]
async fn a_reply_with_text_but_zero_usage_is_charged_by_estimate_and_warned_once() {
    // Found against LiteLLM: Gemini's final stream chunk reported usageMetadata 0/0/0.
    let log = Log::default();
    let mock = always(&log, Ok(reply("Sort the list first.", Usage::default())));
    let (caller, ledger, events) = metered(mock, 1.0);
    let mut rx = events.subscribe();
    let cancel = CancellationToken::new();
    for _ in 0..2 {
        caller
            .call(1, Role::Librarian, &spec(1000), messages(), &cancel)
            .await
            .expect("reply");
    }
    let snap = ledger.snapshot();
    assert_eq!(snap.estimated_calls, 2);
    let bytes = ByteBoundCounter.count(MODEL, &messages());
    let reply_bytes = "Sort the list first.".len() as u64;
    assert_eq!(snap.tokens.input_tokens, 2 * bytes);
    assert_eq!(snap.tokens.output_tokens, 2 * reply_bytes);
    assert!((snap.spent - 2.0 * cost_of(usage(bytes, reply_bytes))).abs() < 1e-12);
    let warned = warnings(&mut rx);
    let about: Vec<_> = warned
        .iter()
        .filter(|w| w.contains("reported no token usage"))
        .collect();
    assert_eq!(about.len(), 1, "{warned:?}");
}

#[actix_rt::test]
async fn missing_usage_estimated_by_the_provider_is_charged_at_the_bound_too() {
    let log = Log::default();
    let mock = llm(&log, |_, _| {
        Ok(ChatReply {
            usage_estimated: true,
            ..reply("ok", usage(3, 1))
        })
    });
    let (caller, ledger, _) = metered(mock, 1.0);
    call_as(&caller, Role::Critic).await.expect("reply");
    let snap = ledger.snapshot();
    assert_eq!(snap.estimated_calls, 1);
    assert_eq!(
        snap.tokens.input_tokens,
        ByteBoundCounter.count(MODEL, &messages())
    );
}

#[actix_rt::test]
async fn the_provider_s_reported_cost_is_what_is_charged() {
    let log = Log::default();
    let mock = llm(&log, |_, _| {
        Ok(ChatReply {
            cost_usd: Some(0.000_123),
            ..reply("ok", usage(100, 10))
        })
    });
    let (caller, ledger, _) = metered(mock, 1.0);
    call_as(&caller, Role::Critic).await.expect("reply");
    assert_eq!(ledger.spent(), 0.000_123);
    assert_eq!(ledger.snapshot().estimated_calls, 0);
}

/// A call past its time limit is tried once more before the role gives up on the model; each
/// abandoned attempt keeps its reservation as spent, since the provider may bill it.
#[actix_rt::test]
async fn a_timed_out_call_is_tried_once_more_and_each_attempt_is_charged() {
    let log = Log::default();
    let mock = llm(&log, |_, _| {
        Err(LlmError::Timeout {
            provider: "test".into(),
            seconds: 120,
        })
    });
    let (caller, ledger, events) = metered(mock, 1.0);
    let mut rx = events.subscribe();
    let err = call_as(&caller, Role::Artisan)
        .await
        .expect_err("timed out");
    assert!(matches!(err, Error::Llm(LlmError::Timeout { .. })), "{err}");
    assert!(
        err.to_string()
            .contains("raise providers.test.timeout_seconds"),
        "{err}"
    );
    assert_eq!(log.lock().unwrap().len(), 2, "tried once more");
    let bytes = ByteBoundCounter.count(MODEL, &messages());
    let reserved = bytes as f64 * (1.0 + crate::policy::budget::PROMPT_MARGIN) * INPUT_PRICE / 1e6
        + 1000.0 * OUTPUT_PRICE / 1e6;
    let snap = ledger.snapshot();
    assert_eq!(snap.abandoned_calls, 2);
    assert!(
        (snap.spent - 2.0 * reserved).abs() < 1e-12,
        "{}",
        snap.spent
    );
    let warned = warnings(&mut rx);
    assert_says(&warned, "abandoned");
    assert_says(&warned, "trying test/model once more");
}

/// What the call reserved: the prompt's byte bound with its margin, and 1000 output tokens.
fn reservation() -> f64 {
    let bytes = ByteBoundCounter.count(MODEL, &messages());
    bytes as f64 * (1.0 + crate::policy::budget::PROMPT_MARGIN) * INPUT_PRICE / 1e6
        + 1000.0 * OUTPUT_PRICE / 1e6
}

/// A reply lost after the server took the request (the connection broke, the stream ended
/// early, the body could not be read) keeps its reservation as spent; one refused before
/// costs nothing (`a_refused_call_costs_nothing`).
#[actix_rt::test]
async fn a_reply_lost_mid_way_is_charged_its_reservation() {
    let lost = [
        LlmError::BrokeOff {
            provider: "test".into(),
            message: "the reply broke off".into(),
        },
        LlmError::InvalidReply {
            provider: "test".into(),
            message: "not json".into(),
        },
    ];
    for error in lost {
        let log = Log::default();
        let failing = error.clone();
        let mock = llm(&log, move |_, _| Err(failing.clone()));
        let (caller, ledger, _) = metered(mock, 1.0);
        call_as(&caller, Role::Critic).await.expect_err("lost");
        let snap = ledger.snapshot();
        assert_eq!(snap.abandoned_calls, 1, "{error}");
        assert!(
            (snap.spent - reservation()).abs() < 1e-12,
            "{error}: {}",
            snap.spent
        );
    }
}

/// A reply that came after attempts given up on mid-reply (stalled streams sent again) costs
/// its usage plus the reservation of each lost attempt.
#[actix_rt::test]
async fn attempts_lost_before_the_reply_are_charged_beside_it() {
    let log = Log::default();
    let mock = llm(&log, |_, _| {
        Ok(ChatReply {
            lost_attempts: 2,
            ..reply("ok", usage(100, 10))
        })
    });
    let (caller, ledger, events) = metered(mock, 1.0);
    let mut rx = events.subscribe();
    call_as(&caller, Role::Critic).await.expect("reply");
    let snap = ledger.snapshot();
    assert_eq!(snap.abandoned_calls, 2);
    let expected = 2.0 * reservation() + cost_of(usage(100, 10));
    assert!((snap.spent - expected).abs() < 1e-12, "{}", snap.spent);
    assert_says(
        &warnings(&mut rx),
        "2 earlier attempt(s) given up on mid-reply",
    );
}

/// After the second timeout the role falls back to its next model.
#[actix_rt::test]
async fn a_model_that_times_out_twice_falls_back() {
    let log = Log::default();
    let mock = llm(&log, |request, _| {
        if request.model == MODEL {
            Err(LlmError::Timeout {
                provider: "test".into(),
                seconds: 120,
            })
        } else {
            Ok(reply("ok", usage(10, 1)))
        }
    });
    let (caller, _, _) = metered(mock, 1.0);
    let spec = ModelSpec {
        fallbacks: vec!["test/fallback".into()],
        ..spec(1000)
    };
    caller
        .call(
            1,
            Role::Artisan,
            &spec,
            messages(),
            &CancellationToken::new(),
        )
        .await
        .expect("the fallback answers");
    let models = models_asked(&log);
    assert_eq!(models, [MODEL, MODEL, "test/fallback"]);
    assert_eq!(caller.fallbacks().len(), 1);
}

/// A model chosen in the view is the role's from its next call, said once; when it cannot be
/// reached the role falls back to its own model. Other roles keep theirs.
#[actix_rt::test]
async fn a_model_switched_mid_run_serves_the_role_s_next_calls() {
    use crate::roles::switch::{Chosen, ModelSwitch};
    let log = Log::default();
    let mock = llm(&log, |request, _| {
        if request.model == "test/unreachable" {
            Err(LlmError::Network {
                provider: "test".into(),
                message: "connection refused".into(),
            })
        } else {
            Ok(reply("ok", usage(10, 1)))
        }
    });
    let (caller, _, events) = metered(mock, 1.0);
    let switch = ModelSwitch::new();
    let caller = Arc::into_inner(caller)
        .expect("one owner")
        .with_switch(switch.clone());
    let mut rx = events.subscribe();
    let cancel = CancellationToken::new();
    let spec = spec(1000);
    let call = |role| caller.call(1, role, &spec, messages(), &cancel);
    call(Role::Artisan).await.expect("reply");
    switch.set(
        Role::Artisan,
        Chosen {
            model: "test/chosen".into(),
            context_window: Some(1000),
        },
    );
    call(Role::Artisan).await.expect("reply");
    call(Role::Artisan).await.expect("reply");
    call(Role::Critic).await.expect("reply");
    switch.set(
        Role::Artisan,
        Chosen {
            model: "test/unreachable".into(),
            context_window: None,
        },
    );
    call(Role::Artisan)
        .await
        .expect("the role's own model answers");
    let models = models_asked(&log);
    assert_eq!(
        models,
        [
            MODEL,
            "test/chosen",
            "test/chosen",
            MODEL,
            "test/unreachable",
            MODEL
        ]
    );
    let notes = messages_of(&mut rx, |e| match e {
        Event::Note { message } => Some(message),
        _ => None,
    });
    assert_eq!(
        notes,
        [
            "the artisan now runs on test/chosen, as chosen in the view",
            "the artisan now runs on test/unreachable, as chosen in the view"
        ]
    );
    // The chosen model's own window measures its prompts.
    assert!(caller.context_peaks().contains_key(&Role::Artisan));
}

#[actix_rt::test]
async fn a_refused_call_costs_nothing() {
    let log = Log::default();
    let mock = llm(&log, |_, _| {
        Err(LlmError::Request {
            provider: "test".into(),
            status: 400,
            message: "bad request".into(),
        })
    });
    let (caller, ledger, _) = metered(mock, 1.0);
    call_as(&caller, Role::Artisan).await.expect_err("refused");
    assert_eq!(ledger.spent(), 0.0);
    assert_eq!(ledger.snapshot().abandoned_calls, 0);
}

#[actix_rt::test]
async fn a_call_abandoned_at_ctrl_c_keeps_its_reservation_as_spent() {
    // A client that never answers: the call is abandoned at the cancel.
    struct Hung;
    #[async_trait::async_trait]
    impl LlmClient for Hung {
        async fn complete(&self, _: GuardedRequest) -> Result<ChatReply, LlmError> {
            futures::future::pending().await
        }
    }
    let ledger = Arc::new(Ledger::new(
        1.0,
        prices(INPUT_PRICE, OUTPUT_PRICE),
        EventBus::discard(),
    ));
    let caller = Caller::new(
        Arc::new(Hung),
        super::guard_off(),
        Arc::new(ByteBoundCounter),
        ledger.clone(),
        EventBus::discard(),
    );
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        stop.cancel();
    });
    let err = tokio::time::timeout(
        NO_HANG,
        caller.call(1, Role::Artisan, &spec(1000), messages(), &cancel),
    )
    .await
    .expect("no hang")
    .expect_err("cancelled");
    assert!(matches!(err, Error::Cancelled), "{err}");
    assert_eq!(ledger.snapshot().abandoned_calls, 1);
    assert!(ledger.spent() > 1000.0 * OUTPUT_PRICE / 1e6);
}

#[actix_rt::test]
async fn a_reply_longer_than_granted_is_an_overrun_that_stops_the_run() {
    let log = Log::default();
    // The provider ignores max_tokens and bills 5,000 output tokens.
    let mock = always(&log, Ok(reply("a long reply", usage(50, 5000))));
    let (caller, ledger, _) = metered(mock, 1.0);
    let err = call_as(&caller, Role::Artisan).await.expect_err("overrun");
    let Error::Budget(why) = &err else {
        panic!("{err}")
    };
    assert!(why.contains("the artisan call on test/model"), "{why}");
    assert!(
        why.contains("billed 5000 output tokens where 1000 were allowed"),
        "{why}"
    );
    let snap = ledger.snapshot();
    assert_eq!(snap.overruns.len(), 1);
    let o = &snap.overruns[0];
    assert!((o.cost_usd - cost_of(usage(50, 5000))).abs() < 1e-12);
    assert!(o.excess_usd > 0.0 && o.cost_usd > o.reserved_usd);
}
