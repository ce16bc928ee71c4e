//! The Librarian: reads the project fresh from disk for each iteration ([`GatherContext`]) and
//! says whether the last test run failed in a way the Artisan cannot read whole (see
//! [`pace::analysis`]); the Supervisor then asks it for a short analysis ([`Analyse`]), beside
//! the Artisan's call unless `librarian.wait_for_analysis` holds the Artisan back for it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::events::event::Event;
use crate::policy::pace::{self, Analyze, History};
use crate::ports::workspace::Workspace;
use crate::prompt::bundle::{language_of, ContextBundle, TargetView};
use crate::prompt::results::view;
use crate::role::Role;
use crate::roles::caller::{guarded, Caller, RoleModel};
use crate::schema::context::{ContextChoice, ContextPack, ContextRelation};
use crate::schema::test_run::TestRun;
use crate::settings::RunSettings;

/// Supervisor → Librarian: read the project fresh from disk for this iteration.
#[derive(Message)]
#[rtype(result = "Result<ContextBundle>")]
pub struct GatherContext {
    pub iteration: u32,
    /// The last test run, as the Supervisor holds it: the baseline, or the previous
    /// iteration's.
    pub last: Option<Arc<TestRun>>,
    /// What the Supervisor knows that the last run does not show, for `librarian.analyze:
    /// auto`.
    pub history: History,
}

/// Supervisor → Librarian: analyse the failure `context` shows, for the Artisan.
#[derive(Message)]
#[rtype(result = "Result<String>")]
pub struct Analyse {
    pub iteration: u32,
    /// The iteration's context, its `analysis_reason` set.
    pub context: Arc<ContextBundle>,
    pub cancel: CancellationToken,
}

/// The Artisan's context window assumed when the price table does not know its model: small
/// enough for any current code model, so the packed files fit wherever the run goes.
pub const FALLBACK_WINDOW: u32 = 32_000;

/// Tokens the project's files may take in a prompt: the configured share of the Artisan's
/// context window, or of the Librarian's when it analyses the failures (it then reads the same
/// files) and its window is the smaller.
pub fn context_budget(settings: &RunSettings) -> u32 {
    let window_of = |role| {
        settings
            .context_windows
            .get(&role)
            .copied()
            .unwrap_or(FALLBACK_WINDOW)
    };
    let mut window = window_of(Role::Artisan);
    if settings.librarian_analyze != Analyze::Never {
        window = window.min(window_of(Role::Librarian));
    }
    (f64::from(window) * settings.context_share).floor() as u32
}

/// At most this many of the graph's own warnings (unreadable or over-long files) are shown in a
/// run; each is shown once, not every iteration.
const GRAPH_WARNINGS_SHOWN: usize = 10;

/// The warnings of `warnings` not shown before in this run, recorded as shown; at most
/// [`GRAPH_WARNINGS_SHOWN`] in all, the last one saying that more were held back.
fn first_seen(warned: &Mutex<HashSet<String>>, warnings: &[String]) -> Vec<String> {
    let mut warned = warned.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    for warning in warnings {
        if warned.len() > GRAPH_WARNINGS_SHOWN {
            break;
        }
        if !warned.insert(warning.clone()) {
            continue;
        }
        if warned.len() > GRAPH_WARNINGS_SHOWN {
            out.push(format!(
                "import graph: more warnings held back (the first {GRAPH_WARNINGS_SHOWN} are shown)"
            ));
        } else {
            out.push(format!("import graph: {warning}"));
        }
    }
    out
}

pub struct Librarian {
    workspace: Arc<dyn Workspace>,
    caller: Arc<Caller>,
    settings: Arc<RunSettings>,
    test_command: String,
    /// Graph warnings already shown in this run.
    warned: Arc<Mutex<HashSet<String>>>,
}

