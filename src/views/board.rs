//! The task list of a batch or an agent ([`Board`]), as the run reports its tasks through a
//! [`Tasks`] handle: each task's name, how it stands (the seed's marks), a few words and its
//! cost, and the total budget over them. A task is known by its key, the name of its folder
//! (`entry-3`, an inbox record's `q-a1b2`), which also tags its sessions' events.

use tokio::sync::mpsc;

use crate::views::state::Mark;

/// One task as the list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskLine {
    pub key: String,
    pub name: String,
    pub mark: Mark,
    /// How it ended or why it waits, in a few words (empty while it runs).
    pub detail: String,
    pub cost_usd: f64,
}

/// What the run says of its tasks.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskNews {
    /// A task, new or changed.
    Task(TaskLine),
    /// The total budget over every task.
    Cap(f64),
}

/// The task list: every task the run has named, in the order it named them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Board {
    pub tasks: Vec<TaskLine>,
    pub cap: Option<f64>,
}

impl Board {
    pub fn apply(&mut self, news: TaskNews) {
        match news {
            TaskNews::Cap(cap) => self.cap = Some(cap),
            TaskNews::Task(line) => match self.tasks.iter_mut().find(|t| t.key == line.key) {
                Some(known) => *known = line,
                None => self.tasks.push(line),
            },
        }
    }

    /// Tasks done (ended well) and in all.
    pub fn done(&self) -> (usize, usize) {
        let done = self.tasks.iter().filter(|t| t.mark == Mark::Done).count();
        (done, self.tasks.len())
    }

    pub fn spent(&self) -> f64 {
        self.tasks.iter().map(|t| t.cost_usd).sum()
    }

    /// The index of the task started last that is still running.
    pub fn running(&self) -> Option<usize> {
        self.tasks.iter().rposition(|t| t.mark == Mark::Running)
    }
}

/// How a batch or agent reports its tasks to the view; cheap to clone. Reports to a view that
/// has gone are dropped.
#[derive(Debug, Clone)]
pub struct Tasks(mpsc::UnboundedSender<TaskNews>);

impl Tasks {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<TaskNews>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self(tx), rx)
    }

    /// Task `key` (named `name`) stands at `mark`, with `detail` and its cost so far.
    pub fn task(&self, key: &str, name: &str, mark: Mark, detail: impl Into<String>, cost: f64) {
        let _ = self.0.send(TaskNews::Task(TaskLine {
            key: key.to_string(),
            name: name.to_string(),
            mark,
            detail: detail.into(),
            cost_usd: cost,
        }));
    }

    pub fn cap(&self, cap: f64) {
        let _ = self.0.send(TaskNews::Cap(cap));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_reported_again_changes_in_place_and_the_totals_follow() {
        let (tasks, mut rx) = Tasks::new();
        let mut board = Board::default();
        tasks.cap(1.0);
        tasks.task("entry-1", "a.py", Mark::Running, "", 0.0);
        tasks.task("entry-2", "b.py", Mark::Pending, "", 0.0);
        tasks.task("entry-1", "a.py", Mark::Done, "success", 0.25);
        tasks.task("entry-2", "b.py", Mark::Running, "", 0.1);
        while let Ok(news) = rx.try_recv() {
            board.apply(news);
        }
        assert_eq!(board.cap, Some(1.0));
        assert_eq!(board.tasks.len(), 2);
        assert_eq!(board.done(), (1, 2));
        assert!((board.spent() - 0.35).abs() < 1e-12);
        assert_eq!(board.running(), Some(1));
    }
}
