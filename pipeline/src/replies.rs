//! Replies published to the waiting ingress over Redis pub/sub, on the command's channel
//! (`topics::reply`). Best effort: the inbox holds the durable copy, and a waiter that missed
//! the message reads it there.

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
    pub(crate) fn publish(&self, command_id: Uuid, reply: &Reply) {
        self.publish_all([(command_id, reply)]);
    }

    /// Publishes a batch's replies in one round trip, on a task of its own: the stage goes on
    /// at once, whatever Redis does (a waiter that hears nothing reads the inbox within a
    /// second); a failure is logged, never returned.
    pub(crate) fn publish_all<'r>(&self, replies: impl IntoIterator<Item = (Uuid, &'r Reply)>) {
        let mut pipe = redis::pipe();
        let mut count = 0;
        for (command_id, reply) in replies {
            let Ok(payload) = serde_json::to_string(reply) else {
                continue;
            };
            pipe.cmd("PUBLISH")
                .arg(topics::reply::channel(command_id))
                .arg(payload)
                .ignore();
            count += 1;
        }
        if count == 0 {
            return;
        }
        let mut connection = self.connection.clone();
        tokio::spawn(async move {
            let published: Result<(), _> = pipe.query_async(&mut connection).await;
            if let Err(error) = published {
                tracing::warn!(replies = count, %error, "replies not published");
            }
        });
    }
}
