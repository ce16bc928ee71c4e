//! What runs beside what (issue 45): the Librarian's analysis beside the Artisan's call, never
//! before it unless `librarian.wait_for_analysis`; the review of a passing fix beside Chaos's
//! round, its verdict in the report, never taken as approved when it did not come in.

use std::time::Duration;

use super::session::*;
use super::*;
use crate::schema::report::{FixVerdict, Status};
use crate::settings::{Analyze, CriticMode};

/// When each call started and ended, in order: `(role, true)` at its start, `(role, false)` at
/// its end.
pub(super) type Order = Arc<Mutex<Vec<(Role, bool)>>>;

/// A model whose calls take a time per role (the Critic's judgements of Chaos's tests as its
/// reviews), answering `answer(request, n)` like [`llm`]'s, and noting when each call starts
/// and ends.
pub(super) struct Timed {
    pub(super) log: Log,
    pub(super) order: Order,
    pub(super) delay: Box<dyn Fn(Role) -> Duration + Send + Sync>,
    #[allow(clippy::type_complexity)]
    pub(super) answer: Box<dyn Fn(&ChatRequest, usize) -> ChatReply + Send + Sync>,
}

impl Timed {
    pub(super) fn new(
        log: &Log,
        order: &Order,
        delay: impl Fn(Role) -> Duration + Send + Sync + 'static,
        answer: impl Fn(&ChatRequest, usize) -> ChatReply + Send + Sync + 'static,
    ) -> Self {
        Self {
            log: log.clone(),
            order: order.clone(),
            delay: Box::new(delay),
            answer: Box::new(answer),
        }
    }
}

#[async_trait::async_trait]
impl LlmClient for Timed {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let request = request.into_inner();
        let n = {
            let mut log = self.log.lock().unwrap();
            let n = log.iter().filter(|r| r.role == request.role).count();
            log.push(request.clone());
            n
        };
        self.order.lock().unwrap().push((request.role, true));
        tokio::time::sleep((self.delay)(request.role)).await;
        self.order.lock().unwrap().push((request.role, false));
        Ok((self.answer)(&request, n))
    }
}

/// Where in `order` the `nth` start (or end) of `role`'s calls is.
pub(super) fn at(order: &Order, role: Role, start: bool, nth: usize) -> usize {
    order
        .lock()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, e)| **e == (role, start))
        .nth(nth)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("no call {nth} of the {role} ({start})"))
}

fn analysing_team(log: &Log, order: &Order, delay: fn(Role) -> Duration) -> Timed {
    Timed::new(log, order, delay, |request, _| match request.role {
        Role::Librarian => reply(ANALYSIS, LIBRARIAN_USAGE),
        Role::Artisan => reply(&code_reply(FIXED), ARTISAN_USAGE),
        _ => reply("VERDICT: APPROVE", CRITIC_USAGE),
    })
}

/// The Librarian a little faster than the Artisan: its analysis of iteration 1 is in before
/// iteration 2's call.
fn librarian_quicker(role: Role) -> Duration {
    match role {
        Role::Librarian => Duration::from_millis(60),
        _ => Duration::from_millis(150),
    }
}

fn analysing(wait: bool) -> RunSettings {
    let mut s = settings();
    s.librarian_analyze = Analyze::Always;
    s.wait_for_analysis = wait;
    s.critic_mode = CriticMode::Off;
    s
}

/// Runs `runner`'s tests with the analysing team, its calls taking `delay`, and
/// `wait_for_analysis` as `wait`: the session, its report, the team's requests and when each
/// call started and ended.
async fn run_analysing(
    wait: bool,
    delay: fn(Role) -> Duration,
    runner: impl TestRunner + 'static,
) -> (Session, Report, Log, Order) {
    let (log, order) = (Log::default(), Order::default());
    let session = Session::new(analysing(wait), analysing_team(&log, &order, delay), runner);
    let report = session.run().await;
    (session, report, log, order)
}

#[actix_rt::test]
async fn the_analysis_runs_beside_the_artisan_and_reaches_its_next_call() {
    let runs = vec![
        failing("AssertionError"),
        failing("AssertionError"),
        passing(),
    ];
    let (_, report, log, order) = run_analysing(false, librarian_quicker, runner(runs)).await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 2);
    // The Artisan's first call did not wait for the analysis asked in the same iteration.
    assert!(at(&order, Role::Artisan, true, 0) < at(&order, Role::Librarian, false, 0));
    let artisan = requests(&log, Role::Artisan);
    assert!(!user_prompt(&artisan[0]).contains(ANALYSIS));
    // Its next call, in iteration 2, has it, marked as the analysis of the earlier failure.
    let second = user_prompt(&artisan[1]);
    assert!(
        second.contains(
            "# The Librarian's analysis of the tests as they failed before your last proposal"
        ),
        "{second}"
    );
    assert!(second.contains(ANALYSIS), "{second}");
    // Iteration 2 asked again; that analysis came in before the run ended and was paid as any.
    assert_eq!(requests(&log, Role::Librarian).len(), 2);
    assert_eq!(report.abandoned_calls, 0);
    let expected = 2.0 * cost_of(LIBRARIAN_USAGE) + 2.0 * cost_of(ARTISAN_USAGE);
    assert!((report.cost_usd - expected).abs() < 1e-12, "{report:?}");
}

