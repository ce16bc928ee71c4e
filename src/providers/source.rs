//! What a run talks to, as the command line chose it ([`LlmSource`]: live, live and recorded, or
//! replayed, the recording a [`Tape`] a batch or agent shares between its runs), and [`build`],
//! which makes that client and settles each role's callable models.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use ralph_actors::ports::llm::{LlmClient, LlmError};
use ralph_actors::role::Role;
use ralph_actors::settings::ModelSpec;

use super::options::Providers;
use super::replay::{RecordTape, Recorder, ReplayClient, ReplayTape};
use super::router::Router;

/// A recording opened once and shared by every run of a process: `--record` or `--replay` of a
/// batch or an agent. Each run's exchanges go under its own name (see [`build`]).
#[derive(Debug, Clone)]
pub enum Tape {
    Record(Arc<RecordTape>),
    Replay(Arc<ReplayTape>),
}

impl Tape {
    /// `--record FILE`: the file is created (emptied) now.
    pub fn record(path: &Path) -> Result<Self, LlmError> {
        Ok(Self::Record(Arc::new(RecordTape::create(path)?)))
    }

    /// `--replay FILE`: the file is read whole now.
    pub fn replay(path: &Path) -> Result<Self, LlmError> {
        Ok(Self::Replay(Arc::new(ReplayTape::open(path)?)))
    }
}

/// What a run talks to, as the command line chose it.
#[derive(Debug, Clone)]
pub enum LlmSource {
    /// The live providers.
    Live(Providers),
    /// The live providers, every exchange appended to the tape (`--record FILE`).
    Record(Providers, Arc<RecordTape>),
    /// The recording played back (`--replay FILE`): no network, no key.
    Replay(Arc<ReplayTape>),
}

impl LlmSource {
    /// The source for a run with these providers: the shared tape when there is one.
    pub fn with_tape(tape: Option<&Tape>, providers: impl FnOnce() -> Providers) -> Self {
        match tape {
            None => Self::Live(providers()),
            Some(Tape::Record(t)) => Self::Record(providers(), t.clone()),
            Some(Tape::Replay(t)) => Self::Replay(t.clone()),
        }
    }
}

/// Builds the client for run `run` (a spec's name on a shared tape; none for a single run).
/// Each role then runs on the first of its models (its own, then its fallbacks) that can be
/// called now, its provider present and its key set; the callable rest stay its fallbacks, and
/// what was skipped comes back as notes for the user. A role with no callable model fails the
/// build, naming what each one lacks. A replay answers for any model and checks nothing.
pub fn build(
    source: &LlmSource,
    run: Option<&str>,
    models: &mut BTreeMap<Role, ModelSpec>,
) -> Result<(Arc<dyn LlmClient>, Vec<String>), LlmError> {
    let mut live = |providers: &Providers, notes: &mut Vec<String>| -> Result<Router, LlmError> {
        let router = Router::live(providers)?;
        for (role, spec) in models.iter_mut() {
            notes.extend(router.pick_callable(*role, spec)?);
        }
        Ok(router)
    };
    let mut notes = Vec::new();
    let run = run.map(str::to_owned);
    let client: Arc<dyn LlmClient> = match source {
        LlmSource::Live(p) => Arc::new(live(p, &mut notes)?),
        LlmSource::Record(p, tape) => {
            Arc::new(Recorder::on(tape.clone(), run, live(p, &mut notes)?))
        }
        LlmSource::Replay(tape) => {
            for (role, spec) in models.iter_mut() {
                if let Some((first, rest)) = tape.models(*role).split_first() {
                    spec.model = first.clone();
                    spec.fallbacks = rest.to_vec();
                }
            }
            Arc::new(ReplayClient::on(tape.clone(), run))
        }
    };
    Ok((client, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::options::ClientOptions;
    use crate::testkit::wire::*;

    #[tokio::test]
    async fn builds_each_source() {
        let no_key = ClientOptions {
            base_url: Some("https://api.openai.com/v1".into()),
            api_key: None,
            api_key_env: "RALPH_TEST_SURELY_UNSET_KEY".into(),
            ..ClientOptions::default()
        };
        // Live without a key: refused at build time, naming the variable.
        let err = build(
            &LlmSource::Live(setups(&no_key)),
            None,
            &mut spec("openai/gpt-4.1", &[]),
        )
        .err();
        assert!(
            matches!(&err, Some(LlmError::Auth { env_var, .. }) if env_var == "RALPH_TEST_SURELY_UNSET_KEY"),
            "{err:?}"
        );
        // No model to check: it builds, and the first call fails before sending anything.
        let (live, _) = build(
            &LlmSource::Live(setups(&no_key)),
            None,
            &mut BTreeMap::new(),
        )
        .expect("live");
        let err = failure(&*live, "openai/gpt-4.1").await;
        assert!(matches!(&err, LlmError::Auth { .. }), "{err:?}");

        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("rec.jsonl");
        let tape = Tape::record(&file).expect("record");
        let source = LlmSource::with_tape(Some(&tape), || setups(&no_key));
        build(&source, None, &mut BTreeMap::new()).expect("record");
        assert!(file.exists(), "the recording is created up front");

        let mut unchecked = spec("anthropic/claude-sonnet-4-5", &[]);
        let tape = Tape::replay(&file).expect("replay");
        let source = LlmSource::with_tape(Some(&tape), || setups(&no_key));
        let (replay, _) = build(&source, None, &mut unchecked).expect("replay");
        let err = failure(&*replay, "openai/gpt-4.1").await;
        assert!(matches!(err, LlmError::Replay(_)));
        let err = Tape::replay(&dir.path().join("missing.jsonl")).err();
        assert!(matches!(err, Some(LlmError::Replay(m)) if m.contains("missing.jsonl")));
    }
}
