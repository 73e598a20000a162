//! A redelivered command is applied once: against the real broker and Postgres, a worker is
//! killed (SIGKILL) after committing a command's effect but before its offset is committed; the
//! next worker of the group gets the command again and the inbox answers it from the stored
//! outcome. The workers are this test binary re-run as child processes.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pipeline::{Error, Stage, StageHandler};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgPool, Postgres, Transaction};
use topics::{
    Consumer, ConsumerOptions, Delivery, Envelope, HandleError, Handler, Message, Principal,
    PrincipalKind, Producer, Topic, TopicKey,
};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Probe {
    Add { value: i32 },
}

impl Message for Probe {
    const TOPIC: Topic = Topic {
        name: "test.redelivery",
        partitions: 1,
        key: TopicKey::Run,
        carries: "test commands",
    };
    const VERSION: u16 = 1;
    fn key(&self, tenant: Uuid) -> Vec<u8> {
        tenant.as_bytes().to_vec()
    }
}

/// Records each application as a row: the effect whose count must stay at one.
struct AddStage;

#[async_trait]
impl Stage for AddStage {
    type Body = Probe;
    const NAME: &'static str = "test-add";

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Probe>,
    ) -> Result<Value, Error> {
        let Probe::Add { value } = command.body;
        sqlx::query("INSERT INTO test_redelivery_effects (command_id, value) VALUES ($1, $2)")
            .bind(command.id)
            .bind(value)
            .execute(&mut **tx)
            .await?;
        Ok(json!({ "applied": value }))
    }
}

/// Counts every delivery, outside the stage's transaction, so the test sees redeliveries.
struct Counting<H>(H, PgPool);

#[async_trait]
impl<H: Handler> Handler for Counting<H> {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        let id = delivery
            .header("id")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| Uuid::parse_str(v).ok());
        sqlx::query("INSERT INTO test_redelivery_deliveries (command_id) VALUES ($1)")
            .bind(id)
            .execute(&self.1)
            .await
            .map_err(|e| HandleError::Retryable(e.to_string()))?;
        self.0.handle(delivery).await
    }
}

fn stack() -> &'static HashMap<String, String> {
    static ENV: OnceLock<HashMap<String, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.stack/env");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{} ({e}): start the stack with ./stack up", path.display())
        });
        text.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| {
                (
                    k.to_owned(),
                    std::env::var(k).unwrap_or_else(|_| v.to_owned()),
                )
            })
            .collect()
    })
}

async fn database() -> PgPool {
    let pool = PgPool::connect(&stack()["DATABASE_URL"])
        .await
        .expect("database");
    schema::migrate(&pool).await.expect("migrations");
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS test_redelivery_effects (command_id uuid NOT NULL, value integer NOT NULL);
         CREATE TABLE IF NOT EXISTS test_redelivery_deliveries (command_id uuid, at timestamptz NOT NULL DEFAULT now());",
    )
    .execute(&pool)
    .await
    .expect("test tables");
    pool
}

async fn fresh_topic() -> String {
    let name: &'static str =
        Box::leak(format!("test.redelivery.{}", Uuid::new_v4().simple()).into_boxed_str());
    let topic = Topic {
        name,
        ..Probe::TOPIC
    };
    topics::admin::ensure_topics(&stack()["KAFKA_BROKERS"], &[topic])
        .await
        .expect("topic created");
    name.to_owned()
}

async fn produce(topic: &str, envelope: &Envelope<Probe>) {
    let producer = Producer::new(&stack()["KAFKA_BROKERS"], "redelivery-test").expect("producer");
    let id = envelope.id.to_string();
    producer
        .send_raw(
            topic,
            &envelope.key(),
            &envelope.encode().expect("encode"),
            &[("id", id.as_bytes())],
        )
        .await
        .expect("produced");
}

fn command(value: i32) -> Envelope<Probe> {
    Envelope::new(
        Uuid::new_v4(),
        Principal {
            kind: PrincipalKind::System,
            id: "test".into(),
        },
        "req-test",
        None,
        Probe::Add { value },
    )
}

async fn count(pool: &PgPool, table: &str, id: Uuid) -> i64 {
    let sql = match table {
        "effects" => "SELECT count(*) FROM test_redelivery_effects WHERE command_id = $1",
        "deliveries" => "SELECT count(*) FROM test_redelivery_deliveries WHERE command_id = $1",
        _ => "SELECT count(*) FROM inbox WHERE command_id = $1",
    };
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(pool)
        .await
        .expect("count")
}

