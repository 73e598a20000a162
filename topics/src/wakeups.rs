//! Wake-ups: producers announce on Redis where each acknowledged message landed (its topic's
//! channel, `partition offset`), so a consumer can leave a partition it has read to the end
//! paused, fetching nothing, and resume it when a message is announced there
//! (`consumer/idle.rs`).
//!
//! Why: tansu answers every fetch with two queries of its Postgres per partition, message or
//! not, and holds it the whole fetch wait; the platform's consumers polling their idle
//! partitions every 10 ms took 80 % of a core at rest (BENCHMARKS.md, "Wake-ups").
//!
//! A wake-up is a hint, never the message: a consumer resumes each paused partition every
//! safety poll anyway, and pauses nothing while its subscription is down. A lost announcement
//! costs latency (at most the safety poll), never a message.
//!
//! Both sides coalesce: the [`Announcer`] publishes, per partition, only the newest offset of
//! what queued while it was publishing; the consumer's [`Heard`] keeps only the newest offset
//! per partition until its loop takes it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use futures::StreamExt;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

/// What every wake-up channel starts with; the rest is the topic's name.
pub const CHANNEL_PREFIX: &str = "wake:";

/// The wake-up channel of `topic`.
pub fn channel(topic: &str) -> String {
    format!("{CHANNEL_PREFIX}{topic}")
}

/// How many landed messages may wait for the announcer; beyond it they are not announced (the
/// announcer is behind, and consumers of a partition that busy are not paused anyway).
const QUEUE: usize = 4096;

/// Where one acknowledged message landed.
#[derive(Debug)]
struct Landed {
    topic: String,
    partition: i32,
    offset: i64,
}

/// The producers' side: a clonable handle queueing where messages landed, and one task that
/// publishes them.
#[derive(Debug, Clone)]
pub struct Announcer {
    queue: mpsc::Sender<Landed>,
}

impl Announcer {
    /// Starts the publishing task on the current runtime; it ends once every handle is dropped.
    pub fn start(redis: redis::Client) -> Self {
        let (queue, queued) = mpsc::channel(QUEUE);
        tokio::spawn(publish(redis, queued));
        Self { queue }
    }

    /// The message at `offset` of `topic`'s `partition` is acknowledged. Never waits.
    pub(crate) fn announce(&self, topic: &str, partition: i32, offset: i64) {
        let landed = Landed {
            topic: topic.to_owned(),
            partition,
            offset,
        };
        if self.queue.try_send(landed).is_err() {
            metrics::counter!("producer.wakeups.dropped").increment(1);
        }
    }
}

/// Publishes what queued, the newest offset per partition, until every handle is dropped.
async fn publish(redis: redis::Client, mut queued: mpsc::Receiver<Landed>) {
    let mut connection = None;
    let mut newest: HashMap<(String, i32), i64> = HashMap::new();
    while let Some(first) = queued.recv().await {
        newest.clear();
        let mut note = |landed: Landed| {
            let offset = newest.entry((landed.topic, landed.partition)).or_default();
            *offset = (*offset).max(landed.offset);
        };
        note(first);
        while let Ok(landed) = queued.try_recv() {
            note(landed);
        }
        if let Err(error) = send(&redis, &mut connection, &newest).await {
            // Consumers find these messages at their next safety poll.
            tracing::debug!(%error, "wake-ups not published");
            connection = None;
        }
    }
}

async fn send(
    redis: &redis::Client,
    connection: &mut Option<redis::aio::MultiplexedConnection>,
    newest: &HashMap<(String, i32), i64>,
) -> redis::RedisResult<()> {
    let open = match connection {
        Some(open) => open,
        None => connection.insert(redis.get_multiplexed_async_connection().await?),
    };
    let mut pipe = redis::pipe();
    for ((topic, partition), offset) in newest {
        pipe.cmd("PUBLISH")
            .arg(channel(topic))
            .arg(format!("{partition} {offset}"))
            .ignore();
    }
    pipe.query_async::<()>(open).await
}

