//! A whole session over mocks, for the Supervisor and machine tests: [`Session`] holds the
//! parts, starts a Supervisor over them or hands them out as [`RunDeps`].

use std::sync::{Arc, Mutex};

use actix::Actor;
use tokio::time::timeout;

use super::*;
use crate::machine::hooks::Hook;
use crate::ports::memory::{Embedder, GuardedTexts, MemoryError, VectorStore};
use crate::roles::vault::VaultSettings;
use crate::schema::attempt::{FixAttempt, Scored};
use crate::supervisor::actor::{Interrupt, StartRun, Supervisor};
use crate::supervisor::run::{MemoryDeps, RunDeps};

/// Every text is the same vector: every stored attempt is recalled at similarity 1.
pub(super) struct UnitEmbedder;

#[async_trait::async_trait]
impl Embedder for UnitEmbedder {
    fn id(&self) -> String {
        "unit/1".into()
    }
    fn dims(&self) -> usize {
        1
    }
    async fn embed(&self, texts: GuardedTexts) -> std::result::Result<Vec<Vec<f32>>, MemoryError> {
        Ok(texts.texts().iter().map(|_| vec![1.0]).collect())
    }
}

/// A vault in memory: keeps what is inserted and finds all of it.
#[derive(Default)]
pub(super) struct MemVault(pub(super) Mutex<Vec<FixAttempt>>);

#[async_trait::async_trait]
impl VectorStore for MemVault {
    async fn insert(
        &self,
        rows: Vec<(FixAttempt, Vec<f32>)>,
    ) -> std::result::Result<(), MemoryError> {
        self.0
            .lock()
            .unwrap()
            .extend(rows.into_iter().map(|(a, _)| a));
        Ok(())
    }
    async fn nearest(
        &self,
        _: Vec<f32>,
        limit: usize,
        _: f32,
    ) -> std::result::Result<Vec<Scored>, MemoryError> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .iter()
            .take(limit)
            .map(|a| Scored {
                attempt: a.clone(),
                similarity: 1.0,
            })
            .collect())
    }
}

/// What a run is made of; `start` hands the parts to a new Supervisor.
pub(super) struct Session {
    pub(super) settings: RunSettings,
    pub(super) llm: Arc<dyn LlmClient>,
    pub(super) runner: Arc<dyn TestRunner>,
    pub(super) prices: Prices,
    pub(super) store: Arc<MemStore>,
    pub(super) file: Arc<Mutex<String>>,
    /// The MemoryVault's store; `None` runs without memory.
    pub(super) vault: Option<Arc<dyn VectorStore>>,
    /// The session's event bus: subscribe before `start` to see every event.
    pub(super) events: EventBus,
    pub(super) hooks: Vec<Arc<dyn Hook>>,
    /// The person the breaker asks; `None`: a headless run.
    pub(super) user: Option<Arc<dyn crate::ports::user::User>>,
    /// The state to resume from; a new session's by default.
    pub(super) state: Option<SessionState>,
    /// Runs Chaos's files; `None`: Chaos cannot attack.
    pub(super) chaos: Option<Arc<dyn crate::ports::chaos::ChaosRunner>>,
    /// LocalGuard's engine: off unless a test is about it.
    pub(super) guard: Arc<ralph_guard::Guard>,
}

impl Session {
    pub(super) fn new(
        settings: RunSettings,
        llm: impl LlmClient + 'static,
        runner: impl TestRunner + 'static,
    ) -> Self {
        Self {
            settings,
            llm: Arc::new(llm),
            runner: Arc::new(runner),
            prices: prices(INPUT_PRICE, OUTPUT_PRICE),
            store: Arc::default(),
            file: Arc::new(Mutex::new(TARGET.to_string())),
            vault: None,
            events: EventBus::new("session-test"),
            hooks: Vec::new(),
            user: None,
            state: None,
            chaos: None,
            guard: Arc::new(ralph_guard::Guard::off()),
        }
    }

    /// A session of the default settings over `llm` whose tests fail once (`3 != 2.5`), then
    /// pass: one iteration fixes it.
    pub(super) fn fixing_once(llm: impl LlmClient + 'static) -> Self {
        Self::new(
            settings(),
            llm,
            fails_then_passes("AssertionError: 3 != 2.5"),
        )
    }

    /// The run's parts, its ledger capped at `settings.max_cost_usd`.
    pub(super) fn deps(&self) -> RunDeps {
        let events = self.events.clone();
        let ledger = Ledger::new(
            self.settings.max_cost_usd,
            self.prices.clone(),
            events.clone(),
        );
        self.deps_with(ledger)
    }

