//! Outcomes published to the waiting ingress over Redis pub/sub, keyed by command id. Best
//! effort: the inbox holds the durable copy, and a waiter that missed the message reads it there.

use serde_json::Value;
use uuid::Uuid;

/// The channel a command's outcome is published on.
pub(crate) fn channel(command_id: Uuid) -> String {
    format!("reply:{command_id}")
}

/// Publishes outcomes.
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

    /// Publishes `outcome`; a failure is logged, never returned (the command is already applied).
    pub async fn publish(&self, command_id: Uuid, outcome: &Value) {
        let mut connection = self.connection.clone();
        let published: Result<i64, _> = redis::cmd("PUBLISH")
            .arg(channel(command_id))
            .arg(outcome.to_string())
            .query_async(&mut connection)
            .await;
        if let Err(error) = published {
            tracing::warn!(%command_id, %error, "reply not published");
        }
    }
}