/// The consumers' side: what was announced on one topic's channel since the loop last looked,
/// and whether the subscription is up.
#[derive(Debug)]
pub(crate) struct Heard {
    state: Mutex<HeardState>,
    changed: Notify,
}

/// What [`Heard::take`] hands the consumer's loop.
#[derive(Debug, Default)]
pub(crate) struct HeardState {
    /// Whether the subscription is up: announcements can be heard.
    pub(crate) live: bool,
    /// The newest offset announced per partition since the last take.
    pub(crate) announced: HashMap<i32, i64>,
}

impl Heard {
    /// Waits until something changed since the last [`Heard::take`].
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    /// What changed since the last take.
    pub(crate) fn take(&self) -> HeardState {
        let mut state = self.lock();
        HeardState {
            live: state.live,
            announced: std::mem::take(&mut state.announced),
        }
    }

    fn set_live(&self, live: bool) {
        self.lock().live = live;
        self.changed.notify_one();
    }

    fn announced(&self, partition: i32, offset: i64) {
        let mut state = self.lock();
        let newest = state.announced.entry(partition).or_insert(offset);
        *newest = (*newest).max(offset);
        drop(state);
        self.changed.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HeardState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A subscription to one topic's wake-ups, kept up (resubscribing with backoff) until dropped.
#[derive(Debug)]
pub(crate) struct Listening {
    pub(crate) heard: Arc<Heard>,
    task: JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Subscribes to `topic`'s wake-ups.
pub(crate) fn listen(redis: redis::Client, topic: &str) -> Listening {
    let heard = Arc::new(Heard {
        state: Mutex::default(),
        changed: Notify::new(),
    });
    let task = tokio::spawn(keep_subscribed(redis, channel(topic), Arc::clone(&heard)));
    Listening { heard, task }
}

async fn keep_subscribed(redis: redis::Client, channel: String, heard: Arc<Heard>) {
    let mut backoff = reconnect_backoff();
    loop {
        match subscribed(&redis, &channel, &heard).await {
            Ok(()) => {
                tracing::warn!(%channel, "wake-up subscription lost; resubscribing");
                backoff = reconnect_backoff();
            }
            Err(error) => tracing::warn!(%channel, %error, "wake-up subscription failed; retrying"),
        }
        heard.set_live(false);
        tokio::time::sleep(backoff.next().unwrap_or(Duration::from_secs(5))).await;
    }
}

/// One subscription's life: live once subscribed, each announcement noted, until it breaks.
async fn subscribed(redis: &redis::Client, channel: &str, heard: &Heard) -> redis::RedisResult<()> {
    let mut pubsub = redis.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    heard.set_live(true);
    let mut messages = pubsub.on_message();
    while let Some(message) = messages.next().await {
        match parse(message.get_payload_bytes()) {
            Some((partition, offset)) => heard.announced(partition, offset),
            None => tracing::debug!(%channel, "a wake-up that does not parse"),
        }
    }
    Ok(())
}

/// `partition offset`.
fn parse(payload: &[u8]) -> Option<(i32, i64)> {
    let (partition, offset) = std::str::from_utf8(payload).ok()?.split_once(' ')?;
    Some((partition.parse().ok()?, offset.parse().ok()?))
}

fn reconnect_backoff() -> impl Iterator<Item = Duration> {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(5))
        .with_jitter()
        .without_max_times()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_parse_as_partition_and_offset() {
        assert_eq!(parse(b"3 1042"), Some((3, 1042)));
        assert_eq!(parse(b"3"), None);
        assert_eq!(parse(b"x 1"), None);
        assert_eq!(parse(b"1 2 3"), None);
    }

    #[test]
    fn the_loop_takes_the_newest_offset_per_partition_once() {
        let heard = Heard {
            state: Mutex::default(),
            changed: Notify::new(),
        };
        heard.set_live(true);
        heard.announced(0, 7);
        heard.announced(0, 5);
        heard.announced(1, 2);
        let taken = heard.take();
        assert!(taken.live);
        assert_eq!(taken.announced, HashMap::from([(0, 7), (1, 2)]));
        assert!(heard.take().announced.is_empty());
    }
}
