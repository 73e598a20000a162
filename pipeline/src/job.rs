//! Background work outside the stage contract. A stage applies the commands of its topic; a
//! job works on its own clock (a sweep, a relay, a schedule): built from its options as one
//! value, then [`Job::run`] until the worker stops. `serve` starts each with [`spawn`].

use std::future::Future;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub(crate) trait Job: Send + 'static {
    /// Works until `stop` is cancelled, then returns once what it holds is given back.
    fn run(self, stop: CancellationToken) -> impl Future<Output = ()> + Send + 'static;
}

/// A job this worker may not run (it lacks what the job needs): none, at once.
impl<J: Job> Job for Option<J> {
    async fn run(self, stop: CancellationToken) {
        if let Some(job) = self {
            job.run(stop).await;
        }
    }
}

/// Starts `job` on a task of its own.
pub(crate) fn spawn<J: Job>(job: J, stop: &CancellationToken) -> JoinHandle<()> {
    tokio::spawn(job.run(stop.clone()))
}
