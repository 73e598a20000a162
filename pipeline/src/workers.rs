//! What the pipeline runs, and in what state: each long-running worker (a stage's consumer, the
//! outbox relay) registers under the task queue it serves and reports its state, which
//! `GET /healthz` shows (SPEC §4.14).

use std::sync::{Arc, Mutex};

use serde::Serialize;

/// A worker's state, as `/healthz` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum WorkerState {
    /// Registered, not yet working.
    Starting,
    /// Doing its work.
    Running,
    /// Its last attempt failed; it is retrying (a dependency is down).
    Retrying,
    /// Stopped for good (shutdown, or a fatal failure).
    Stopped,
}

/// One worker as `/healthz` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkerEntry {
    pub(crate) task_queue: &'static str,
    pub(crate) state: WorkerState,
}

/// Every worker of the process.
#[derive(Debug, Clone, Default)]
pub(crate) struct Workers(Arc<Mutex<Vec<WorkerEntry>>>);

/// A worker's way to report its state.
#[derive(Debug, Clone)]
pub(crate) struct Worker {
    workers: Workers,
    index: usize,
}

impl Workers {
    /// Registers the worker serving `task_queue`, in state `Starting`.
    pub(crate) fn register(&self, task_queue: &'static str) -> Worker {
        let mut entries = self.lock();
        entries.push(WorkerEntry {
            task_queue,
            state: WorkerState::Starting,
        });
        Worker {
            workers: self.clone(),
            index: entries.len() - 1,
        }
    }

    /// Every worker and its state, in registration order.
    pub(crate) fn entries(&self) -> Vec<WorkerEntry> {
        self.lock().clone()
    }

    /// Whether every worker is running.
    pub(crate) fn all_running(&self) -> bool {
        self.lock().iter().all(|w| w.state == WorkerState::Running)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<WorkerEntry>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Worker {
    pub(crate) fn set(&self, state: WorkerState) {
        if let Some(entry) = self.workers.lock().get_mut(self.index) {
            entry.state = state;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_must_run_for_all_to_run() {
        let workers = Workers::default();
        let relay = workers.register("outbox");
        let stage = workers.register("apps.commands");
        assert!(!workers.all_running(), "starting is not running");
        relay.set(WorkerState::Running);
        stage.set(WorkerState::Running);
        assert!(workers.all_running());
        stage.set(WorkerState::Retrying);
        assert!(!workers.all_running());
        let shown = serde_json::to_value(workers.entries()).expect("serialises");
        assert_eq!(
            shown,
            serde_json::json!([
                {"taskQueue": "outbox", "state": "RUNNING"},
                {"taskQueue": "apps.commands", "state": "RETRYING"}
            ])
        );
    }
}
