//! Recording a live run's model calls, and playing them back.
//!
//! A recording is JSON Lines, one exchange per line, in the order the replies arrived:
//!
//! ```json
//! {"role":"artisan","model":"openai/gpt-4.1","request":{"messages":[{"speaker":"system","content":"..."}],"temperature":0.2,"max_tokens":4096},"reply":{"text":"...","usage":{"input_tokens":812,"output_tokens":95,"cache_read_tokens":0,"cache_write_tokens":0},"model":"gpt-4.1-2025-04-14"}}
//! ```
//!
//! Playback answers each request with the next recorded reply *of the same role*. Roles have
//! separate queues because the order between roles may vary when they run in parallel, while
//! within one role it is the run's own order. The request is kept for people reading the file;
//! playback does not compare it, since prompts carry paths and times that differ between runs.
//! Replies carry their recorded usage, so a replayed run costs exactly what the live run did.
//!
//! One tape can hold many runs (a batch's entries, an agent's specs): each exchange then also
//! names its run (`"run":"specs/fix-median.md"`), and playback keeps a queue per run and role,
//! so runs that went in parallel replay in any order. A run the tape does not name plays the
//! unnamed exchanges, which is what a single run records.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ralph_actors::ports::llm::{
    ChatMessage, ChatReply, ChatRequest, GuardedRequest, LlmClient, LlmError,
};
use ralph_actors::role::Role;
use serde::{Deserialize, Serialize};

/// One model call as recorded: who asked, what, and the reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub role: Role,
    pub model: String,
    /// The run it belongs to when the tape holds several (a spec's path); none for a single run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub request: RecordedRequest,
    pub reply: ChatReply,
}

/// The request of an [`Exchange`], for people reading the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub temperature: Option<f32>,
    pub max_tokens: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot create the recording {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the recording {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} line {line} is not a recorded exchange: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

impl From<ReplayError> for LlmError {
    fn from(e: ReplayError) -> Self {
        LlmError::Replay(e.to_string())
    }
}

/// The file a recording is written to, shared by every run that records into it. Lines are
/// written whole under a lock, so runs in parallel never interleave within one.
#[derive(Debug)]
pub struct RecordTape {
    path: PathBuf,
    file: Mutex<File>,
}

impl RecordTape {
    /// Creates (or empties) the file now, so a bad path fails before any work.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|source| ReplayError::Create {
            path: path.clone(),
            source,
        })?;
        Ok(Self {
            path,
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(&self, exchange: &Exchange) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(exchange).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(&line)?;
        file.flush()
    }
}

/// A client that passes every call to `inner` and appends the exchange to a tape.
pub struct Recorder<C> {
    inner: C,
    tape: Arc<RecordTape>,
    run: Option<String>,
}

impl<C: LlmClient> Recorder<C> {
    /// Records a single run into a file of its own.
    pub fn create(path: impl AsRef<Path>, inner: C) -> Result<Self, ReplayError> {
        Ok(Self::on(Arc::new(RecordTape::create(path)?), None, inner))
    }

    /// Records run `run` (none for a single run) into a shared tape.
    pub fn on(tape: Arc<RecordTape>, run: Option<String>, inner: C) -> Self {
        Self { inner, tape, run }
    }

    pub fn path(&self) -> &Path {
        self.tape.path()
    }
}

#[async_trait::async_trait]
impl<C: LlmClient> LlmClient for Recorder<C> {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        let ChatRequest {
            role,
            model,
            messages,
            temperature,
            max_tokens,
        } = (*request).clone();
        let reply = self.inner.complete(request).await?;
        let exchange = Exchange {
            role,
            model,
            run: self.run.clone(),
            request: RecordedRequest {
                messages,
                temperature,
                max_tokens,
            },
            reply: reply.clone(),
        };
        if let Err(e) = self.tape.append(&exchange) {
            tracing::error!(
                "cannot write to the recording {}: {e}",
                self.tape.path().display()
            );
        }
        Ok(reply)
    }
}

type Queues = HashMap<(Option<String>, Role), VecDeque<Exchange>>;

/// A recording read whole, its replies queued per run and role, shared by every run that
/// plays from it.
pub struct ReplayTape {
    path: PathBuf,
    queues: Mutex<Queues>,
    recorded: HashMap<(Option<String>, Role), usize>,
    models: HashMap<Role, Vec<String>>,
}

/// The file, not the replies: a tape may hold megabytes of prompts.
impl std::fmt::Debug for ReplayTape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayTape")
            .field("path", &self.path)
            .field("recorded", &self.recorded.values().sum::<usize>())
            .finish()
    }
}

