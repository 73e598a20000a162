//! What the consumer loop's tests share: the stack's cluster, a fresh topic per test, messages
//! that say what handling them does, a handler that does it and keeps a journal, and a consumer
//! running until the test stops it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use service::testing::stack;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use topics::{
    Cluster, Consumer, ConsumerOptions, Delivery, HandleError, Handler, Producer, RetryPolicy,
    Topic, TopicKey,
};
use uuid::Uuid;

/// What handling a message does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Act {
    /// Applies at once.
    Apply,
    /// Fails as the message's own fault every time (a conflict, a statement timeout).
    FailAlways,
    /// Fails as a dependency that is down, `times` times, then applies.
    Outage { times: u32 },
    /// Fails as a dependency that is down, for ever.
    Stuck,
    /// Can never apply.
    Poison,
}

/// A message of the tests: its id and what handling it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scripted {
    pub id: Uuid,
    #[serde(flatten)]
    pub act: Act,
}

impl Scripted {
    pub fn new(act: Act) -> Self {
        Self {
            id: Uuid::new_v4(),
            act,
        }
    }
}

/// What a handler was handed and did, shared with the test.
#[derive(Debug, Default)]
pub struct Journal {
    /// Every handing over, in order: a batch of several ids, or one id alone.
    pub calls: Vec<Vec<Uuid>>,
    /// Attempts per message.
    pub attempts: HashMap<Uuid, u32>,
    /// Messages applied, in the order they were.
    pub applied: Vec<Uuid>,
    /// Messages reported dead-lettered, with the reason.
    pub dead: Vec<(Uuid, String)>,
}

/// Handles [`Scripted`] messages as they say, keeping a [`Journal`]; takes batches up to
/// `batch_limit`.
#[derive(Clone)]
pub struct Script {
    pub journal: Arc<Mutex<Journal>>,
    pub batch_limit: usize,
}

impl Script {
    pub fn new(batch_limit: usize) -> Self {
        Self {
            journal: Arc::default(),
            batch_limit,
        }
    }