async fn wait_for(pool: &PgPool, table: &str, id: Uuid, at_least: i64, limit: Duration) {
    let deadline = Instant::now() + limit;
    while count(pool, table, id).await < at_least {
        assert!(
            Instant::now() < deadline,
            "{table} of {id} never reached {at_least}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs as a child process: consumes `REDELIVERY_TOPIC` in `REDELIVERY_GROUP` until killed,
/// committing offsets only every minute so a kill loses the commit but not the effect.
#[tokio::test]
#[ignore = "started as a child process by the redelivery tests"]
async fn worker_process() {
    let (Ok(topic), Ok(group)) = (
        std::env::var("REDELIVERY_TOPIC"),
        std::env::var("REDELIVERY_GROUP"),
    ) else {
        return;
    };
    let pool = database().await;
    let consumer = Consumer::new(&ConsumerOptions {
        brokers: stack()["KAFKA_BROKERS"].clone(),
        group_id: group,
        topic,
        client_id: format!("worker-{}", std::process::id()),
        commit_interval: Duration::from_secs(60),
    })
    .expect("consumer");
    let handler = Counting(StageHandler::new(AddStage, pool.clone(), None), pool);
    consumer
        .run(handler, std::future::pending())
        .await
        .expect("consumer runs");
}

fn spawn_worker(topic: &str, group: &str) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "redelivery::worker_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("REDELIVERY_TOPIC", topic)
        .env("REDELIVERY_GROUP", group)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("worker starts")
}

#[tokio::test]
async fn a_command_redelivered_after_a_crash_is_applied_once() {
    let pool = database().await;
    let topic = fresh_topic().await;
    let group = format!("redelivery-{}", Uuid::new_v4().simple());
    let first = command(7);
    produce(&topic, &first).await;

    let mut worker = spawn_worker(&topic, &group);
    wait_for(&pool, "effects", first.id, 1, Duration::from_secs(90)).await;
    // Killed after the effect committed and before the minute-long commit interval ended.
    worker.kill().expect("SIGKILL");
    let _ = worker.wait();
    assert_eq!(count(&pool, "deliveries", first.id).await, 1);

    let mut successor = spawn_worker(&topic, &group);
    wait_for(&pool, "deliveries", first.id, 2, Duration::from_secs(90)).await;
    // The successor has answered from the inbox; give it a moment to finish the message.
    let second = command(8);
    produce(&topic, &second).await;
    wait_for(&pool, "effects", second.id, 1, Duration::from_secs(60)).await;
    successor.kill().expect("SIGKILL");
    let _ = successor.wait();

    assert_eq!(
        count(&pool, "effects", first.id).await,
        1,
        "applied once despite redelivery"
    );
    assert_eq!(count(&pool, "inbox", first.id).await, 1);
    let outcome: Value = sqlx::query_scalar("SELECT outcome FROM inbox WHERE command_id = $1")
        .bind(first.id)
        .fetch_one(&pool)
        .await
        .expect("outcome");
    assert_eq!(outcome, json!({ "applied": 7 }));
}

#[tokio::test]
async fn the_same_command_twice_on_the_log_is_applied_once() {
    let pool = database().await;
    let topic = fresh_topic().await;
    let duplicate = command(3);
    produce(&topic, &duplicate).await;
    produce(&topic, &duplicate).await;
    let after = command(4);
    produce(&topic, &after).await;

    let consumer = Consumer::new(&ConsumerOptions {
        brokers: stack()["KAFKA_BROKERS"].clone(),
        group_id: format!("duplicates-{}", Uuid::new_v4().simple()),
        topic: topic.clone(),
        client_id: "duplicates-test".into(),
        commit_interval: Duration::from_millis(200),
    })
    .expect("consumer");
    let stop = tokio_util::sync::CancellationToken::new();
    let handler = Counting(
        StageHandler::new(AddStage, pool.clone(), None),
        pool.clone(),
    );
    let running = tokio::spawn(consumer.run(handler, stop.clone().cancelled_owned()));
    wait_for(&pool, "effects", after.id, 1, Duration::from_secs(90)).await;
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("consumer stops cleanly");

    assert_eq!(
        count(&pool, "deliveries", duplicate.id).await,
        2,
        "both copies were delivered"
    );
    assert_eq!(
        count(&pool, "effects", duplicate.id).await,
        1,
        "and applied once"
    );
    assert_eq!(count(&pool, "effects", after.id).await, 1);
}

#[tokio::test]
async fn an_undecodable_message_is_dead_lettered_and_the_partition_moves_on() {
    let pool = database().await;
    let topic = fresh_topic().await;
    let producer = Producer::new(&stack()["KAFKA_BROKERS"], "poison-test").expect("producer");
    let poison_id = Uuid::new_v4().to_string();
    producer
        .send_raw(
            &topic,
            b"k",
            b"{not an envelope",
            &[("id", poison_id.as_bytes())],
        )
        .await
        .expect("produced");
    let after = command(5);
    produce(&topic, &after).await;

    let consumer = Consumer::new(&ConsumerOptions {
        brokers: stack()["KAFKA_BROKERS"].clone(),
        group_id: format!("poison-{}", Uuid::new_v4().simple()),
        topic,
        client_id: "poison-test".into(),
        commit_interval: Duration::from_millis(200),
    })
    .expect("consumer");
    let stop = tokio_util::sync::CancellationToken::new();
    let handler = StageHandler::new(AddStage, pool.clone(), None);
    let running = tokio::spawn(consumer.run(handler, stop.clone().cancelled_owned()));
    wait_for(&pool, "effects", after.id, 1, Duration::from_secs(90)).await;
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("consumer stops cleanly");
    assert!(
        dead_lettered(&poison_id).await,
        "the poison message is on the dead-letter topic"
    );
}

/// Whether the dead-letter topic holds a message whose `id` header is `id`, with its reason.
async fn dead_lettered(id: &str) -> bool {
    use rdkafka::ClientConfig;
    use rdkafka::consumer::{Consumer as _, StreamConsumer};
    use rdkafka::message::{Headers, Message as _};
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", &stack()["KAFKA_BROKERS"])
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
