//! An `agent` hook's prompt: what its model is told it is, and its `${VAR}`s filled from the
//! stage's request.

use super::protocol::Request;

/// What an `agent` hook's model is told it is. Its reply goes to the Artisan as a note.
pub const AGENT_SYSTEM: &str =
    "You are a hook in ralph-loop's code-fix loop, asked one question at \
one of its stages. Answer briefly and concretely: your answer is passed on, as a note, to the \
engineer who writes the next fix.";

/// `prompt` with each `${VAR}` of [`crate::config::hooks::PROMPT_VARS`] replaced by its value
/// in `request` (empty where there is none).
pub fn fill(prompt: &str, request: &Request) -> String {
    let tests = request.tests.as_ref();
    let value = |name: &str| -> String {
        match name {
            "STAGE" => request.stage.as_str().to_string(),
            "ITERATION" => request.iteration.to_string(),
            "TARGET" => request.target.clone(),
            "LANGUAGE" => request.language.clone().unwrap_or_default(),
            "CODE" => request.code.clone().unwrap_or_default(),
            "TESTS_SUMMARY" => tests.map(|t| t.summary.clone()).unwrap_or_default(),
            "FAILURES" => tests
                .map(|t| {
                    t.failures
                        .iter()
                        .map(|f| format!("- {}: {}", f.id, f.message.as_deref().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default(),
            "PROJECT_DIR" => request.project_dir.clone(),
            "SESSION_ID" => request.session_id.clone(),
            "SPENT_USD" => format!("{:.4}", request.budget.spent_usd),
            "MAX_COST_USD" => format!("{:.4}", request.budget.max_cost_usd),
            _ => String::new(),
        }
    };
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        match rest[at + 2..].split_once('}') {
            Some((name, after)) => {
                out.push_str(&value(name));
                rest = after;
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variable_is_filled_and_an_unclosed_one_is_kept() {
        let request: Request = serde_json::from_value(serde_json::json!({
            "protocol": 1, "stage": "on_test_fail", "hook": "h", "session_id": "s1",
            "iteration": 2, "project_dir": "/p", "target": "median.py", "language": "python",
            "code": "def median(v): ...",
            "tests": {"command": "pytest", "passed": 1, "failed": 1, "skipped": 0,
                      "criteria_met": false, "summary": "1 failed",
                      "failures": [{"id": "t::even", "message": "assert 0 == 2.5"}]},
            "budget": {"spent_usd": 0.125, "max_cost_usd": 1.0}, "config": null
        }))
        .unwrap();
        assert_eq!(
            fill("${STAGE} ${ITERATION} ${TARGET} (${LANGUAGE}) ${TESTS_SUMMARY}\n${FAILURES}\n${SPENT_USD}/${MAX_COST_USD} ${SESSION_ID} ${PROJECT_DIR} ${CODE} ${oops", &request),
            "on_test_fail 2 median.py (python) 1 failed\n- t::even: assert 0 == 2.5\n0.1250/1.0000 s1 /p def median(v): ... ${oops"
        );
    }
}
