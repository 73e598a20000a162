//! Maintenance that repeats until the stop signal: partitions made ahead, health minutes
//! pruned, backtests swept, audit exports scheduled. Each task logs its own failures and is
//! tried again at its next turn.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Runs `task` after `first`, then every `period`, until `stop`.
pub(crate) async fn every<F, Fut>(
    first: Duration,
    period: Duration,
    stop: CancellationToken,
    mut task: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut wait = first;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        task().await;
        wait = period;
    }
}
