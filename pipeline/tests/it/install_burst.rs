//! A burst of install commands survives a killed worker: the real installs stage consumes a
//! topic of its own (as many partitions as `installs.commands`, so its lanes run concurrently);
//! the worker is killed (SIGKILL) mid-burst with none of its offsets committed; its successor
//! gets every command again. Every command ends applied exactly once (one inbox row, one audit
//! row), the ones applied before the kill are answered again from the inbox, and each app's
//! install holds the config of its last command: order per key survived the crash.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use pipeline::{InstallsStage, Stage, StageHandler};
use serde_json::{Value, json};
use sqlx::PgPool;
use topics::installs::{Install, InstallsCommand as InstallCommand};
use topics::{Envelope, Message, Principal, Reply, Topic};
use uuid::Uuid;

use crate::support::{WorkerProcess, database, produce_keyed, producer, redis_client, replies};

const APPS: usize = 12;
const PER_APP: usize = 60;

/// Runs as a child process of `a_burst_of_installs_survives_a_killed_worker`: the installs
/// stage, never committing within the test, so the successor gets every command again.
#[tokio::test]
#[ignore = "started as a child process by the install burst test"]
async fn install_worker_process() {
    let pool = database().await;
    WorkerProcess::serve(StageHandler::new(
        InstallsStage,
        pool,
        Some(replies().await),
    ))
    .await;
}

fn spawn_worker(topic: &str, group: &str) -> WorkerProcess {
    WorkerProcess::start("install_burst::install_worker_process", topic, group)
}

#[tokio::test]
async fn a_burst_of_installs_survives_a_killed_worker() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let names: Vec<String> = (0..APPS).map(|n| format!("burst-app-{n}")).collect();
    let mut versions = HashMap::new();
    for name in &names {
        versions.insert(name.clone(), published_version(&pool, tenant, name).await);
    }
    // Commands interleaved across apps, as a burst of many callers arrives.
    let commands: Vec<Envelope<InstallCommand>> = (0..PER_APP)
        .flat_map(|n| names.iter().map(move |name| (n, name)))
        .map(|(n, name)| {
            Envelope::new(
                Some(tenant),
                Principal::system("burst-test"),
                "req-burst",
                None,
                InstallCommand::from(Install {
                    name: name.clone(),
                    version_id: versions[name],
                    enabled: n % 5 != 4,
                    config: json!({ "n": n }),
                }),
            )
        })
        .collect();
    let ids: Vec<Uuid> = commands.iter().map(|c| c.id).collect();
    let mut replies = ReplyCounter::subscribe().await;

    let topic = fresh_installs_topic().await;
    let producer = producer("burst-test");
    for command in &commands {
        produce_keyed(&producer, &topic, command).await;
    }

    let group = format!("install-burst-{}", Uuid::new_v4().simple());
    let worker = spawn_worker(&topic, &group);
    let total = commands.len() as i64;
    // Killed past half the burst: more applied before the kill than a batch of unpublished
    // replies per lane could hide, so the redeliveries' replies are counted on most of them.
    wait_for_applied(&pool, &ids, total / 2).await;
    worker.kill();
    let before_kill = applied(&pool, &ids).await;
    assert!(
        before_kill < total,
        "the worker finished the burst before it was killed; the test proves nothing"
    );

    let successor = spawn_worker(&topic, &group);
    wait_for_applied(&pool, &ids, total).await;
    // Every command applied before the kill is redelivered to the successor and answered from
    // the inbox: a second reply each, and still one effect. (A lane killed between a commit and
    // its replies published the first replies never: at most one batch per lane.)
    let unpublished =
        InstallCommand::TOPIC.partitions as i64 * <InstallsStage as Stage>::BATCH_LIMIT as i64;
    let answered_twice = replies
        .until_answered(&ids, before_kill - unpublished)
        .await;
    successor.kill();

    assert!(
        answered_twice >= before_kill - unpublished,
        "{answered_twice} of the {before_kill} applied before the kill answered again"
    );
    let audited: Vec<(Uuid, i64)> = sqlx::query_as(
        "SELECT command_id, count(*) FROM audit_events WHERE command_id = ANY($1) GROUP BY 1",
    )
    .bind(&ids)
    .fetch_all(&pool)
    .await
    .expect("audit rows");
    assert_eq!(audited.len(), ids.len(), "every command has its audit row");
    assert!(audited.iter().all(|(_, n)| *n == 1), "one audit row each");

    let installs: Vec<(String, Value, bool)> = sqlx::query_as(
        "SELECT app_name, config, enabled FROM app_installs WHERE tenant_id = $1 ORDER BY 1",
    )
    .bind(tenant)
    .fetch_all(&pool)
    .await
    .expect("installs");
    assert_eq!(installs.len(), APPS);
    let last = PER_APP - 1;
    for (name, config, enabled) in installs {
        assert_eq!(
            config,
            json!({ "n": last }),
            "{name} ends on its last command"
        );
        assert_eq!(enabled, last % 5 != 4, "{name}");
    }
    // Per app, the audit trail is the commands in the order they were produced.
    let trail: Vec<(String, Uuid)> = sqlx::query_as(
        "SELECT subject_id, command_id FROM audit_events WHERE tenant_id = $1 \
         ORDER BY occurred_at, id",
    )
    .bind(tenant)
    .fetch_all(&pool)
    .await
    .expect("trail");
    for name in &names {
        let applied: Vec<Uuid> = trail
            .iter()
            .filter(|(subject, _)| subject == name)
            .map(|(_, id)| *id)
            .collect();
        let produced: Vec<Uuid> = commands
            .iter()
            .filter(
                |c| matches!(&c.body, InstallCommand::Install(install) if install.name == *name),
            )
            .map(|c| c.id)
            .collect();
        assert_eq!(applied, produced, "{name} applied in produce order");
    }
}

