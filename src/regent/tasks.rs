//! The loop's task list (`--tasks TASKS.md`): Markdown checkboxes, read afresh from disk each
//! iteration. The agent checks tasks off itself; the loop only reads which were checked
//! during an iteration (progress, measured) and names the next one in the prompt and the
//! commit.
//!
//! ```markdown
//! - [x] INIT-001: Initialize project structure
//! - [ ] API-002: Add the endpoints
//!   > Tests: Not required
//! ```
//!
//! A task's id is the word before its first colon (`API-002`); a task without one is known by
//! its text.

use std::collections::BTreeSet;

/// One checkbox of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// `API-002`, or `None` when the line has no id.
    pub id: Option<String>,
    /// The text after the id (the whole text without one).
    pub name: String,
    pub done: bool,
    /// The indented lines under it (`> Goal: ...`, `> Tests: Not required`).
    pub notes: Vec<String>,
}

impl Task {
    /// What the task is known by across iterations: its id, else its text.
    pub fn key(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.name)
    }

    /// Whether the task says its tests are not required (the seed's markers, any case:
    /// `Tests: Not required`, `Tests: None`, `Tests: N/A`, `Tests: Skip`, `No tests needed`,
    /// `No tests required`), in its text or the lines under it.
    pub fn tests_required(&self) -> bool {
        !std::iter::once(self.name.as_str())
            .chain(self.notes.iter().map(String::as_str))
            .any(says_no_tests)
    }

    /// `API-002: Add the endpoints`, or the text.
    pub fn label(&self) -> String {
        match &self.id {
            Some(id) => format!("{id}: {}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The tasks the task hooks have seen ([`super::around`]).
#[derive(Debug, Default)]
pub struct AroundTasks {
    /// The task whose `pre_task` ran and which has not ended, with the iteration and the total
    /// cost when it began.
    pub(super) current: Option<(Task, u32, f64)>,
    /// Tasks a `pre_task` hook skipped, by key.
    pub(super) skipped: BTreeSet<String>,
}

/// The tasks of a list, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskList {
    pub tasks: Vec<Task>,
}

impl TaskList {
    pub fn parse(text: &str) -> TaskList {
        let mut tasks: Vec<Task> = Vec::new();
        for line in text.lines() {
            if let Some(task) = checkbox(line) {
                tasks.push(task);
            } else if line.starts_with([' ', '\t']) && !line.trim().is_empty() {
                // An indented line belongs to the task above it.
                if let Some(last) = tasks.last_mut() {
                    let note = line.trim().trim_start_matches('>').trim();
                    last.notes.push(note.to_string());
                }
            } else if !line.trim().is_empty() {
                // Anything else at the margin ends the task above it (a heading, a paragraph).
                if let Some(last) = tasks.last_mut() {
                    last.notes.push(String::new());
                }
            }
        }
        for task in &mut tasks {
            // A blank note marks where the task ended; what follows is not its.
            if let Some(end) = task.notes.iter().position(String::is_empty) {
                task.notes.truncate(end);
            }
        }
        TaskList { tasks }
    }

    pub fn done(&self) -> u32 {
        self.tasks.iter().filter(|t| t.done).count() as u32
    }

    pub fn total(&self) -> u32 {
        self.tasks.len() as u32
    }

    /// The first task not done.
    pub fn next(&self) -> Option<&Task> {
        self.tasks.iter().find(|t| !t.done)
    }

    /// The tasks done here and not in `before` (absent or unchecked there).
    pub fn checked_since<'a>(&'a self, before: &TaskList) -> Vec<&'a Task> {
        self.tasks
            .iter()
            .filter(|t| t.done)
            .filter(|t| !before.tasks.iter().any(|b| b.done && b.key() == t.key()))
            .collect()
    }
}

