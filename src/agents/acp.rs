//! Agents that speak the Agent Client Protocol (`format: acp`), through its maintained crate
//! (`agent-client-protocol`): one backend for every ACP agent (Zed's adapters of Claude Code and
//! Codex, Gemini's `--experimental-acp`, goose, ...).
//!
//! One run is one session: `initialize`, `session/new` in the project, one `session/prompt`.
//! The agent's session updates become [`AgentEvent`]s: its message chunks the text (a line at a
//! time, so a status block is never cut), its tool calls the tools, its usage updates the cost.
//! Its permission requests are granted, once each: the run is headless, as the other agents'
//! flags make them. The agent runs as the others do: under the reaper, in its own process
//! group, with the hang and active timeouts and the cancel token; its stdin stays open for the
//! protocol until its answer, then closes; it gets half a second to exit, then is stopped (an
//! ACP agent is a server that may outlive its session).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, StopReason, TextContent,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams};
use nix::unistd::Pid;
use ralph_actors::schema::agent::AgentEvent;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

use super::invoke::{scan, texts, AgentEnding, AgentOutcome, Invocation, OnBusy, BUSY_LOOK};
use crate::process::groups::{terminate_group, ProcessGroups};
use crate::process::supervise::SpawnError;
use crate::process::tree::activity;

/// How long an agent that answered gets to exit once its stdin is closed, at most.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// What the agent's stderr keeps for the outcome's output, at most.
const STDERR_CAP: usize = 64 * 1024;

/// The agent's message chunks, cut into whole lines.
#[derive(Default)]
struct Lines {
    partial: String,
}

impl Lines {
    /// Only the chunk is searched for a line end, so a message coming a word at a time costs
    /// its length, not its square; a text past the line cap without one is sent as it is.
    fn push(&mut self, chunk: &str, out: &mpsc::UnboundedSender<AgentEvent>) {
        let start = self.partial.len();
        self.partial.push_str(chunk);
        let end = match chunk.rfind('\n') {
            Some(at) => Some(start + at),
            None if self.partial.len() > crate::process::lines::MAX_LINE => {
                Some(self.partial.len() - 1)
            }
            None => None,
        };
        if let Some(end) = end {
            let rest = self.partial.split_off(end + 1);
            let text = std::mem::replace(&mut self.partial, rest);
            let _ = out.send(AgentEvent::Text {
                text: text.trim_end_matches('\n').to_string(),
            });
        }
    }

    fn flush(&mut self, out: &mpsc::UnboundedSender<AgentEvent>) {
        if !self.partial.is_empty() {
            let text = std::mem::take(&mut self.partial);
            let _ = out.send(AgentEvent::Text { text });
        }
    }
}

/// The session update's events; the cost, when it says one.
fn on_update(
    update: SessionUpdate,
    lines: &mut Lines,
    cost: &Mutex<Option<f64>>,
    out: &mpsc::UnboundedSender<AgentEvent>,
) {
    match update {
        SessionUpdate::AgentMessageChunk(chunk) => {
            if let ContentBlock::Text(text) = chunk.content {
                lines.push(&text.text, out);
            }
        }
        SessionUpdate::ToolCall(call) => {
            lines.flush(out);
            let name = call
                .name
                .clone()
                .unwrap_or_else(|| format!("{:?}", call.kind).to_lowercase());
            let _ = out.send(AgentEvent::Tool {
                name,
                detail: call.title,
            });
        }
        SessionUpdate::UsageUpdate(usage) => {
            if let Some(c) = usage
                .cost
                .filter(|c| c.currency.eq_ignore_ascii_case("USD"))
            {
                if let Ok(mut cost) = cost.lock() {
                    *cost = Some(c.amount);
                }
            }
        }
        _ => {}
    }
}

