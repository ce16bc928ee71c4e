//! The plugin protocol, version [`PROTOCOL_VERSION`]: one JSON [`Request`] on the plugin's
//! stdin, one JSON [`Response`] on its stdout. Shell hooks get the same request on stdin and
//! answer by exit code alone. [`schema`] gives both as one JSON Schema generated from these
//! types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::hooks::Stage;

/// The protocol's version: a request says which it is; a response must say the same.
pub const PROTOCOL_VERSION: u32 = 1;

/// What a hook is told at a stage.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    pub protocol: u32,
    pub stage: Stage,
    /// The hook's name, as the config gives it.
    pub hook: String,
    pub session_id: String,
    /// The iteration under way (0 before the first).
    pub iteration: u32,
    /// The project's root, absolute: the hook runs there.
    pub project_dir: String,
    /// The file the run fixes, relative to `project_dir`.
    pub target: String,
    /// `typescript`, `javascript`, `python`, `rust`, when known.
    pub language: Option<String>,
    /// At `on_after_gen` the Artisan's proposal; elsewhere the target as it is on disk.
    pub code: Option<String>,
    /// The last test run, when there was one.
    pub tests: Option<Tests>,
    pub budget: Budget,
    /// The plugin's `config` from `ralph-plugins.yaml` (`null` for a hook of `hooks:`).
    pub config: serde_json::Value,
    /// At `pre_task` and `post_task`: the task.
    #[serde(default)]
    pub task: Option<Task>,
}

/// A task: an entry of a batch (a spec, or a file as a spec of one target), a spec of the
/// agent's inbox, or a checkbox of a `loop`'s task list.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    /// Its number in the batch, from 1; the spec's inbox id (`q-…`); the loop task's id
    /// (`API-002`), else its text.
    pub id: String,
    /// The spec's path, or the file's, relative to the project; the loop task's text.
    pub name: String,
    /// `spec`, `file` or `task` (a loop's).
    pub kind: String,
    /// What it asks: a spec's first line, a loop task's text and the lines under it; empty for
    /// a file.
    #[serde(default)]
    pub description: String,
    /// The files it fixes, relative to the project.
    pub targets: Vec<String>,
    /// At `post_task`: how it ended (`success`, `max_iterations`, `error`, …; a loop task
    /// checked off: `completed`, else the loop's status when it stopped on the task).
    pub status: Option<String>,
    /// At `post_task`: why it did not succeed, when it did not.
    pub reason: Option<String>,
    pub iterations: u32,
    pub cost_usd: f64,
}

/// A test run, in short.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Tests {
    pub command: String,
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    /// Whether every success criterion (tests, coverage, lint, …) is met.
    pub criteria_met: bool,
    pub summary: String,
    /// The failing tests (at most 20), each with its message.
    pub failures: Vec<Failure>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    pub id: String,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Budget {
    pub spent_usd: f64,
    pub max_cost_usd: f64,
}

/// What a plugin answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Response {
    /// Must be [`PROTOCOL_VERSION`].
    pub protocol: u32,
    pub action: Action,
    /// With `change`: the whole new file (at `on_after_gen`).
    #[serde(default)]
    pub code: Option<String>,
    /// With `veto`: why (they go to the Artisan).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// Anything for the Artisan's next prompt.
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Nothing to change or stop.
    Pass,
    /// Replace the proposal with `code` (`on_after_gen` only).
    Change,
    /// Stop what the stage guards: at `on_before_success` the success (the reasons go to the
    /// Artisan); elsewhere the reasons are notes for the Artisan.
    Veto,
}

/// The protocol as one JSON Schema document: the request and the response.
pub fn schema() -> serde_json::Value {
    serde_json::json!({
        "protocol": PROTOCOL_VERSION,
        "request": schemars::schema_for!(Request),
        "response": schemars::schema_for!(Response),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_describes_both_messages_from_the_types() {
        let schema = schema();
        assert_eq!(schema["protocol"], PROTOCOL_VERSION);
        let request = schema["request"].to_string();
        let fields = [
            "stage",
            "iteration",
            "project_dir",
            "tests",
            "budget",
            "config",
        ];
        assert_names(&request, &fields);
        for stage in Stage::ALL {
            assert!(request.contains(stage.as_str()), "{stage:?}");
        }
        let response = schema["response"].to_string();
        assert_names(&response, &["pass", "change", "veto", "reasons", "notes"]);
    }

    /// Asserts that the JSON text `json` holds each of `names` as a string.
    fn assert_names(json: &str, names: &[&str]) {
        for name in names {
            assert!(json.contains(&format!("\"{name}\"")), "{name}");
        }
    }

    #[test]
    fn a_response_with_an_unknown_field_is_refused() {
        let ok: Response =
            serde_json::from_str(r#"{"protocol":1,"action":"veto","reasons":["x"]}"#).unwrap();
        assert_eq!(ok.action, Action::Veto);
        assert!(
            serde_json::from_str::<Response>(r#"{"protocol":1,"action":"pass","cod":""}"#).is_err()
        );
    }
}
