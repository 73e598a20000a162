//! What the pipeline's tests share: the stack's environment, a database with the test tables, a
//! fresh topic per test, a probe stage whose commands say how to fail, consumers, and a reply
//! subscriber on the stack's Redis.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use pipeline::{Context, Error, Replies, Stage, StageHandler};
use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use service::testing::stack;
use sqlx::PgPool;
use topics::{
    Answered, Applied, Apply, Cluster, Command, Consumer, ConsumerOptions, Delivery, Dispatch,
    Envelope, HandleError, Handler, Message, Outcome, Principal, Producer, Reply, RetryPolicy,
    Topic, TopicKey,
};
use uuid::Uuid;

/// The commands of the tests: each says what applying it does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Probe {
    /// Records one row: the effect whose count must stay at one.
    Add { value: i32 },
    /// Fails as the database does when a statement times out, every time.
    Slow,
    /// Fails as an unreachable database does, `times` times, then adds `value`.
    Outage { times: u32, value: i32 },
    /// Runs into a constraint of its own SQL (a unique violation): never applies.
    Duplicate,
}

/// The probe is its topic's only command type: its own body, dispatched to the stage's apply.
impl Command for Probe {
    type Body = Probe;
    type Reply = Added;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        tenant.unwrap_or_default().as_bytes().to_vec()
    }
}

impl Message for Probe {
    const TOPIC: Topic = Topic {
        name: "test.pipeline",
        partitions: 1,
        key: TopicKey::Run,
        carries: "test commands",
    };
    const VERSION: u16 = 1;
    const REPLY_VERSION: u16 = 1;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        Command::key(self, tenant)
    }
}

#[async_trait]
impl<S: Apply<Probe, Context>> Dispatch<S, Context, ()> for Probe {
    async fn dispatch(&self, stage: &S, cx: &mut Context) -> Result<Answered, Error> {
        let applied = stage.apply(cx, self).await?;
        Ok(applied.encode(Self::REPLY_VERSION)?)
    }
}

/// What a [`Probe`] command answers: the value it recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Added {
    pub applied: i32,
}

/// The reply of a probe that recorded `value`, as the stage publishes it.
pub fn added(value: i32) -> Reply {
    let outcome = Outcome::done(Added { applied: value });
    Reply::Applied {
        outcome: outcome.encode(Probe::REPLY_VERSION).expect("encodes"),
    }
}

/// Applies [`Probe`] commands; counts the outages it has simulated per command.
#[derive(Default)]
pub struct ProbeStage {
    outages: Mutex<HashMap<Uuid, u32>>,
}

impl Stage for ProbeStage {
    type Body = Probe;
    type Then = ();
    const NAME: &'static str = "test-probe";
}

#[async_trait]
impl Apply<Probe, Context> for ProbeStage {
    async fn apply(&self, cx: &mut Context, probe: &Probe) -> Result<Applied<Added>, Error> {
        let command_id = cx.command.id;
        let value = match *probe {
            Probe::Add { value } => value,
            Probe::Slow => {
                sqlx::query("SET LOCAL statement_timeout = 1")
                    .execute(&mut *cx.tx)
                    .await?;
                sqlx::query("SELECT pg_sleep(0.05)")
                    .execute(&mut *cx.tx)
                    .await?;
                unreachable!("the statement times out")
            }
            Probe::Outage { times, value } => {
                let mut outages = self.outages.lock().expect("lock");
                let seen = outages.entry(command_id).or_insert(0);
                if *seen < times {
                    *seen += 1;
                    return Err(Error::Database(sqlx::Error::PoolTimedOut));
                }
                value
            }
            Probe::Duplicate => {
                for _ in 0..2 {
                    sqlx::query("INSERT INTO test_pipeline_unique (id) VALUES ($1)")
                        .bind(command_id)
                        .execute(&mut *cx.tx)
                        .await?;
                }
                unreachable!("the second insert violates the key")
            }
        };
        sqlx::query("INSERT INTO test_pipeline_effects (command_id, value) VALUES ($1, $2)")
            .bind(command_id)
            .bind(value)
            .execute(&mut *cx.tx)
            .await?;
        Ok(Outcome::done(Added { applied: value }).into())
    }
}

