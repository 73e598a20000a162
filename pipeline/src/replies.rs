//! Replies published to the waiting ingress over Redis pub/sub, on the command's channel
//! (`topics::reply`). Best effort: the inbox holds the durable copy, and a waiter that missed
//! the message reads it there.

use serde::Serialize;
use topics::Reply;
use uuid::Uuid;

/// Publishes replies.
#[derive(Clone)]
pub struct Replies {
    connection: redis::aio::ConnectionManager,
}

impl std::fmt::Debug for Replies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replies").finish_non_exhaustive()
    }
}

impl Replies {
    pub fn new(connection: redis::aio::ConnectionManager) -> Self {
        Self { connection }
    }

    /// Publishes `reply`; a failure is logged, never returned (what it says is already durable).
    pub(crate) async fn publish<A: Serialize>(&self, command_id: Uuid, reply: &Reply<A>) {
        let Ok(payload) = serde_json::to_string(reply) else {
            return;
        };
        let mut connection = self.connection.clone();
        let published: Result<i64, _> = redis::cmd("PUBLISH")
            .arg(topics::reply::channel(command_id))
            .arg(payload)
            .query_async(&mut connection)
            .await;
        if let Err(error) = published {
            tracing::warn!(%command_id, %error, "reply not published");
        }
    }
}