#[actix_rt::test]
async fn with_wait_for_analysis_the_artisan_waits_for_it() {
    let runs = vec![failing("AssertionError"), passing()];
    let (_, report, log, order) = run_analysing(true, librarian_quicker, runner(runs)).await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert!(at(&order, Role::Librarian, false, 0) < at(&order, Role::Artisan, true, 0));
    let first = requests(&log, Role::Artisan);
    let first = user_prompt(&first[0]);
    assert!(first.contains("# The Librarian's analysis\n"), "{first}");
    assert!(first.contains(ANALYSIS), "{first}");
}

#[actix_rt::test]
async fn an_analysis_still_out_when_the_tests_pass_is_stopped_and_charged_its_reservation() {
    let slow_librarian = |role| match role {
        Role::Librarian => Duration::from_secs(30),
        _ => Duration::from_millis(10),
    };
    let (_, report, _, _) =
        run_analysing(false, slow_librarian, fails_then_passes("AssertionError")).await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 1, "the Artisan did not wait for it");
    assert_eq!(report.abandoned_calls, 1);
    assert!(report.cost_by_role["librarian"] > cost_of(LIBRARIAN_USAGE));
}

#[actix_rt::test]
async fn an_analysis_slower_than_an_iteration_is_not_replaced_and_still_arrives() {
    let slow_librarian = |role| match role {
        Role::Librarian => Duration::from_millis(300),
        _ => Duration::from_millis(120),
    };
    let runs = ["alpha", "beta", "gamma", "delta"]
        .iter()
        .map(|w| failing(&format!("AssertionError: {w} is wrong")))
        .chain([passing()])
        .collect();
    let (session, report, log, _) = run_analysing(false, slow_librarian, runner(runs)).await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(report.iterations, 4);
    // Iterations 2 and 3 found iteration 1's analysis still out and asked for none; iteration
    // 4 had it, and said how old the failure it explains was.
    let saved = session.store.saved();
    let asked: Vec<bool> = saved
        .iterations
        .iter()
        .map(|r| r.analysis.is_some())
        .collect();
    assert_eq!(asked, vec![true, false, false, true]);
    let artisan = requests(&log, Role::Artisan);
    assert!(!user_prompt(&artisan[2]).contains(ANALYSIS));
    let fourth = user_prompt(&artisan[3]);
    assert!(
        fourth.contains("# The Librarian's analysis of the tests as they failed 3 proposals ago\n"),
        "{fourth}"
    );
}

/// Test runs that take a time each (the first `runs` entry for the first run, and so on),
/// cut short by the cancel token as a real runner kills its process group.
struct TimedRunner {
    runs: Mutex<std::collections::VecDeque<(Duration, TestRun)>>,
    /// How many runs were stopped before their end.
    stopped: Arc<AtomicUsize>,
}

impl TimedRunner {
    fn new(runs: impl IntoIterator<Item = (Duration, TestRun)>) -> Self {
        Self {
            runs: Mutex::new(runs.into_iter().collect()),
            stopped: Arc::default(),
        }
    }
}

#[async_trait::async_trait]
impl TestRunner for TimedRunner {
    async fn run(&self, cancel: CancellationToken) -> Result<TestRun, RunnerError> {
        let (took, run) = self
            .runs
            .lock()
            .unwrap()
            .pop_front()
            .expect("a scripted run");
        tokio::select! {
            _ = tokio::time::sleep(took) => Ok(run),
            _ = cancel.cancelled() => {
                self.stopped.fetch_add(1, Ordering::SeqCst);
                Ok(TestRun { output: "stopped".into(), ..failing("stopped") })
            }
        }
    }

    fn command(&self) -> String {
        "pytest".into()
    }
}

/// The baseline fails; every proposal's tests then pass within 10 ms.
fn fails_then_passes_quickly() -> TimedRunner {
    TimedRunner::new([
        (Duration::ZERO, failing("AssertionError")),
        (Duration::from_millis(10), passing()),
        (Duration::from_millis(10), passing()),
    ])
}

