//! Replies to the commands this instance produced, heard on Redis: one subscription to every
//! reply channel (`reply:*`), each message handed to the route waiting for that command id,
//! undecoded: the route knows its command's topic, so it reads the reply as that topic's answer.
//! Best effort by design: a reply missed while Redis is away is read from the inbox by the
//! waiting route (`commands`), never obtained by applying the command again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use service::shutdown::CancellationToken;
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::reconnecting;

/// The routes waiting for replies, by command id.
#[derive(Debug, Default)]
pub(crate) struct Replies {
    waiting: Mutex<HashMap<Uuid, oneshot::Sender<Vec<u8>>, foldhash::fast::RandomState>>,
}

/// A route's wait for one reply; dropping it stops waiting.
#[derive(Debug)]
pub(crate) struct Waiter {
    replies: Arc<Replies>,
    command_id: Uuid,
    /// The reply's JSON, as published.
    pub(crate) reply: oneshot::Receiver<Vec<u8>>,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.replies.lock().remove(&self.command_id);
    }
}

impl Replies {
    /// Starts waiting for the reply to `command_id` (before the command is produced, so the
    /// reply cannot come first).
    pub(crate) fn wait_for(self: &Arc<Self>, command_id: Uuid) -> Waiter {
        let (sender, reply) = oneshot::channel();
        self.lock().insert(command_id, sender);
        Waiter {
            replies: self.clone(),
            command_id,
            reply,
        }
    }

    /// Hands a reply to its waiter, if this instance has one.
    fn deliver(&self, channel: &str, payload: &[u8]) {
        let Some(command_id) = topics::reply::command_of(channel) else {
            return;
        };
        let Some(sender) = self.lock().remove(&command_id) else {
            return; // another instance's command, or a route that stopped waiting
        };
        let _ = sender.send(payload.to_vec());
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        HashMap<Uuid, oneshot::Sender<Vec<u8>>, foldhash::fast::RandomState>,
    > {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Listens until `stop`: subscribe to `reply:*`, deliver each message; resubscribe with
/// backoff whenever the subscription breaks.
pub(crate) async fn listen(replies: Arc<Replies>, redis: redis::Client, stop: CancellationToken) {
    let session = || subscribed(&replies, &redis);
    reconnecting::run("reply subscription", stop, session, || {}).await;
}

async fn subscribed(replies: &Replies, redis: &redis::Client) -> redis::RedisResult<()> {
    let mut pubsub = redis.get_async_pubsub().await?;
    pubsub
        .psubscribe(format!("{}*", topics::reply::CHANNEL_PREFIX))
        .await?;
    tracing::debug!("reply subscription open");
    let mut messages = pubsub.on_message();
    while let Some(message) = messages.next().await {
        replies.deliver(message.get_channel_name(), message.get_payload_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reply_reaches_its_waiter_only() {
        let replies = Arc::new(Replies::default());
        let id = Uuid::now_v7();
        let mut waiter = replies.wait_for(id);
        let other = Uuid::now_v7();
        replies.deliver(&topics::reply::channel(other), b"theirs");
        replies.deliver(&topics::reply::channel(id), b"ours");
        assert_eq!((&mut waiter.reply).await.expect("delivered"), b"ours");
        assert!(replies.lock().is_empty(), "both senders are gone");
    }

    #[test]
    fn a_waiter_that_stops_waiting_is_forgotten() {
        let replies = Arc::new(Replies::default());
        drop(replies.wait_for(Uuid::now_v7()));
        assert!(replies.lock().is_empty());
    }
}
