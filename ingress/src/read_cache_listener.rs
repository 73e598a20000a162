//! Keeps the [`ReadCache`] honest: subscribes to the Redis channel on which writers of the
//! invocation history name each tenant they changed once committed
//! (`readers::invocations::CHANGED_CHANNEL`), and marks the cache untrusted whenever the
//! subscription is down (messages sent meanwhile are lost to it).

use std::sync::Arc;

use futures::StreamExt;
use service::shutdown::CancellationToken;
use uuid::Uuid;

use crate::read_cache::ReadCache;
use crate::reconnecting;

/// Runs until `stop`: subscribe, apply messages; after any session mark the cache untrusted
/// and resubscribe with backoff.
pub(crate) async fn run(redis: redis::Client, cache: Arc<ReadCache>, stop: CancellationToken) {
    let session = || listen(&redis, &cache);
    reconnecting::run("read cache", stop, session, || cache.set_listening(false)).await;
}

/// One subscription: returns `Ok` when the connection was lost, `Err` when it failed.
async fn listen(redis: &redis::Client, cache: &ReadCache) -> redis::RedisResult<()> {
    let mut pubsub = redis.get_async_pubsub().await?;
    pubsub
        .subscribe(readers::invocations::CHANGED_CHANNEL)
        .await?;
    cache.set_listening(true);
    tracing::debug!("read cache subscription open");
    let mut messages = pubsub.on_message();
    while let Some(message) = messages.next().await {
        apply(cache, &String::from_utf8_lossy(message.get_payload_bytes()));
    }
    Ok(())
}

fn apply(cache: &ReadCache, payload: &str) {
    match Uuid::try_parse(payload) {
        Ok(tenant) => cache.tenant_changed(tenant),
        // `*` (a writer that cannot tell what changed) or anything unexpected: be safe.
        Err(_) => cache.everything_changed(),
    }
}