impl ReplayTape {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|source| ReplayError::Read {
            path: path.clone(),
            source,
        })?;
        let mut queues: Queues = HashMap::new();
        let mut models: HashMap<Role, Vec<String>> = HashMap::new();
        for (i, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|source| ReplayError::Read {
                path: path.clone(),
                source,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let exchange: Exchange =
                serde_json::from_str(&line).map_err(|e| ReplayError::Parse {
                    path: path.clone(),
                    line: i + 1,
                    message: e.to_string(),
                })?;
            let seen = models.entry(exchange.role).or_default();
            if !seen.contains(&exchange.model) {
                seen.push(exchange.model.clone());
            }
            queues
                .entry((exchange.run.clone(), exchange.role))
                .or_default()
                .push_back(exchange);
        }
        let recorded = queues.iter().map(|(k, q)| (k.clone(), q.len())).collect();
        Ok(Self {
            path,
            queues: Mutex::new(queues),
            recorded,
            models,
        })
    }

    /// The models `role` was answered by, in the order they first answered.
    pub fn models(&self, role: Role) -> &[String] {
        self.models.get(&role).map_or(&[], Vec::as_slice)
    }

    /// How many replies the tape holds for `role` in `run`.
    pub fn recorded(&self, run: Option<&str>, role: Role) -> usize {
        let key = (self.key(run), role);
        self.recorded.get(&key).copied().unwrap_or(0)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The queue key `run` plays from: its own when the tape names it, else the unnamed one.
    fn key(&self, run: Option<&str>) -> Option<String> {
        run.filter(|r| self.recorded.keys().any(|(k, _)| k.as_deref() == Some(*r)))
            .map(str::to_owned)
    }

    fn next(&self, run: Option<&str>, request: &ChatRequest) -> Result<ChatReply, LlmError> {
        let key = (self.key(run), request.role);
        let next = self
            .queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&key)
            .and_then(VecDeque::pop_front);
        match next {
            Some(exchange) => {
                if exchange.model != request.model {
                    tracing::debug!(
                        "replay: {} asks {} but the recording answered with {}",
                        request.role,
                        request.model,
                        exchange.model
                    );
                }
                Ok(exchange.reply)
            }
            None => Err(LlmError::Replay(format!(
                "the recording {} has no more {} replies{} ({} recorded)",
                self.path.display(),
                request.role,
                key.0.map(|r| format!(" for {r}")).unwrap_or_default(),
                self.recorded(run, request.role)
            ))),
        }
    }
}

/// A client answering one run's calls from a [`ReplayTape`]: no network, no key.
#[derive(Debug, Clone)]
pub struct ReplayClient {
    tape: Arc<ReplayTape>,
    run: Option<String>,
}

impl ReplayClient {
    /// Plays a single run's recording.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        Ok(Self::on(Arc::new(ReplayTape::open(path)?), None))
    }

    /// Plays run `run` (none for a single run) from a shared tape.
    pub fn on(tape: Arc<ReplayTape>, run: Option<String>) -> Self {
        Self { tape, run }
    }

    pub fn models(&self, role: Role) -> &[String] {
        self.tape.models(role)
    }

    pub fn recorded(&self, role: Role) -> usize {
        self.tape.recorded(self.run.as_deref(), role)
    }

    pub fn path(&self) -> &Path {
        self.tape.path()
    }
}

#[async_trait::async_trait]
impl LlmClient for ReplayClient {
    async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
        self.tape.next(self.run.as_deref(), &request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::wire::*;
    use ralph_actors::schema::usage::Usage;
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer};

    #[tokio::test]
    async fn records_then_replays_the_same_replies() {
        let server = MockServer::start().await;
        for (marker, text, usage) in [
            ("ask-librarian", "context", usage_json(100, 10, 0)),
            ("ask-artisan-1", "first try", usage_json(900, 300, 512)),
            ("ask-critic", "VERDICT: APPROVE", usage_json(400, 20, 0)),
            ("ask-artisan-2", "second try", usage_json(950, 280, 768)),
        ] {
            Mock::given(method("POST"))
                .and(body_string_contains(marker))
                .respond_with(sse_reply(&[text], Some(usage)))
                .mount(&server)
                .await;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("session.jsonl");
        let recorder = Recorder::create(&file, client(&server, |_| {})).expect("recorder");
        let calls = [
            (Role::Librarian, "ask-librarian"),
            (Role::Artisan, "ask-artisan-1"),
            (Role::Critic, "ask-critic"),
            (Role::Artisan, "ask-artisan-2"),
        ];
        let mut live = Vec::new();
        for (role, marker) in calls {
            live.push(
                recorder
                    .complete(request_for(role, "openai/gpt-4.1", marker))
                    .await
                    .expect("live"),
            );
        }
        assert_eq!(
            std::fs::read_to_string(&file)
                .expect("file")
                .lines()
                .count(),
            4
        );

        let replay = ReplayClient::open(&file).expect("open");
        assert_eq!(replay.recorded(Role::Artisan), 2);
        // Ask in another order across roles: each role still gets its own replies in order.
        let order = [calls[2], calls[1], calls[0], calls[3]];
        let mut replayed = Vec::new();
        for (role, marker) in order {
            replayed.push(
                replay
                    .complete(request_for(role, "openai/gpt-4.1", marker))
                    .await
                    .expect("replayed"),
            );
        }
        assert_eq!(replayed[0], live[2]);
        assert_eq!(replayed[1], live[1]);
        assert_eq!(replayed[2], live[0]);
        assert_eq!(replayed[3], live[3]);
        assert_eq!(replayed[3].usage, usage_of(950, 280, 768));
    }

    #[tokio::test]
    async fn an_exhausted_recording_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("one.jsonl");
        let exchange = Exchange {
            role: Role::Critic,
            model: "openai/gpt-4.1-mini".into(),
            run: None,
            request: RecordedRequest {
                messages: vec![ChatMessage::user("review")],
                temperature: None,
                max_tokens: 100,
            },
            reply: ChatReply {
                text: "VERDICT: APPROVE".into(),
                usage: Usage::default(),
                model: "gpt-4.1-mini".into(),
                ..ChatReply::default()
            },
        };
        std::fs::write(
            &file,
            format!("{}\n\n", serde_json::to_string(&exchange).expect("json")),
        )
        .expect("write");
        let replay = ReplayClient::open(&file).expect("open");
        let req = request_for(Role::Critic, "openai/gpt-4.1-mini", "review");
        assert_eq!(
            replay.complete(req.clone()).await.expect("first").text,
            "VERDICT: APPROVE"
        );
        let err = replay
            .complete(req)
            .await
            .expect_err("exhausted")
            .to_string();
        assert!(
            err.contains("one.jsonl") && err.contains("no more critic replies (1 recorded)"),
            "{err}"
        );
        let err = replay
            .complete(request_for(Role::Artisan, "openai/x", "y"))
            .await
            .expect_err("none")
            .to_string();
        assert!(
            err.contains("no more artisan replies (0 recorded)"),
            "{err}"
        );
    }

