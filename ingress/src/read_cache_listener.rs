//! Keeps the [`ReadCache`] honest: listens on the Postgres channel on which every committed
//! change of the invocation history names its tenant, and marks the cache untrusted whenever the
//! listening connection is down.

use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use service::shutdown::CancellationToken;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use uuid::Uuid;

use crate::read_cache::ReadCache;

/// Runs until `stop`: connect, LISTEN, apply notifications; on any failure mark the cache
/// untrusted and reconnect with backoff.
pub(crate) async fn run(pool: PgPool, cache: Arc<ReadCache>, stop: CancellationToken) {
    let mut backoff = reconnect_backoff();
    loop {
        let session = tokio::select! {
            () = stop.cancelled() => return,
            session = listen(&pool, &cache) => session,
        };
        cache.set_listening(false);
        match session {
            Ok(()) => {
                tracing::warn!("read cache listener lost its connection; reconnecting");
                backoff = reconnect_backoff();
            }
            Err(error) => tracing::warn!(%error, "read cache listener failed; reconnecting"),
        }
        let pause = backoff.next().unwrap_or(Duration::from_secs(5));
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

fn reconnect_backoff() -> impl Iterator<Item = Duration> {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(5))
        .with_jitter()
        .without_max_times()
        .build()
}

/// One listening session: returns `Ok` when the connection was lost, `Err` when it failed.
async fn listen(pool: &PgPool, cache: &ReadCache) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener
        .listen(readers::invocations::CHANGED_CHANNEL)
        .await?;
    cache.set_listening(true);
    tracing::debug!("read cache listener connected");
    while let Some(notification) = listener.try_recv().await? {
        apply(cache, notification.payload());
    }
    Ok(())
}

fn apply(cache: &ReadCache, payload: &str) {
    match Uuid::try_parse(payload) {
        Ok(tenant) => cache.tenant_changed(tenant),
        // `*` (a TRUNCATE) or anything unexpected: be safe.
        Err(_) => cache.everything_changed(),
    }
}