/// A published version of the tenant's own app that needs no secret.
async fn published_version(pool: &PgPool, tenant: Uuid, name: &str) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO app_versions (id, tenant_id, name, version, sha256, size_bytes, manifest, \
         status, uploaded_by, uploaded_at, published_at) \
         VALUES ($1, $2, $3, '1.0.0', $4, 100, $5, 'published', 'burst-test', now(), now())",
    )
    .bind(id)
    .bind(tenant)
    .bind(name)
    .bind("0".repeat(64))
    .bind(json!({ "name": name, "version": "1.0.0", "secrets": [], "hosts": ["vendor.example"], "actions": {} }))
    .execute(pool)
    .await
    .expect("version row");
    id
}

async fn fresh_installs_topic() -> String {
    let name: &'static str =
        Box::leak(format!("test.installs.{}", Uuid::new_v4().simple()).into_boxed_str());
    let topic = Topic {
        name,
        ..InstallCommand::TOPIC
    };
    topics::admin::ensure_topics(&crate::support::cluster(), &[topic])
        .await
        .expect("topic created");
    name.to_owned()
}

async fn applied(pool: &PgPool, ids: &[Uuid]) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM inbox WHERE command_id = ANY($1)")
        .bind(ids)
        .fetch_one(pool)
        .await
        .expect("count")
}

async fn wait_for_applied(pool: &PgPool, ids: &[Uuid], at_least: i64) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while applied(pool, ids).await < at_least {
        assert!(Instant::now() < deadline, "never {at_least} applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Counts the replies published per command, on the stack's Redis.
struct ReplyCounter {
    messages: futures::stream::BoxStream<'static, redis::Msg>,
    seen: HashMap<Uuid, u32>,
}

impl ReplyCounter {
    async fn subscribe() -> Self {
        let mut pubsub = redis_client().get_async_pubsub().await.expect("pubsub");
        pubsub
            .psubscribe(format!("{}*", topics::reply::CHANNEL_PREFIX))
            .await
            .expect("subscribed");
        Self {
            messages: pubsub.into_on_message().boxed(),
            seen: HashMap::new(),
        }
    }

    /// Reads replies until every one of `ids` has had one and `twice` of them two or more (or a
    /// minute passes); answers how many have had two.
    async fn until_answered(&mut self, ids: &[Uuid], twice: i64) -> i64 {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let answered = ids.iter().filter(|id| self.seen.contains_key(id)).count();
            let again = ids
                .iter()
                .filter(|id| self.seen.get(id).is_some_and(|n| *n >= 2))
                .count() as i64;
            if answered == ids.len() && again >= twice {
                return again;
            }
            let Ok(Some(message)) = tokio::time::timeout_at(deadline, self.messages.next()).await
            else {
                assert_eq!(answered, ids.len(), "every command answered");
                return again;
            };
            let id = message
                .get_channel_name()
                .strip_prefix(topics::reply::CHANNEL_PREFIX)
                .and_then(|id| Uuid::try_parse(id).ok());
            let payload: String = message.get_payload().unwrap_or_default();
            if let (Some(id), Ok(Reply::Applied { .. })) =
                (id, serde_json::from_str::<Reply>(&payload))
            {
                *self.seen.entry(id).or_default() += 1;
            }
        }
    }
}
