//! Tells read caches which tenants' invocation history changed, after the change committed.
//!
//! Readers cache answers of `GET /app-invocations` per tenant and drop them when told the
//! tenant changed (`readers::invocations::CHANGED_CHANNEL`, Redis pub/sub). This used to be a
//! `pg_notify` per row, which serialised every committing writer of the table; telling them
//! from here costs the write path nothing: [`HistoryChanges::changed`] only queues the tenant,
//! and one task publishes what queued, each tenant once however many rows it wrote meanwhile.
//!
//! Publishing is best effort with a bound: a failed publish is retried with what queued since,
//! and the caches' time to live covers what a crash between commit and publish leaves untold.
//! A starting pipeline says `*` (anything may have changed) once, so what its predecessor
//! committed without telling is dropped at once wherever the predecessor was restarted.

use std::collections::HashSet;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// What a tenant's change is queued on.
#[derive(Debug, Clone)]
pub(crate) struct HistoryChanges {
    queue: mpsc::UnboundedSender<Uuid>,
}

impl HistoryChanges {
    /// A queue and the task that publishes it until `stop`.
    pub(crate) fn start(
        connection: redis::aio::ConnectionManager,
        stop: CancellationToken,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (queue, queued) = mpsc::unbounded_channel();
        let task = tokio::spawn(publish(connection, queued, stop));
        (Self { queue }, task)
    }

    /// `tenant`'s history changed in a transaction that committed.
    pub(crate) fn changed(&self, tenant: Uuid) {
        // The publisher only stops at shutdown, when nobody reads what it would have said.
        let _ = self.queue.send(tenant);
    }
}

/// Publishes `*` once, then each batch of queued tenants, until `stop`.
async fn publish(
    mut connection: redis::aio::ConnectionManager,
    mut queued: mpsc::UnboundedReceiver<Uuid>,
    stop: CancellationToken,
) {
    let mut everything = true;
    let mut tenants = HashSet::new();
    loop {
        if everything || !tenants.is_empty() {
            match send(&mut connection, everything, &tenants).await {
                Ok(()) => {
                    everything = false;
                    tenants.clear();
                }
                Err(error) => {
                    tracing::warn!(%error, "history changes not published; retrying");
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(Duration::from_millis(500)) => {}
                    }
                }
            }
        }
        // Wait for one change unless some are already due, then take all that queued.
        if !everything && tenants.is_empty() {
            tokio::select! {
                () = stop.cancelled() => return,
                next = queued.recv() => match next {
                    Some(tenant) => { tenants.insert(tenant); }
                    None => return,
                },
            }
        }
        while let Ok(tenant) = queued.try_recv() {
            tenants.insert(tenant);
        }
    }
}

async fn send(
    connection: &mut redis::aio::ConnectionManager,
    everything: bool,
    tenants: &HashSet<Uuid>,
) -> redis::RedisResult<()> {
    let mut pipe = redis::pipe();
    if everything {
        pipe.cmd("PUBLISH")
            .arg(readers::invocations::CHANGED_CHANNEL)
            .arg("*")
            .ignore();
    }
    for tenant in tenants {
        pipe.cmd("PUBLISH")
            .arg(readers::invocations::CHANGED_CHANNEL)
            .arg(tenant.to_string())
            .ignore();
    }
    pipe.query_async::<()>(connection).await?;
    metrics::counter!("pipeline.history_changes.published")
        .increment(tenants.len() as u64 + u64::from(everything));
    Ok(())
}
