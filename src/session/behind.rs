//! [`WriteBehind`]: a run's session store, whose writes go to the disk behind the run, in the
//! order they were made, on a thread of their own, so that no step waits for an fsync.
//!
//! The disk is for recovery (`ports::store`): nothing in a run reads back what it wrote, except
//! a checkpoint or a results file, and those reads wait for the writes before them. Order is
//! kept, so after a kill the folder holds the files as of some moment of the run: never a
//! later file without an earlier one (a state without the results it names, a log line without
//! its checkpoint), and a resume goes on from there. The report is written last and waits for
//! every write before it, so a finished run is wholly on disk when `execute` returns; a write
//! that failed fails the next call to the store, as the write itself would have.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use futures::executor::block_on;
use ralph_actors::ports::file_io::FromFileIo;
use ralph_actors::ports::store::{SessionStore, StoreError};
use ralph_actors::schema::report::Report;
use ralph_actors::schema::state::{IterationRecord, SessionState};
use ralph_actors::schema::test_run::TestRun;

use super::SessionDir;

type Job = Box<dyn FnOnce(&SessionDir) -> Result<(), StoreError> + Send>;

/// How far the writer has got.
#[derive(Default)]
struct Progress {
    queued: u64,
    done: u64,
    /// The first write that failed; every later call to the store returns it.
    failed: Option<StoreError>,
}

/// The writer's side shared with its thread: its progress, and a condition the writer signals
/// after each write.
type Shared = Arc<(Mutex<Progress>, Condvar)>;

pub struct WriteBehind {
    dir: SessionDir,
    jobs: Mutex<Option<Sender<Job>>>,
    shared: Shared,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl WriteBehind {
    /// A store over `dir` and its writer thread.
    pub fn new(dir: SessionDir) -> std::io::Result<Self> {
        let (tx, rx) = channel::<Job>();
        let shared: Shared = Arc::default();
        let (writer_dir, writer_shared) = (dir.clone(), shared.clone());
        let thread = std::thread::Builder::new()
            .name("session-writer".into())
            .spawn(move || {
                for job in rx {
                    let result = job(&writer_dir);
                    let (lock, written) = &*writer_shared;
                    let mut progress = lock.lock().unwrap_or_else(|e| e.into_inner());
                    progress.done += 1;
                    if let Err(e) = result {
                        progress.failed.get_or_insert(e);
                    }
                    written.notify_all();
                }
            })?;
        Ok(Self {
            dir,
            jobs: Mutex::new(Some(tx)),
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues `job`, unless an earlier write failed.
    fn queue(&self, job: Job) -> Result<(), StoreError> {
        let (lock, _) = &*self.shared;
        let mut progress = lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = &progress.failed {
            return Err(e.clone());
        }
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        match jobs.as_ref().map(|tx| tx.send(job)) {
            Some(Ok(())) => {
                progress.queued += 1;
                Ok(())
            }
            // The thread is gone (it panicked): nothing can be written from now on.
            _ => Err(StoreError::write(
                self.dir.dir.display().to_string(),
                std::io::Error::other("the session's writer stopped"),
            )),
        }
    }

    /// Waits until every write queued so far is on disk; the first that failed, if any.
    pub fn flush(&self) -> Result<(), StoreError> {
        let (lock, written) = &*self.shared;
        let mut progress = lock.lock().unwrap_or_else(|e| e.into_inner());
        let alive = self
            .thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|t| !t.is_finished());
        while alive && progress.done < progress.queued && progress.failed.is_none() {
            progress = written.wait(progress).unwrap_or_else(|e| e.into_inner());
        }
        match &progress.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

impl Drop for WriteBehind {
    /// Whatever ended the run, what it queued reaches the disk before the store goes.
    fn drop(&mut self) {
        let _ = self.flush();
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for WriteBehind {
    async fn last_test_results(&self) -> Result<Option<TestRun>, StoreError> {
        self.flush()?;
        self.dir.last_test_results().await
    }

    async fn save_test_results(&self, iteration: u32, run: &TestRun) -> Result<(), StoreError> {
        let run = run.clone();
        self.queue(Box::new(move |dir| {
            block_on(dir.save_test_results(iteration, &run))
        }))
    }

    async fn save_adversarial_results(
        &self,
        iteration: u32,
        round: u32,
        run: &TestRun,
    ) -> Result<(), StoreError> {
        let run = run.clone();
        self.queue(Box::new(move |dir| {
            block_on(dir.save_adversarial_results(iteration, round, &run))
        }))
    }

    async fn save_mutation_report(
        &self,
        document: &serde_json::Value,
    ) -> Result<String, StoreError> {
        self.flush()?;
        self.dir.save_mutation_report(document).await
    }

    async fn append_iteration(&self, record: &IterationRecord) -> Result<(), StoreError> {
        let record = record.clone();
        self.queue(Box::new(move |dir| block_on(dir.append_iteration(&record))))
    }

    async fn save_state(&self, state: &SessionState) -> Result<(), StoreError> {
        let state = state.clone();
        self.queue(Box::new(move |dir| block_on(dir.save_state(&state))))
    }

    async fn save_report(&self, report: &Report) -> Result<(), StoreError> {
        self.flush()?;
        self.dir.save_report(report).await
    }

    async fn test_results(&self, iteration: u32) -> Result<Option<TestRun>, StoreError> {
        self.flush()?;
        self.dir.test_results(iteration).await
    }

    async fn save_checkpoint(&self, iteration: u32, content: &str) -> Result<(), StoreError> {
        let content = content.to_string();
        self.queue(Box::new(move |dir| {
            block_on(dir.save_checkpoint(iteration, &content))
        }))
    }

    async fn load_checkpoint(&self, iteration: u32) -> Result<Option<String>, StoreError> {
        self.flush()?;
        self.dir.load_checkpoint(iteration).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_in(dir: std::path::PathBuf) -> WriteBehind {
        WriteBehind::new(SessionDir {
            id: "test".into(),
            dir,
        })
        .unwrap()
    }

    #[test]
    fn writes_reach_the_disk_in_order_and_a_read_waits_for_them() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path().to_path_buf());
        block_on(async {
            for i in 0..50 {
                store.save_checkpoint(1, &format!("v{i}")).await.unwrap();
            }
            // The read comes after 50 queued writes of the same file: it sees the last.
            assert_eq!(
                store.load_checkpoint(1).await.unwrap().as_deref(),
                Some("v49")
            );
        });
    }

    #[test]
    fn a_failed_write_fails_the_next_call_to_the_store() {
        let tmp = tempfile::tempdir().unwrap();
        // A session folder that is a file: nothing can be written under it.
        let file = tmp.path().join("not-a-folder");
        std::fs::write(&file, "").unwrap();
        let store = store_in(file);
        block_on(store.save_checkpoint(1, "queued")).unwrap();
        assert!(store.flush().is_err());
        assert!(block_on(store.save_checkpoint(2, "refused")).is_err());
        assert!(block_on(store.load_checkpoint(1)).is_err());
    }

    #[test]
    fn dropping_the_store_writes_everything_it_queued() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path().to_path_buf());
        for i in 0..20 {
            block_on(store.save_checkpoint(i, &format!("c{i}"))).unwrap();
        }
        drop(store);
        let dir = SessionDir {
            id: "test".into(),
            dir: tmp.path().to_path_buf(),
        };
        for i in 0..20 {
            let saved = block_on(dir.load_checkpoint(i)).unwrap();
            assert_eq!(saved.as_deref(), Some(format!("c{i}").as_str()));
        }
    }
}