    /// Runs recorded in parallel into one tape each replay their own replies, in any order; a
    /// run the tape does not name plays the unnamed ones (a single run's recording).
    #[tokio::test]
    async fn a_shared_tape_keeps_each_run_s_replies_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("tape.jsonl");
        let tape = Arc::new(RecordTape::create(&file).expect("tape"));
        struct Echo;
        #[async_trait::async_trait]
        impl LlmClient for Echo {
            async fn complete(&self, request: GuardedRequest) -> Result<ChatReply, LlmError> {
                Ok(ChatReply {
                    text: request
                        .messages
                        .last()
                        .map(|m| m.content.clone())
                        .unwrap_or_default(),
                    ..ChatReply::default()
                })
            }
        }
        let a = Recorder::on(tape.clone(), Some("specs/a.md".into()), Echo);
        let b = Recorder::on(tape.clone(), Some("specs/b.md".into()), Echo);
        let single = Recorder::on(tape, None, Echo);
        for (client, text) in [
            (&b, "b1"),
            (&a, "a1"),
            (&single, "s1"),
            (&a, "a2"),
            (&b, "b2"),
        ] {
            client
                .complete(request_for(Role::Artisan, "openai/gpt-4.1", text))
                .await
                .expect("live");
        }
        let text = std::fs::read_to_string(&file).expect("file");
        assert!(text
            .lines()
            .next()
            .expect("a line")
            .contains("\"run\":\"specs/b.md\""));

        let tape = Arc::new(ReplayTape::open(&file).expect("open"));
        let a = ReplayClient::on(tape.clone(), Some("specs/a.md".into()));
        let other = ReplayClient::on(tape.clone(), Some("specs/other.md".into()));
        let b = ReplayClient::on(tape, Some("specs/b.md".into()));
        assert_eq!(a.recorded(Role::Artisan), 2);
        assert_eq!(other.recorded(Role::Artisan), 1, "the unnamed replies");
        let ask = || request_for(Role::Artisan, "openai/gpt-4.1", "again");
        for (client, expected) in [
            (&a, "a1"),
            (&b, "b1"),
            (&other, "s1"),
            (&a, "a2"),
            (&b, "b2"),
        ] {
            let got = client.complete(ask()).await.expect("replayed");
            assert!(got.text.contains(expected), "{} for {expected}", got.text);
        }
        let err = a.complete(ask()).await.expect_err("a is spent").to_string();
        assert!(
            err.contains("no more artisan replies for specs/a.md (2 recorded)"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_recording_names_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = ReplayClient::open(dir.path().join("nope.jsonl"))
            .expect_err("missing")
            .to_string();
        assert!(missing.contains("nope.jsonl"), "{missing}");
        let file = dir.path().join("bad.jsonl");
        std::fs::write(&file, "\n{\"not\": \"an exchange\"}\n").expect("write");
        let bad = ReplayClient::open(&file).expect_err("bad").to_string();
        assert!(bad.contains("bad.jsonl line 2"), "{bad}");
        let as_llm: LlmError = ReplayClient::open(&file).expect_err("bad").into();
        assert!(matches!(as_llm, LlmError::Replay(_)));
    }

    #[test]
    fn cannot_record_into_a_missing_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Recorder::create(
            dir.path().join("no/such/dir.jsonl"),
            crate::providers::Router::new(),
        );
        assert!(matches!(err, Err(ReplayError::Create { .. })));
    }
}