impl Librarian {
    pub fn new(
        workspace: Arc<dyn Workspace>,
        caller: Arc<Caller>,
        settings: Arc<RunSettings>,
        test_command: String,
    ) -> Self {
        Self {
            workspace,
            caller,
            settings,
            test_command,
            warned: Arc::default(),
        }
    }
}

impl Actor for Librarian {
    type Context = Context<Self>;
}

impl Handler<GatherContext> for Librarian {
    type Result = ResponseFuture<Result<ContextBundle>>;

    fn handle(&mut self, msg: GatherContext, _: &mut Context<Self>) -> Self::Result {
        let (ws, caller, settings) = (
            self.workspace.clone(),
            self.caller.clone(),
            self.settings.clone(),
        );
        let test_command = self.test_command.clone();
        let warned = self.warned.clone();
        Box::pin(guarded(Role::Librarian, async move {
            let target = ws.target().await?;
            let last = msg.last;
            let test_file = ws.test_file().await?;
            let test_file_path = test_file.as_ref().map(|f| f.path.clone());
            let target_path = target.path.clone();
            let budget = context_budget(&settings);
            // The neighbourhood is an aid: without it the Artisan still has the target and its
            // tests, so a graph that cannot be built is a warning, not a failed run.
            let pack = match ws
                .related(&settings.model(Role::Artisan).model, budget)
                .await
            {
                Ok(pack) => pack,
                Err(e) => {
                    caller.events.emit(Event::Warning {
                        message: format!(
                            "iteration {}: the import graph is unavailable ({e}); the prompt has only the target and its tests",
                            msg.iteration
                        ),
                    });
                    ContextPack {
                        placed: vec![ContextChoice {
                            path: target_path.clone(),
                            distance: 0,
                            relation: ContextRelation::Target,
                            reason: "target".into(),
                        }],
                        budget,
                        ..ContextPack::default()
                    }
                }
            };
            for message in first_seen(&warned, &pack.warnings) {
                caller.events.emit(Event::Warning { message });
            }
            let summary = pack.summary();
            caller.events.emit(Event::ContextGathered {
                iteration: msg.iteration,
                included: summary.included.clone(),
                excluded: summary.excluded,
                tokens: summary.tokens,
                budget: summary.budget,
            });
            let unlisted = pack
                .excluded_count
                .saturating_sub(pack.excluded.len() as u32);
            let mut bundle = ContextBundle {
                iteration: msg.iteration,
                target: TargetView {
                    language: language_of(&target.path).to_string(),
                    path: target.path,
                    content: target.content,
                },
                test_file,
                instructions: ws.prompt().await?.map(|p| p.content),
                manifest: ws.manifest().await?,
                test_command,
                last_results: last.as_deref().map(|r| {
                    view(
                        r,
                        settings.max_test_output_bytes,
                        &[Some(target_path.as_str()), test_file_path.as_deref()],
                    )
                }),
                analysis: None,
                analysis_age: 0,
                analysis_reason: None,
                late_review: None,
                related: pack.related,
                excluded: pack.excluded,
                unlisted,
                context: summary,
                memory: Vec::new(),
                notes: Vec::new(),
                undone: None,
                guidance: None,
                adversarial: None,
            };
            bundle.analysis_reason = bundle
                .last_results
                .as_ref()
                .and_then(|r| pace::analysis(settings.librarian_analyze, r.shown(), msg.history))
                .map(str::to_string);
            Ok(bundle)
        }))
    }
}

impl Handler<Analyse> for Librarian {
    type Result = ResponseFuture<Result<String>>;

    fn handle(&mut self, msg: Analyse, _: &mut Context<Self>) -> Self::Result {
        let model = RoleModel::of(Role::Librarian, &self.caller, &self.settings);
        let settings = self.settings.clone();
        Box::pin(guarded(Role::Librarian, async move {
            let messages = settings.templates.render(Role::Librarian, &*msg.context)?;
            let reply = model
                .call(msg.iteration, messages.into(), &msg.cancel)
                .await?;
            Ok(reply.text.trim().to_string())
        }))
    }
}