    /// The run's parts over `ledger`.
    pub(super) fn deps_with(&self, ledger: Ledger) -> RunDeps {
        let state = self.state.clone().unwrap_or_else(|| {
            SessionState::new(
                "session-test",
                TARGET_PATH,
                "pytest",
                self.settings.entropy_threshold,
            )
        });
        let events = self.events.clone();
        RunDeps {
            ledger: Arc::new(ledger),
            settings: Arc::new(self.settings.clone()),
            workspace: Arc::new(workspace(&self.file)),
            store: self.store.clone(),
            runner: self.runner.clone(),
            chaos: self.chaos.clone(),
            llm: self.llm.clone(),
            counter: Arc::new(ByteBoundCounter),
            guard: self.guard.clone(),
            events,
            cancel: CancellationToken::new(),
            stop_signal: Default::default(),
            drain: CancellationToken::new(),
            hooks: self.hooks.clone(),
            user: self.user.clone(),
            pause: None,
            models: Default::default(),
            preamble: Vec::new(),
            state,
            memory: self.vault.clone().map(|store| MemoryDeps {
                embedder: Arc::new(UnitEmbedder),
                store,
                shared: None,
                settings: VaultSettings::default(),
                project_id: "project".into(),
            }),
        }
    }

    pub(super) fn start(&self) -> actix::Addr<Supervisor> {
        Supervisor::new(self.deps()).start()
    }

    /// Runs the session to its end; a run that does not end within [`NO_HANG`] fails the test.
    pub(super) async fn run(&self) -> Report {
        ask(&self.start(), StartRun).await
    }

    /// Runs the session and interrupts it once `when` is done, as the user's Ctrl-C would; a run
    /// that does not end within [`NO_HANG`] fails the test.
    pub(super) async fn run_interrupted(
        &self,
        when: impl std::future::Future<Output = ()>,
    ) -> Report {
        let addr = self.start();
        let run = addr.send(StartRun);
        let interrupt = async {
            when.await;
            addr.do_send(Interrupt);
        };
        let (report, ()) = timeout(NO_HANG, async { tokio::join!(run, interrupt) })
            .await
            .expect("the run ends");
        report.expect("mailbox")
    }

    pub(super) fn file(&self) -> String {
        self.file.lock().unwrap().clone()
    }
}

pub(super) const ANALYSIS: &str = "The median never sorts its input.";
pub(super) const LIBRARIAN_USAGE: Usage = Usage {
    input_tokens: 900,
    output_tokens: 40,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
};
pub(super) const ARTISAN_USAGE: Usage = Usage {
    input_tokens: 1500,
    output_tokens: 300,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
};
pub(super) const CRITIC_USAGE: Usage = Usage {
    input_tokens: 1200,
    output_tokens: 60,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
};

/// A team whose Librarian analyses, whose Artisan replies `artisan(n)` and whose Critic (and any
/// other role) replies `critic(n)`, `n` counting the earlier calls of that role.
pub(super) fn team_of(
    log: &Log,
    artisan: impl Fn(usize) -> String + Send + 'static,
    critic: impl Fn(usize) -> String + Send + 'static,
) -> MockLlmClient {
    llm(log, move |request, n| {
        Ok(match request.role {
            Role::Librarian => reply(ANALYSIS, LIBRARIAN_USAGE),
            Role::Artisan => reply(&artisan(n), ARTISAN_USAGE),
            _ => reply(&critic(n), CRITIC_USAGE),
        })
    })
}

/// The Artisan's reply that writes `FIXED`, whatever the call.
pub(super) fn fixed(_: usize) -> String {
    code_reply(FIXED)
}

/// The Critic's bare approval, whatever the call.
pub(super) fn approve(_: usize) -> String {
    "VERDICT: APPROVE".into()
}

/// A Critic that rejects its first review with `critique` and approves the rest.
pub(super) fn rejects_first(critique: &'static str) -> impl Fn(usize) -> String + Send + 'static {
    move |n| match n {
        0 => format!("VERDICT: REJECT\n{critique}"),
        _ => "VERDICT: APPROVE".into(),
    }
}

/// A well-behaved team: the Librarian analyses, the Artisan answers `FIXED` in a code block and
/// the Critic approves.
pub(super) fn team(log: &Log) -> MockLlmClient {
    team_of(log, fixed, |_| {
        "Sorted and averaged.\nVERDICT: APPROVE".into()
    })
}