/// The Critic rejects its first review and approves the rest, after `review`; the Artisan
/// answers `FIXED` at once.
fn critic_rejects_once(
    log: &Log,
    order: &Order,
    review: impl Fn(Role) -> Duration + Send + Sync + 'static,
) -> Timed {
    Timed::new(log, order, review, |request, n| match (request.role, n) {
        (Role::Artisan, _) => reply(&code_reply(FIXED), ARTISAN_USAGE),
        (Role::Critic, 0) => reply("VERDICT: REJECT\n- an empty list must raise", CRITIC_USAGE),
        _ => reply("VERDICT: APPROVE", CRITIC_USAGE),
    })
}

/// Delays under which only the Critic takes time: `ms` milliseconds a call.
fn critic_takes(ms: u64) -> impl Fn(Role) -> Duration + Send + Sync + 'static {
    move |role| match role {
        Role::Critic => Duration::from_millis(ms),
        _ => Duration::ZERO,
    }
}

fn binding() -> RunSettings {
    let mut s = settings();
    s.librarian_analyze = Analyze::Never;
    s.critic_mode = CriticMode::Binding;
    s
}

#[actix_rt::test]
async fn a_binding_rejection_stops_the_slow_tests_and_sends_the_proposal_back() {
    let (log, order) = (Log::default(), Order::default());
    let runner = TimedRunner::new([
        (Duration::ZERO, failing("AssertionError")),
        // The first proposal's tests would take a minute: the rejection stops them.
        (Duration::from_secs(60), passing()),
        (Duration::from_millis(200), passing()),
    ]);
    let stopped = runner.stopped.clone();
    let review = critic_takes(100);
    let session = Session::new(binding(), critic_rejects_once(&log, &order, review), runner);
    let started = std::time::Instant::now();
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the slow run was stopped"
    );
    assert_eq!(stopped.load(Ordering::SeqCst), 1);
    assert_eq!((report.iterations, report.critic_rejections), (1, 1));
    let artisan = requests(&log, Role::Artisan);
    assert!(user_prompt(&artisan[1]).contains("an empty list must raise"));
    // The stopped run judged nothing: only the baseline's and the approved proposal's runs count.
    let saved = session.store.saved();
    let runs: Vec<u32> = saved.results.iter().map(|(n, _)| *n).collect();
    assert_eq!(runs, vec![0, 1]);
    assert_eq!(saved.iterations[0].critic.as_deref(), Some("binding"));
    assert!(saved.iterations[0].critic_approved);
}

/// Runs `team` under `settings` (binding) over tests that pass quickly after the baseline, and
/// checks what both ways of it share: one iteration, one rejection, two proposals, and the
/// passing fix's review `verdict`.
async fn judged_once(
    settings: RunSettings,
    team: Timed,
    log: &Log,
    verdict: crate::schema::report::FixVerdict,
) -> (Session, Report) {
    let session = Session::new(settings, team, fails_then_passes_quickly());
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!((report.iterations, report.critic_rejections), (1, 1));
    assert_eq!(requests(log, Role::Artisan).len(), 2);
    assert_eq!(
        report.fix_review.as_ref().map(|r| r.verdict),
        Some(verdict),
        "a fix the Critic rejected is never reported as approved, nor one it approved rejected"
    );
    (session, report)
}

#[actix_rt::test]
async fn a_passing_proposal_waits_for_its_binding_verdict_and_goes_back_when_rejected() {
    let (log, order) = (Log::default(), Order::default());
    // The tests end before the review does.
    let team = critic_rejects_once(&log, &order, critic_takes(150));
    let (session, _) = judged_once(binding(), team, &log, FixVerdict::Approved).await;
    // The rejected proposal's passing run was set aside: one run for iteration 1.
    let saved = session.store.saved();
    assert_eq!(saved.results.iter().filter(|(n, _)| *n == 1).count(), 1);
}

#[actix_rt::test]
async fn once_the_rejections_are_spent_a_binding_proposal_is_judged_by_its_tests() {
    let (log, order) = (Log::default(), Order::default());
    // A Critic that rejects every proposal, with one rejection allowed per iteration.
    let critic = Timed::new(&log, &order, critic_takes(50), |request, _| {
        match request.role {
            Role::Artisan => reply(&code_reply(FIXED), ARTISAN_USAGE),
            _ => reply("VERDICT: REJECT\n- not convinced", CRITIC_USAGE),
        }
    });
    let mut settings = binding();
    settings.critic_max_rejections = 1;
    let (_, report) = judged_once(settings, critic, &log, FixVerdict::Rejected).await;
    assert_says(
        &report.warnings,
        "the Critic rejected 2 proposals; the tests judge the last one",
    );
}
