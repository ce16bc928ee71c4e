//! A scripted coding agent for the tests and the agents benchmark: a shell script that prints
//! Claude Code's stream-JSON, run under ralph-loop's reaper. (Its lines are printed with
//! `printf '%s\n'`, not `echo`: dash's `echo` turns the JSON's `\n` into line breaks.)

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ralph_loop::agents::definition::{AgentDef, Auth, ModelSource, PromptVia};
use ralph_loop::agents::invoke::{Invocation, Limits};
use ralph_loop::agents::output::Format;

/// The agent `body` (a shell script written to `dir/agent.sh`), its prompt on stdin, run in
/// `dir` with `limits`.
pub fn scripted(dir: &Path, body: &str, limits: Limits) -> Invocation {
    let path = dir.join("agent.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Invocation {
        def: AgentDef {
            name: "scripted".into(),
            title: "Scripted".into(),
            binaries: vec!["agent.sh".into()],
            auth: Auth::default(),
            models: ModelSource::None,
            args: Vec::new(),
            prompt: PromptVia::Stdin,
            format: Format::ClaudeStreamJson,
            reports_cost: true,
            gateway: None,
        },
        binary: path,
        prompt: "Fix the median.\n".into(),
        model: None,
        cwd: dir.to_path_buf(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        limits,
        reaper: Some(env!("CARGO_BIN_EXE_ralph-loop").into()),
        on_busy: None,
    }
}