/// Counts every delivery, outside the stage's transaction, so a test sees redeliveries.
pub struct Counting<H>(pub H, pub PgPool);

impl<H: Handler> Counting<H> {
    async fn count(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        let id = delivery
            .header("id")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| Uuid::parse_str(v).ok());
        sqlx::query("INSERT INTO test_pipeline_deliveries (command_id) VALUES ($1)")
            .bind(id)
            .execute(&self.1)
            .await
            .map_err(|e| HandleError::Unavailable(e.to_string()))?;
        Ok(())
    }
}

#[async_trait]
impl<H: Handler> Handler for Counting<H> {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        self.count(delivery).await?;
        self.0.handle(delivery).await
    }

    fn batch_limit(&self) -> usize {
        self.0.batch_limit()
    }

    async fn handle_batch(&self, deliveries: &[Delivery<'_>]) -> Result<(), HandleError> {
        for delivery in deliveries {
            self.count(delivery).await?;
        }
        self.0.handle_batch(deliveries).await
    }

    async fn dead_lettered(
        &self,
        delivery: &Delivery<'_>,
        reason: &str,
    ) -> Result<(), HandleError> {
        self.0.dead_lettered(delivery, reason).await
    }
}

pub async fn database() -> PgPool {
    let pool = PgPool::connect(stack().var("DATABASE_URL"))
        .await
        .expect("database");
    schema::migrate(&pool).await.expect("migrations");
    // CREATE TABLE IF NOT EXISTS races itself across connections (two creators both miss the
    // table, one fails on the type's unique index): tests starting together take turns.
    sqlx::raw_sql(
        "SELECT pg_advisory_xact_lock(7245001);
         CREATE TABLE IF NOT EXISTS test_pipeline_effects (command_id uuid NOT NULL, value integer NOT NULL);
         CREATE TABLE IF NOT EXISTS test_pipeline_deliveries (command_id uuid, at timestamptz NOT NULL DEFAULT now());
         CREATE TABLE IF NOT EXISTS test_pipeline_unique (id uuid PRIMARY KEY);",
    )
    .execute(&pool)
    .await
    .expect("test tables");
    pool
}

/// A topic of this test's own, so no other test's messages reach its consumers.
pub async fn fresh_topic() -> String {
    fresh_topic_with(Probe::TOPIC.partitions).await
}

/// [`fresh_topic`] with `partitions` partitions.
pub async fn fresh_topic_with(partitions: i32) -> String {
    let name: &'static str =
        Box::leak(format!("test.pipeline.{}", Uuid::new_v4().simple()).into_boxed_str());
    let topic = Topic {
        name,
        partitions,
        ..Probe::TOPIC
    };
    topics::admin::ensure_topics(&cluster(), &[topic])
        .await
        .expect("topic created");
    name.to_owned()
}

pub async fn produce(topic: &str, envelope: &Envelope<Probe>) {
    produce_raw(topic, &envelope.encode().expect("encode"), envelope.id).await;
}

/// Sends `envelope` on `topic` under its own key, with its id header as the services send it;
/// answers the partition it landed on.
pub async fn produce_keyed<B: Message>(
    producer: &Producer,
    topic: &str,
    envelope: &Envelope<B>,
) -> i32 {
    let id = envelope.id.to_string();
    producer
        .send_raw(
            topic,
            &envelope.key(),
            &envelope.encode().expect("encode"),
            &[("id", id.as_bytes())],
        )
        .await
        .expect("produced")
        .partition
}

/// The stack's broker, as the services read it.
pub fn cluster() -> Cluster {
    Cluster::read(&mut stack().env())
}

/// A producer on the stack's broker.
pub fn producer(client_id: &str) -> Producer {
    Producer::new(&cluster(), client_id).expect("producer")
}

/// The stack's Redis.
pub fn redis_client() -> redis::Client {
    redis::Client::open(stack().var("REDIS_URL")).expect("redis url")
}

pub async fn produce_raw(topic: &str, payload: &[u8], id: Uuid) {
    let producer = producer("pipeline-test");
    let id = id.to_string();
    producer
        .send_raw(topic, b"k", payload, &[("id", id.as_bytes())])
        .await
        .expect("produced");
}

