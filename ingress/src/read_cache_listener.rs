//! Keeps the [`ReadCache`] honest: listens on the Postgres channel on which every committed
//! change of the invocation history names its tenant, and marks the cache untrusted whenever the
//! listening connection is down.

use std::sync::Arc;

use service::shutdown::CancellationToken;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use uuid::Uuid;

use crate::read_cache::ReadCache;
use crate::reconnecting;

/// Runs until `stop`: connect, LISTEN, apply notifications; after any session mark the cache
/// untrusted and reconnect with backoff.
pub(crate) async fn run(pool: PgPool, cache: Arc<ReadCache>, stop: CancellationToken) {
    let session = || listen(&pool, &cache);
    reconnecting::run("read cache", stop, session, || cache.set_listening(false)).await;
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
