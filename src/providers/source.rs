//! What a run talks to, as the command line chose it ([`LlmSource`]: live, live and recorded, or
//! replayed), and [`build`], which makes that client and settles each role's callable models.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use ralph_actors::ports::llm::{LlmClient, LlmError};
use ralph_actors::role::Role;
use ralph_actors::settings::ModelSpec;

use super::options::Providers;
use super::replay::{Recorder, ReplayClient};
use super::router::Router;

/// What a run talks to, as the command line chose it.
#[derive(Debug, Clone)]
pub enum LlmSource {
    /// The live providers.
    Live(Providers),
    /// The live providers, every exchange appended to the file (`--record FILE`).
    Record(Providers, PathBuf),
    /// The recording played back (`--replay FILE`): no network, no key.
    Replay(PathBuf),
}

/// Builds the client for a run. Each role then runs on the first of its models (its own, then
/// its fallbacks) that can be called now, its provider present and its key set; the callable
/// rest stay its fallbacks, and what was skipped comes back as notes for the user. A role with
/// no callable model fails the build, naming what each one lacks. A replay answers for any
/// model and checks nothing. Files are opened here too, so a bad path fails before any work.
pub fn build(
    source: &LlmSource,
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
    let client: Arc<dyn LlmClient> = match source {
        LlmSource::Live(p) => Arc::new(live(p, &mut notes)?),
        LlmSource::Record(p, path) => Arc::new(Recorder::create(path, live(p, &mut notes)?)?),
        LlmSource::Replay(path) => {
            let replay = ReplayClient::open(path)?;
            for (role, spec) in models.iter_mut() {
                if let Some((first, rest)) = replay.models(*role).split_first() {
                    spec.model = first.clone();
                    spec.fallbacks = rest.to_vec();
                }
            }
            Arc::new(replay)
        }
    };
    Ok((client, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::options::ClientOptions;
    use crate::providers::testkit::*;

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
            &mut spec("openai/gpt-4.1", &[]),
        )
        .err();
        assert!(
            matches!(&err, Some(LlmError::Auth { env_var, .. }) if env_var == "RALPH_TEST_SURELY_UNSET_KEY"),
            "{err:?}"
        );
        // No model to check: it builds, and the first call fails before sending anything.
        let (live, _) =
            build(&LlmSource::Live(setups(&no_key)), &mut BTreeMap::new()).expect("live");
        let err = live
            .complete(request("openai/gpt-4.1"))
            .await
            .expect_err("no key");
        assert!(matches!(&err, LlmError::Auth { .. }), "{err:?}");

        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("rec.jsonl");
        build(
            &LlmSource::Record(setups(&no_key), file.clone()),
            &mut BTreeMap::new(),
        )
        .expect("record");
        assert!(file.exists(), "the recording is created up front");

        let mut unchecked = spec("anthropic/claude-sonnet-4-5", &[]);
        let (replay, _) = build(&LlmSource::Replay(file), &mut unchecked).expect("replay");
        let err = replay
            .complete(request("openai/gpt-4.1"))
            .await
            .expect_err("empty");
        assert!(matches!(err, LlmError::Replay(_)));
        let err = build(
            &LlmSource::Replay(dir.path().join("missing.jsonl")),
            &mut BTreeMap::new(),
        )
        .err();
        assert!(matches!(err, Some(LlmError::Replay(m)) if m.contains("missing.jsonl")));
    }
}