pub fn command(body: Probe) -> Envelope<Probe> {
    command_of(Uuid::new_v4(), body)
}

/// A command of `tenant`, which is its key.
pub fn command_of(tenant: Uuid, body: Probe) -> Envelope<Probe> {
    Envelope::new(
        Some(tenant),
        Principal::system("test"),
        "req-test",
        None,
        body,
    )
}

/// A consumer of `topic` in a group of its own, with quick retries.
pub fn consumer(topic: &str, group: &str, commit_interval: Duration) -> Consumer {
    Consumer::new(
        &ConsumerOptions {
            cluster: cluster(),
            group_id: group.to_owned(),
            topic: topic.to_owned(),
            client_id: format!("{group}-{}", std::process::id()),
            commit_interval,
            retry: RetryPolicy {
                attempts: 3,
                min_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(50),
            },
            instance_id: None,
        },
        Producer::new(&cluster(), &format!("{group}-dlq")).expect("producer"),
    )
    .expect("consumer")
}

/// The probe stage with replies published on the stack's Redis.
pub async fn stage_handler(pool: &PgPool) -> StageHandler<ProbeStage> {
    StageHandler::new(ProbeStage::default(), pool.clone(), Some(replies().await))
}

/// Replies published on the stack's Redis.
pub async fn replies() -> Replies {
    let connection = redis::aio::ConnectionManager::new(redis_client())
        .await
        .expect("redis");
    Replies::new(connection)
}

/// Listens for the reply to one command.
pub struct ReplyListener {
    messages: futures::stream::BoxStream<'static, redis::Msg>,
}

impl ReplyListener {
    /// Subscribes before the command is produced, so the reply cannot be missed.
    pub async fn subscribe(command_id: Uuid) -> Self {
        let mut pubsub = redis_client().get_async_pubsub().await.expect("pubsub");
        pubsub
            .subscribe(topics::reply::channel(command_id))
            .await
            .expect("subscribed");
        Self {
            messages: pubsub.into_on_message().boxed(),
        }
    }

    pub async fn reply(mut self, within: Duration) -> Reply {
        let message = tokio::time::timeout(within, self.messages.next())
            .await
            .expect("a reply in time")
            .expect("the subscription stays open");
        let payload: String = message.get_payload().expect("text");
        serde_json::from_str(&payload).expect("a reply")
    }
}

pub async fn count(pool: &PgPool, table: &str, id: Uuid) -> i64 {
    let sql = match table {
        "effects" => "SELECT count(*) FROM test_pipeline_effects WHERE command_id = $1",
        "deliveries" => "SELECT count(*) FROM test_pipeline_deliveries WHERE command_id = $1",
        _ => "SELECT count(*) FROM inbox WHERE command_id = $1",
    };
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(pool)
        .await
        .expect("count")
}