    pub fn journal(&self) -> MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until `done` holds of the journal (at most `limit`).
    pub async fn wait_until(&self, limit: Duration, done: impl Fn(&Journal) -> bool) {
        let deadline = Instant::now() + limit;
        while !done(&self.journal()) {
            assert!(
                Instant::now() < deadline,
                "not done within {limit:?}: {:?}",
                self.journal()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn act(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        let message = scripted(delivery)?;
        let mut journal = self.journal();
        let attempt = journal.attempts.entry(message.id).or_insert(0);
        *attempt += 1;
        let attempt = *attempt;
        let outcome = match message.act {
            Act::Apply => Ok(()),
            Act::FailAlways => Err(HandleError::Retryable("conflict".into())),
            Act::Outage { times } if attempt <= times => {
                Err(HandleError::Unavailable("database away".into()))
            }
            Act::Outage { .. } => Ok(()),
            Act::Stuck => Err(HandleError::Unavailable("database away".into())),
            Act::Poison => Err(HandleError::Poison("never applies".into())),
        };
        if outcome.is_ok() {
            journal.applied.push(message.id);
        }
        outcome
    }
}

fn scripted(delivery: &Delivery<'_>) -> Result<Scripted, HandleError> {
    serde_json::from_slice(delivery.payload).map_err(|e| HandleError::Poison(e.to_string()))
}

#[async_trait]
impl Handler for Script {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        if let Ok(message) = scripted(delivery) {
            self.journal().calls.push(vec![message.id]);
        }
        self.act(delivery)
    }

    fn batch_limit(&self) -> usize {
        self.batch_limit
    }

    /// Applies the batch's messages in order, stopping at the first that fails (as a
    /// transaction would not commit).
    async fn handle_batch(&self, deliveries: &[Delivery<'_>]) -> Result<(), HandleError> {
        let ids = deliveries
            .iter()
            .filter_map(|d| scripted(d).ok().map(|m| m.id))
            .collect();
        self.journal().calls.push(ids);
        let before = self.journal().applied.len();
        for delivery in deliveries {
            if let Err(error) = self.act(delivery) {
                // Rolled back: nothing of the batch applied.
                self.journal().applied.truncate(before);
                return Err(error);
            }
        }
        Ok(())
    }

    async fn dead_lettered(
        &self,
        delivery: &Delivery<'_>,
        reason: &str,
    ) -> Result<(), HandleError> {
        if let Ok(message) = scripted(delivery) {
            self.journal().dead.push((message.id, reason.to_owned()));
        }
        Ok(())
    }
}

/// The stack's Kafka, as the services read it.
pub fn cluster() -> Cluster {
    Cluster::read(&mut stack().env())
}

/// A topic of the test's own with `partitions` partitions, so no other test's messages reach its
/// consumers.
pub async fn fresh_topic(cluster: &Cluster, partitions: i32) -> String {
    let name: &'static str =
        Box::leak(format!("test.topics.{}", Uuid::new_v4().simple()).into_boxed_str());
    let topic = Topic {
        name,
        partitions,
        key: TopicKey::Run,
        carries: "the consumer loop's tests",
    };
    topics::admin::ensure_topics(cluster, &[topic])
        .await
        .expect("topic created");
    name.to_owned()
}

/// Sends `message` on `topic` under `key`; answers the partition it landed on.
pub async fn send(producer: &Producer, topic: &str, key: &str, message: Scripted) -> i32 {
    let id = message.id.to_string();
    producer
        .send_raw(
            topic,
            key.as_bytes(),
            &serde_json::to_vec(&message).expect("json"),
            &[("id", id.as_bytes())],
        )
        .await
        .expect("acknowledged")
        .partition
}

/// A consumer of `topic` in `group`, with quick retries, committing every 200 ms.
pub fn consumer(cluster: &Cluster, topic: &str, group: &str) -> Consumer {
    Consumer::new(
        &ConsumerOptions {
            cluster: cluster.clone(),
            group_id: group.to_owned(),
            topic: topic.to_owned(),
            client_id: group.to_owned(),
            commit_interval: Duration::from_millis(200),
            retry: RetryPolicy {
                attempts: 3,
                min_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(50),
            },
            instance_id: None,
        },
        Producer::new(cluster, &format!("{group}-dlq")).expect("producer"),
    )
    .expect("consumer")
}

/// A consumer running `handler` until [`Running::stop`].
pub struct Running {
    stop: CancellationToken,
    task: JoinHandle<Result<(), topics::Error>>,
}

impl Running {
    pub fn start<H: Handler + 'static>(consumer: Consumer, handler: H) -> Self {
        let stop = CancellationToken::new();
        let task = tokio::spawn(consumer.run(handler, stop.clone().cancelled_owned()));
        Self { stop, task }
    }

    /// Stops it and waits (at most 60 s): the loop must stop even while a lane is stuck.
    pub async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(60), self.task)
            .await
            .expect("the consumer stops")
            .expect("join")
            .expect("a clean stop");
    }
}

/// A fresh group name.
pub fn group(prefix: &str) -> String {
    format!("{prefix}-{}", Uuid::new_v4().simple())
}

/// Whether the dead-letter topic holds the message `id`, with where it came from and why.
pub async fn on_dead_letter_topic(cluster: &Cluster, id: Uuid) -> bool {
    use rdkafka::consumer::{Consumer as _, StreamConsumer};
    use rdkafka::message::{Headers, Message as _};
    let reader: StreamConsumer = cluster
        .client_config("dead-letter-check")
        .set("group.id", group("dead-letter-check"))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    reader
        .subscribe(&[topics::catalogue::DEAD_LETTER.name])
        .expect("subscribe");
    let id = id.to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Ok(Ok(message)) = tokio::time::timeout(Duration::from_secs(5), reader.recv()).await
        else {
            continue;
        };
        let header = |name: &str| {
            message
                .headers()
                .and_then(|h| h.iter().find(|x| x.key == name).and_then(|x| x.value))
        };
        if header("id") == Some(id.as_bytes()) {
            return header("reason").is_some_and(|r| !r.is_empty())
                && header("source-topic").is_some();
        }
    }
    false
}
