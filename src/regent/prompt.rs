//! The prompt of one iteration, built afresh from disk: the user's prompt file, the task list
//! with its state, the last test results, what the Regent has to tell the agent (a crash, a
//! disagreement with the tests), and the request for a RALPH_STATUS block at the end.

use std::fmt::Write;

use ralph_actors::prompt::results::view;
use ralph_actors::schema::test_run::TestRun;

use super::tasks::TaskList;

/// The most bytes of test results a prompt carries.
const RESULTS_BYTES: usize = 12 * 1024;

/// What an iteration's prompt is made of.
#[derive(Debug, Default)]
pub struct PromptParts<'a> {
    pub iteration: u32,
    /// The prompt file's text.
    pub prompt: &'a str,
    /// The task list's path as the agent sees it, its text, and its tasks.
    pub tasks: Option<(&'a str, &'a str, &'a TaskList)>,
    pub tests: Option<&'a TestRun>,
    /// No test ran (none found yet): why, for the agent.
    pub tests_skipped: Option<&'a str>,
    pub notes: &'a [String],
}

/// The block every reply must end with; the tracker reads it back.
pub const STATUS_REQUEST: &str = "\
At the very end of your reply, print this block, each field filled in (one value each):

---RALPH_STATUS---
STATUS: IN_PROGRESS | COMPLETE | BLOCKED
TASKS_COMPLETED_THIS_LOOP: <number>
FILES_MODIFIED: <number>
TESTS_STATUS: PASSING | FAILING | NOT_RUN
WORK_TYPE: IMPLEMENTATION | TESTING | DOCUMENTATION | REFACTORING
EXIT_SIGNAL: false | true
RECOMMENDATION: <one line: what should happen next>
---END_RALPH_STATUS---

Set EXIT_SIGNAL: true only when all the work is done and the tests pass. ralph-loop runs the \
tests itself after your turn and checks what you say against them.
";

pub fn build(parts: &PromptParts<'_>) -> String {
    let mut out = String::with_capacity(parts.prompt.len() + 4096);
    out.push_str(parts.prompt.trim_end());
    let _ = write!(
        out,
        "\n\n---\n\n# ralph-loop, iteration {}\n\nYou work in a fresh session: what earlier iterations did is in the files and in git, not in this conversation.\n",
        parts.iteration
    );
    if let Some((path, text, list)) = parts.tasks {
        let _ = write!(
            out,
            "\n## Task list ({path}: {} of {} done)\n\n",
            list.done(),
            list.total()
        );
        if text.trim().is_empty() {
            out.push_str("(empty)\n");
        } else {
            out.push_str(text.trim_end());
            out.push('\n');
        }
        match list.next() {
            Some(task) => {
                let _ = write!(
                    out,
                    "\nWork on the next task not done: {}. When it is done and its tests pass, check it off in {path} (`- [x]`).\n",
                    task.label()
                );
            }
            None if list.total() > 0 => out.push_str("\nEvery task is checked off.\n"),
            None => {}
        }
    }
    out.push_str("\n## Last test results\n\n");
    match (parts.tests, parts.tests_skipped) {
        (Some(run), _) => render_tests(run, &mut out),
        (None, Some(why)) => {
            let _ = writeln!(out, "No tests ran: {why}");
        }
        (None, None) => out.push_str("No tests ran yet.\n"),
    }
    if !parts.notes.is_empty() {
        out.push_str("\n## From ralph-loop\n\n");
        for note in parts.notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out.push_str("\n## Your status\n\n");
    out.push_str(STATUS_REQUEST);
    out
}

fn render_tests(run: &TestRun, out: &mut String) {
    let shown = view(run, RESULTS_BYTES, &[]);
    let _ = writeln!(out, "`{}`: {}", run.command, shown.summary);
    for failure in &shown.failures {
        let _ = write!(out, "\n### {}", failure.id);
        if let Some(location) = &failure.location {
            let _ = write!(out, " ({location})");
        }
        out.push('\n');
        if let Some(message) = &failure.message {
            let _ = writeln!(out, "{message}");
        }
        if let Some(stack) = &failure.stack {
            let _ = writeln!(out, "```\n{stack}\n```");
        }
    }
    if shown.omitted > 0 {
        let _ = writeln!(out, "\n({} more failing tests not shown)", shown.omitted);
    }
    if shown.failures.is_empty() && !run.passed() && !shown.output.is_empty() {
        let _ = writeln!(out, "\nThe end of its output:\n```\n{}\n```", shown.output);
    }
}

#[cfg(test)]
mod tests {
    use ralph_actors::schema::test_run::{CaseStatus, RunStatus, TestCase};

    use super::*;

    #[test]
    fn holds_the_prompt_tasks_failures_notes_and_the_status_request() {
        let list = TaskList::parse("- [x] T-1: one\n- [ ] T-2: two\n");
        let mut run = TestRun::new("npm test", RunStatus::Failed);
        run.tests.push(TestCase {
            id: "median > even".into(),
            status: CaseStatus::Fail,
            message: Some("expected 2.5, got 2".into()),
            ..TestCase::default()
        });
        run.totals.failed = 1;
        let notes = vec!["You said EXIT_SIGNAL: true, but 1 test fails.".to_string()];
        let text = build(&PromptParts {
            iteration: 3,
            prompt: "Build the median module.\n",
            tasks: Some(("TASKS.md", "- [x] T-1: one\n- [ ] T-2: two\n", &list)),
            tests: Some(&run),
            tests_skipped: None,
            notes: &notes,
        });
        assert!(
            text.starts_with("Build the median module.\n\n---"),
            "{text}"
        );
        for part in [
            "iteration 3",
            "## Task list (TASKS.md: 1 of 2 done)",
            "Work on the next task not done: T-2: two.",
            "`npm test`:",
            "### median > even",
            "expected 2.5, got 2",
            "- You said EXIT_SIGNAL: true, but 1 test fails.",
            "---RALPH_STATUS---",
            "---END_RALPH_STATUS---",
        ] {
            assert!(text.contains(part), "{part} missing from:\n{text}");
        }
    }
}