pub async fn wait_for(pool: &PgPool, table: &str, id: Uuid, at_least: i64, limit: Duration) {
    let deadline = Instant::now() + limit;
    while count(pool, table, id).await < at_least {
        assert!(
            Instant::now() < deadline,
            "{table} of {id} never reached {at_least}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The reply the inbox holds for `id`: `(outcome, dead_letter_reason)`.
pub async fn inbox_row(pool: &PgPool, id: Uuid) -> (Option<Value>, Option<String>) {
    sqlx::query_as("SELECT outcome, dead_letter_reason FROM inbox WHERE command_id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .expect("inbox row")
}

/// Whether the dead-letter topic holds a message whose `id` header is `id`, with its reason.
pub async fn dead_lettered(id: &str) -> bool {
    use rdkafka::ClientConfig;
    use rdkafka::consumer::{Consumer as _, StreamConsumer};
    use rdkafka::message::{Headers, Message as _};
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", stack().var("KAFKA_BROKERS"))
        .set("group.id", format!("dlq-check-{}", Uuid::new_v4().simple()))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    consumer
        .subscribe(&[topics::catalogue::DEAD_LETTER.name])
        .expect("subscribe");
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Ok(Ok(message)) = tokio::time::timeout(Duration::from_secs(5), consumer.recv()).await
        else {
            continue;
        };
        let headers = message.headers();
        let header = |name: &str| {
            headers.and_then(|h| h.iter().find(|x| x.key == name).and_then(|x| x.value))
        };
        if header("id") == Some(id.as_bytes()) {
            assert!(header("reason").is_some_and(|r| !r.is_empty()));
            assert!(header("source-topic").is_some());
            return true;
        }
    }
    false
}

/// A worker process this test started (the test binary re-run as a child), killed (SIGKILL)
/// when the test kills it or, should the test fail first, when the guard drops, so no worker
/// outlives its test.
pub struct WorkerProcess(std::process::Child);

/// How often a worker commits its offsets unless told otherwise: never within a test, so a kill
/// loses every commit but no effect.
const WORKER_COMMIT_INTERVAL: Duration = Duration::from_secs(3600);

impl WorkerProcess {
    /// Runs the ignored test `name` of this binary as a child consuming `topic` in `group`
    /// (see [`WorkerProcess::serve`]).
    pub fn start(name: &str, topic: &str, group: &str) -> Self {
        Self::start_committing(name, topic, group, WORKER_COMMIT_INTERVAL)
    }

    /// [`WorkerProcess::start`] with `env` added to the child's environment.
    pub fn start_with_env(name: &str, (topic, group): (&str, &str), env: &[(&str, &str)]) -> Self {
        Self::spawn(name, (topic, group), WORKER_COMMIT_INTERVAL, env)
    }

    /// [`WorkerProcess::start`], committing offsets every `commit_interval`.
    pub fn start_committing(
        name: &str,
        topic: &str,
        group: &str,
        commit_interval: Duration,
    ) -> Self {
        Self::spawn(name, (topic, group), commit_interval, &[])
    }

    fn spawn(
        name: &str,
        (topic, group): (&str, &str),
        commit_interval: Duration,
        env: &[(&str, &str)],
    ) -> Self {
        let mut command = std::process::Command::new(std::env::current_exe().expect("test binary"));
        command.envs(env.iter().copied());
        command
            .args([name, "--exact", "--ignored", "--nocapture"])
            .env("WORKER_TOPIC", topic)
            .env("WORKER_GROUP", group)
            .env(
                "WORKER_COMMIT_INTERVAL_MS",
                commit_interval.as_millis().to_string(),
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit());
        Self(command.spawn().expect("worker starts"))
    }

    /// The child's side: consumes the topic and group it was started with until killed, or
    /// until SIGTERM, on which it stops as the services do (its consumer commits what it stored
    /// and leaves the group). Run alone (not as a child), it has nothing to do and fails.
    pub async fn serve<H: Handler + 'static>(handler: H) {
        let (Ok(topic), Ok(group)) = (std::env::var("WORKER_TOPIC"), std::env::var("WORKER_GROUP"))
        else {
            panic!("a worker started by a kill test, not a test");
        };
        let commit_interval = std::env::var("WORKER_COMMIT_INTERVAL_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(WORKER_COMMIT_INTERVAL, Duration::from_millis);
        let mut terminated =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("SIGTERM handler");
        consumer(&topic, &group, commit_interval)
            .run(handler, async move {
                terminated.recv().await;
            })
            .await
            .expect("consumer runs");
    }

    pub fn kill(mut self) {
        self.stop();
    }

    /// Stops the worker as a supervisor does (SIGTERM) and waits for it to exit, without
    /// holding up the test's other tasks.
    pub async fn terminate(mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("a worker did not stop within 30 s of SIGTERM");
    }

    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The probe stage applying up to 16 queued commands in one transaction.
#[derive(Default)]
pub struct BatchingProbeStage(ProbeStage);

impl Stage for BatchingProbeStage {
    type Body = Probe;
    type Then = ();
    const NAME: &'static str = "test-probe";
    const BATCH_LIMIT: usize = 16;
}

#[async_trait]
impl Apply<Probe, Context> for BatchingProbeStage {
    async fn apply(&self, cx: &mut Context, probe: &Probe) -> Result<Applied<Added>, Error> {
        self.0.apply(cx, probe).await
    }
}
