//! Vendor events known to be on the log, so that a repeat whose event id the version lets us
//! read is answered `duplicate` without running the module (docs/vendor-webhooks.md: repeats
//! without the module): `webhook-event:<tenant>:<app>:<event id>`, set once a delivery of the
//! event is acknowledged by the log (from there it applies), kept eight days, and removed again
//! if the stage dead-lettered it after all.
//!
//! Redis is only this fast path, never the decision. Which delivery of an event records it is
//! decided by the callbacks stage, the session's one writer: every copy of an event goes to the
//! session's partition, the first one records it and every later one (a copy that raced it, a
//! retry long after) is answered `duplicate` there, against the database's unique
//! `(tenant, app, event id)`. A key missing (Redis away, or it lost the key) only sends a repeat
//! the whole way; a key is never set before the event is durable, so a delivery is never
//! answered `duplicate` for an event that will not be recorded.

use std::time::Duration;

use redis::AsyncCommands;
use redis::aio::ConnectionManager;
use tokio::sync::OnceCell;
use uuid::Uuid;

/// How long a recorded event's key is kept (the longest callback wait, and a day).
const RECORDED_TTL: Duration = Duration::from_secs(8 * 24 * 3600);

const RECORDED: &str = "recorded";

/// The recorded events of every API instance, over a connection opened on first use.
#[derive(Debug)]
pub(crate) struct RecordedEvents {
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
}

impl RecordedEvents {
    pub(crate) fn new(client: redis::Client) -> Self {
        Self {
            client,
            connection: OnceCell::new(),
        }
    }

    async fn connection(&self) -> redis::RedisResult<ConnectionManager> {
        self.connection
            .get_or_try_init(|| service::redis_connection::manager(self.client.clone()))
            .await
            .cloned()
    }

    /// Whether `event_id` of the tenant's `app` is known recorded (an unknown or unreachable
    /// answer is `false`, and the delivery goes the whole way).
    pub(super) async fn contains(&self, tenant: Uuid, app: &str, event_id: &str) -> bool {
        let key = key(tenant, app, event_id);
        let found: redis::RedisResult<Option<String>> = match self.connection().await {
            Ok(mut connection) => connection.get(&key).await,
            Err(error) => Err(error),
        };
        matches!(found, Ok(Some(value)) if value == RECORDED)
    }

    /// Notes that a delivery of `event_id` of the tenant's `app` is on the log.
    pub(super) async fn insert(&self, tenant: Uuid, app: &str, event_id: &str) {
        let key = key(tenant, app, event_id);
        let set: redis::RedisResult<()> = match self.connection().await {
            Ok(mut connection) => {
                connection
                    .set_ex(&key, RECORDED, RECORDED_TTL.as_secs())
                    .await
            }
            Err(error) => Err(error),
        };
        if let Err(error) = set {
            // Only the fast path misses it: a repeat goes the whole way.
            tracing::debug!(%error, "a recorded webhook event not noted in redis");
        }
    }

    /// Forgets `event_id` of the tenant's `app`: it was produced but the stage could not apply
    /// it (dead-lettered), so a retry must not be answered `duplicate`.
    pub(super) async fn remove(&self, tenant: Uuid, app: &str, event_id: &str) {
        let key = key(tenant, app, event_id);
        let removed: redis::RedisResult<()> = match self.connection().await {
            Ok(mut connection) => connection.del(&key).await,
            Err(error) => Err(error),
        };
        if let Err(error) = removed {
            tracing::warn!(%error, "a dead-lettered webhook event not forgotten in redis");
        }
    }
}

fn key(tenant: Uuid, app: &str, event_id: &str) -> String {
    format!("webhook-event:{tenant}:{app}:{event_id}")
}