/// `- [ ] text`, `* [x] text`, `1. [X] text`: the task, else `None`.
fn checkbox(line: &str) -> Option<Task> {
    let rest = line.trim_start();
    let rest = rest
        .strip_prefix("- ")
        .or_else(|| rest.strip_prefix("* "))
        .or_else(|| rest.strip_prefix("+ "))
        .or_else(|| {
            let digits = rest.find(|c: char| !c.is_ascii_digit())?;
            (digits > 0)
                .then(|| rest[digits..].strip_prefix(". "))
                .flatten()
        })?
        .trim_start();
    let done = match rest.get(..3)? {
        "[ ]" => false,
        "[x]" | "[X]" => true,
        _ => return None,
    };
    let text = rest[3..].trim();
    if text.is_empty() {
        return None;
    }
    let (id, name) = match text.split_once(':') {
        Some((id, name)) if is_id(id) => (Some(id.to_string()), name.trim().to_string()),
        _ => (None, text.to_string()),
    };
    Some(Task {
        id,
        name,
        done,
        notes: Vec::new(),
    })
}

/// One of the seed's markers of a task that needs no tests.
fn says_no_tests(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let t = t.trim();
    if t.contains("no tests needed") || t.contains("no tests required") {
        return true;
    }
    t.split_once("tests:").is_some_and(|(_, rest)| {
        let rest = rest.trim_start();
        ["not required", "none", "n/a", "skip"]
            .iter()
            .any(|m| rest.starts_with(m))
    })
}

/// A word of letters, digits, `-`, `_` or `.` with at least one digit or `-` (`T-1`,
/// `INIT-001`, `1.2`): not a phrase before a colon ("Note: ...").
fn is_id(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 40
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && word.chars().any(|c| c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_checkboxes_ids_and_states() {
        let list = TaskList::parse(
            "# Tasks\n- [x] INIT-001: Set up\n- [ ] API-002: Add endpoints\n  > Tests: Not required\n* [X] Write the docs\n1. [ ] T-4: Last\n- [] not a box\n- plain item\nNote: [x] no\n",
        );
        let labels: Vec<(String, bool)> = list.tasks.iter().map(|t| (t.label(), t.done)).collect();
        assert_eq!(
            labels,
            [
                ("INIT-001: Set up".to_string(), true),
                ("API-002: Add endpoints".to_string(), false),
                ("Write the docs".to_string(), true),
                ("T-4: Last".to_string(), false),
            ]
        );
        assert_eq!((list.done(), list.total()), (2, 4));
        assert_eq!(list.next().map(Task::key), Some("API-002"));
        // The lines under a task are its notes; its test marker is read from them.
        assert_eq!(list.tasks[1].notes, ["Tests: Not required"]);
        assert!(!list.tasks[1].tests_required());
        assert!(list.tasks[0].tests_required());
        for marker in [
            "Tests: None",
            "tests: n/a",
            "TESTS: Skip (setup)",
            "No tests needed",
        ] {
            let one = TaskList::parse(&format!("- [ ] T-1: x\n  > {marker}\n"));
            assert!(!one.tasks[0].tests_required(), "{marker}");
        }
        let inline = TaskList::parse("- [ ] T-1: Add deps (no tests required)\n");
        assert!(!inline.tasks[0].tests_required());
        let other = TaskList::parse("- [ ] T-1: x\nA paragraph.\n  > Tests: None\n");
        assert!(
            other.tasks[0].tests_required(),
            "a note after a paragraph is not the task's"
        );
        // A phrase before a colon is not an id.
        let note = TaskList::parse("- [ ] Note: read this");
        assert_eq!(note.tasks[0].id, None);
    }

    #[test]
    fn tasks_checked_since_are_the_newly_done_ones() {
        let before = TaskList::parse("- [x] A-1: one\n- [ ] A-2: two\n- [ ] three\n");
        let after = TaskList::parse(
            "- [x] A-1: one\n- [x] A-2: two, renamed\n- [x] three\n- [x] A-4: added done\n",
        );
        let keys: Vec<&str> = after
            .checked_since(&before)
            .iter()
            .map(|t| t.key())
            .collect();
        assert_eq!(keys, ["A-2", "three", "A-4"]);
        assert!(before.checked_since(&before).is_empty());
    }
}