/// The first option that allows the request, once before always.
fn grant(request: &RequestPermissionRequest) -> RequestPermissionResponse {
    let allow = [
        PermissionOptionKind::AllowOnce,
        PermissionOptionKind::AllowAlways,
    ]
    .iter()
    .find_map(|kind| request.options.iter().find(|o| o.kind == *kind));
    RequestPermissionResponse::new(match allow {
        Some(option) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
            option.option_id.clone(),
        )),
        None => RequestPermissionOutcome::Cancelled,
    })
}

/// Runs an ACP agent once on the prompt; see the module's documentation.
pub async fn invoke_acp(
    run: Invocation,
    cancel: CancellationToken,
    groups: &ProcessGroups,
    mut observe: impl FnMut(&AgentEvent),
) -> Result<AgentOutcome, SpawnError> {
    let started = Instant::now();
    let mut child = spawn(&run)?;
    let pgid = Pid::from_raw(child.id().ok_or(SpawnError::Vanished)? as i32);
    let mut guard = groups.guard(pgid, None, run.reaper.is_some());
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(SpawnError::Vanished);
    };
    let errors = kept_stderr(stderr);

    let (tx, mut rx) = mpsc::unbounded_channel();
    let cost = Arc::new(Mutex::new(None));
    let (notes, spent) = (tx.clone(), cost.clone());
    // Shared with the handler: what is left of the last chunk is flushed after the answer.
    let lines = Arc::new(Mutex::new(Lines::default()));
    let pending = lines.clone();
    let cwd = run.cwd.clone();
    let prompt = run.prompt.clone();
    // Boxed, so that dropping it ends the connection and closes the agent's stdin.
    let mut session = Box::pin(
        agent_client_protocol::Client
            .v1()
            .on_receive_notification(
                async move |note: SessionNotification, _cx| {
                    if let Ok(mut lines) = pending.lock() {
                        on_update(note.update, &mut lines, &spent, &notes);
                    }
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest, responder, _cx| {
                    responder.respond(grant(&request))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(
                ByteStreams::new(stdin.compat_write(), stdout.compat()),
                async move |agent: ConnectionTo<Agent>| {
                    agent
                        .send_request(InitializeRequest::new(ProtocolVersion::V1))
                        .block_task()
                        .await?;
                    let session = agent
                        .send_request(NewSessionRequest::new(cwd))
                        .block_task()
                        .await?;
                    let prompt = vec![ContentBlock::Text(TextContent::new(prompt))];
                    let answer = agent
                        .send_request(PromptRequest::new(session.session_id, prompt))
                        .block_task()
                        .await?;
                    Ok(answer.stop_reason)
                },
            ),
    );

    let mut events = Vec::new();
    let (answer, busy) = wait(
        &mut session,
        &mut rx,
        &run,
        &cancel,
        pgid,
        &mut events,
        &mut observe,
    )
    .await;
    // The last line of its text rarely ends with a line break.
    if let Ok(mut lines) = lines.lock() {
        lines.flush(&tx);
    }
    while let Ok(event) = rx.try_recv() {
        observe(&event);
        events.push(event);
    }
    let cost = cost.lock().ok().and_then(|c| *c);
    let ending = ended(
        answer,
        session,
        &mut child,
        &run,
        cost,
        &mut events,
        &mut observe,
    )
    .await;
    terminate_group(pgid, &mut child).await;
    let _ = child.wait().await;
    guard.armed = false;
    let output = errors.lock().map(|t| t.clone()).unwrap_or_default();
    Ok(AgentOutcome {
        ending,
        found: scan(&events),
        events,
        silent_but_working: busy,
        duration: started.elapsed(),
        output,
    })
}

/// Waits for the agent's answer, passing on what it says meanwhile; the cancel, the active
/// limit or a hang (no word and no CPU time for `limits.hang`) ends the wait first. Also how
/// often it was silent but working.
async fn wait<F: std::future::Future + Unpin>(
    session: &mut F,
    rx: &mut mpsc::UnboundedReceiver<AgentEvent>,
    run: &Invocation,
    cancel: &CancellationToken,
    pgid: Pid,
    events: &mut Vec<AgentEvent>,
    observe: &mut impl FnMut(&AgentEvent),
) -> (Result<F::Output, AgentEnding>, u32) {
    let mut busy = 0u32;
    let reaped = run.reaper.is_some();
    let mut last = Instant::now();
    let deadline = tokio::time::Instant::now() + run.limits.active;
    let answer = loop {
        let hang = tokio::time::Instant::from_std(last + run.limits.hang);
        tokio::select! {
            answer = &mut *session => break Ok(answer),
            Some(event) = rx.recv() => {
                last = Instant::now();
                observe(&event);
                events.push(event);
            }
            _ = cancel.cancelled() => break Err(AgentEnding::Cancelled),
            _ = tokio::time::sleep_until(deadline) => break Err(AgentEnding::ActiveTimeout),
            _ = tokio::time::sleep_until(hang) => {
                let before = activity(pgid.as_raw(), reaped);
                tokio::time::sleep(BUSY_LOOK).await;
                let after = activity(pgid.as_raw(), reaped);
                match (before, after) {
                    (Some(b), Some(a)) if a.since(&b) => {
                        busy += 1;
                        last = Instant::now();
                        if let Some(OnBusy(tell)) = &run.on_busy {
                            tell();
                        }
                    }
                    _ => break Err(AgentEnding::Hung),
                }
            }
        }
    };
    (answer, busy)
}

/// The agent's process: ralph-loop's reaper around it when there is one, in a process group of
/// its own, its standard streams piped (ACP speaks on stdin and stdout).
fn spawn(run: &Invocation) -> Result<tokio::process::Child, SpawnError> {
    let args: Vec<std::ffi::OsString> = run
        .def
        .run_args("", run.model.as_deref())
        .into_iter()
        .map(Into::into)
        .collect();
    let (program, args) = match &run.reaper {
        Some(reaper) => {
            crate::process::reaper::wrap(reaper, run.binary.clone().into_os_string(), args)
        }
        None => (run.binary.clone().into_os_string(), args),
    };
    tokio::process::Command::new(program)
        .args(args)
        .current_dir(&run.cwd)
        .env_clear()
        .envs(run.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(SpawnError::Spawn)
}

/// The agent's stderr, read as it comes and kept up to [`STDERR_CAP`]: the run's output.
fn kept_stderr(mut stderr: tokio::process::ChildStderr) -> Arc<Mutex<String>> {
    let errors = Arc::new(Mutex::new(String::new()));
    let kept = errors.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if let Ok(mut text) = kept.lock() {
                if text.len() < STDERR_CAP {
                    text.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        }
    });
    errors
}

/// How the agent's turn ended, from its `answer` (`Err`: a cancel, a limit or a hang): an
/// answer told as its result, then the agent given a short grace to exit.
async fn ended<S, E: std::fmt::Display>(
    answer: Result<Result<StopReason, E>, AgentEnding>,
    session: S,
    child: &mut tokio::process::Child,
    run: &Invocation,
    cost: Option<f64>,
    events: &mut Vec<AgentEvent>,
    observe: &mut impl FnMut(&AgentEvent),
) -> AgentEnding {
    match answer {
        Ok(Ok(stop)) => {
            let result = AgentEvent::Result {
                text: texts(events).join("\n"),
                is_error: !matches!(stop, StopReason::EndTurn),
                cost_usd: cost,
                tokens: None,
            };
            observe(&result);
            events.push(result);
            // Its answer given, stdin closes with the session. An ACP agent is a server that
            // may outlive its session (Zed's adapter of Claude Code does): it gets a short
            // grace, then is stopped, its turn finished.
            drop(session);
            let grace = run.limits.result_grace.min(EXIT_GRACE);
            match tokio::time::timeout(grace, child.wait()).await {
                Ok(status) => AgentEnding::Exited(status.ok().and_then(|s| s.code())),
                Err(_) => AgentEnding::StoppedAfterResult,
            }
        }
        // The connection failed: the agent exited, or spoke something else.
        Ok(Err(e)) => {
            tracing::warn!("{}: {e}", run.def.name);
            drop(session);
            // Without an answer it did not finish, whatever its exit code.
            let code = match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
                Ok(Ok(status)) => status.code().filter(|c| *c != 0),
                _ => None,
            };
            AgentEnding::Exited(Some(code.unwrap_or(1)))
        }
        Err(ending) => ending,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn update(value: serde_json::Value) -> SessionUpdate {
        serde_json::from_value(value).expect("a session update")
    }

    #[test]
    fn a_message_a_word_at_a_time_comes_whole_and_a_line_past_the_cap_is_sent() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut lines = Lines::default();
        for _ in 0..1000 {
            lines.push("word ", &tx);
        }
        lines.push("end\nnext", &tx);
        let text = |e: AgentEvent| match e {
            AgentEvent::Text { text } => text,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            text(rx.try_recv().unwrap()),
            format!("{}end", "word ".repeat(1000))
        );
        assert!(rx.try_recv().is_err(), "`next` waits for its line's end");
        lines.push(&"x".repeat(crate::process::lines::MAX_LINE), &tx);
        assert_eq!(
            text(rx.try_recv().unwrap()).len(),
            crate::process::lines::MAX_LINE + 4
        );
    }

    #[test]
    fn chunks_become_whole_lines_tools_and_a_cost() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (mut lines, cost) = (Lines::default(), Mutex::new(None));
        let chunk = |text: &str| {
            update(serde_json::json!({"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text}}))
        };
        for piece in [
            "---RALPH_",
            "STATUS---\nSTATUS: COMP",
            "LETE\n",
            "EXIT_SIGNAL: true",
        ] {
            on_update(chunk(piece), &mut lines, &cost, &tx);
        }
        on_update(
            update(
                serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "t1",
                "title": "Edit calc.py", "kind": "edit"}),
            ),
            &mut lines,
            &cost,
            &tx,
        );
        on_update(
            update(
                serde_json::json!({"sessionUpdate": "usage_update", "used": 10, "size": 100,
                "cost": {"amount": 0.25, "currency": "USD"}}),
            ),
            &mut lines,
            &cost,
            &tx,
        );
        lines.flush(&tx);
        let mut events = Vec::new();
        while let Ok(e) = rx.try_recv() {
            events.push(e);
        }
        let texts: Vec<&str> = texts(&events);
        // Cut at line breaks only; the unfinished line goes out before the tool call.
        assert_eq!(
            texts,
            [
                "---RALPH_STATUS---",
                "STATUS: COMPLETE",
                "EXIT_SIGNAL: true"
            ]
        );
        assert!(events.iter().any(
            |e| matches!(e, AgentEvent::Tool { name, detail } if name == "edit" && detail == "Edit calc.py")
        ));
        assert_eq!(*cost.lock().unwrap(), Some(0.25));
    }

    #[test]
    fn a_permission_is_granted_once_before_always_and_refused_without_an_allow() {
        let request = |options: serde_json::Value| -> RequestPermissionRequest {
            serde_json::from_value(serde_json::json!({"sessionId": "s",
                "toolCall": {"toolCallId": "t1"}, "options": options}))
            .expect("a request")
        };
        let both = request(serde_json::json!([
            {"optionId": "always", "name": "Always", "kind": "allow_always"},
            {"optionId": "once", "name": "Once", "kind": "allow_once"},
            {"optionId": "no", "name": "No", "kind": "reject_once"}]));
        let picked = serde_json::to_value(grant(&both)).unwrap();
        assert_eq!(picked["outcome"]["optionId"], "once", "{picked}");
        let none = request(serde_json::json!([
            {"optionId": "no", "name": "No", "kind": "reject_once"}]));
        let refused = serde_json::to_value(grant(&none)).unwrap();
        assert_eq!(refused["outcome"]["outcome"], "cancelled", "{refused}");
    }
}
