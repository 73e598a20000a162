//! A backtest survives its worker: against the real broker and Postgres, the worker running a
//! backtest is killed (SIGKILL) mid-replay; the command is redelivered to the group's next
//! worker, which waits out the dead worker's lease and runs the backtest again from nothing,
//! so its summary counts each evaluation once. Two workers given the same backtest (two
//! groups) run it once between them. A backtest whose workers kept dying is failed. The
//! workers are this test binary re-run as child processes, on a topic of the test's own.

use std::time::{Duration, Instant};

use pipeline::{BacktestsStage, StageHandler};
use serde_json::{Value, json};
use sqlx::PgPool;
use topics::backtests::{Command, Sample, Target};
use topics::{Envelope, Principal};
use uuid::Uuid;

use crate::support::{WorkerProcess, database, fresh_topic, produce_keyed, producer};

/// A pause per hundred evaluations in the workers: 3,000 take about 3 s, time to kill one.
const PACE: Duration = Duration::from_millis(100);
const EVALUATIONS: i64 = 3000;

/// Runs as a child process of these tests: the backtests stage, paced.
#[tokio::test]
#[ignore = "started as a child process by the backtest tests"]
async fn backtest_worker_process() {
    let pool = database().await;
    let stage = BacktestsStage::new(pool.clone(), PACE);
    WorkerProcess::serve(StageHandler::new(stage, pool, None)).await;
}

fn spawn_worker(topic: &str, group: &str) -> WorkerProcess {
    WorkerProcess::start("backtests::backtest_worker_process", topic, group)
}

/// A tenant with rule `score` version 1 (`score gt 50`) published and version 2 (`gt 40`), and
/// EVALUATIONS recorded evaluations of it, scores 0 to 99 in turn.
async fn tenant_with_evaluations(pool: &PgPool) -> Uuid {
    let tenant = Uuid::new_v4();
    for (version, over) in [(1, 50), (2, 40)] {
        sqlx::query(
            "INSERT INTO definition_versions (tenant_id, kind, key, version, body, created_by) \
             VALUES ($1, 'rule', 'score', $2, $3, 'test')",
        )
        .bind(tenant)
        .bind(version)
        .bind(json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": over}}))
        .execute(pool)
        .await
        .expect("version");
    }
    sqlx::query(
        "INSERT INTO definition_keys (tenant_id, kind, key, latest_version, published_version) \
         VALUES ($1, 'rule', 'score', 2, 1)",
    )
    .bind(tenant)
    .execute(pool)
    .await
    .expect("key");
    sqlx::query(
        "INSERT INTO rule_evaluations (id, tenant_id, subject_id, run_id, workflow_key, \
         workflow_version, step_id, rule_set_key, rule_set_version, decision, rules, rule_keys, \
         data, duration_ms, evaluated_at) \
         SELECT gen_random_uuid(), $1, gen_random_uuid(), gen_random_uuid(), 'onboarding', 1, \
                'checks', 'checks', 1, CASE WHEN i % 100 > 50 THEN 'fail' ELSE 'pass' END, \
                jsonb_build_array(jsonb_build_object('id', 'score', 'key', 'score', \
                  'version', 1, 'type', 'field', \
                  'outcome', CASE WHEN i % 100 > 50 THEN 'fail' ELSE 'pass' END)), \
                ARRAY['score'], jsonb_build_object('score', i % 100), 0.1, \
                now() - make_interval(mins => i::int) \
         FROM generate_series(0, $2 - 1) AS i",
    )
    .bind(tenant)
    .bind(EVALUATIONS)
    .execute(pool)
    .await
    .expect("evaluations");
    tenant
}

/// Sends `Start` for a backtest of rule `score` version 2 on `topic`; answers its id.
async fn start(topic: &str, tenant: Uuid) -> Uuid {
    let id = Uuid::now_v7();
    let command = Envelope::new(
        Some(tenant),
        Principal::system("test"),
        "req-backtest",
        None,
        Command::Start {
            backtest_id: id,
            target: Target::Rule {
                key: "score".into(),
                version: 2,
            },
            sample: Sample {
                last_days: 30,
                limit: 5000,
            },
        },
    );
    produce_keyed(&producer("backtest-test"), topic, &command).await;
    id
}

#[derive(Debug, sqlx::FromRow)]
struct Standing {
    status: String,
    progress_done: i32,
    progress_total: i32,
    attempts: i32,
    summary: Option<Value>,
    error: Option<String>,
}

async fn standing(pool: &PgPool, id: Uuid) -> Option<Standing> {
    sqlx::query_as(
        "SELECT status, progress_done, progress_total, attempts, summary, error \
         FROM backtests WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await
    .expect("backtest read")
}

/// Waits until the backtest stands as `until` says, for at most `limit`.
async fn wait_until(
    pool: &PgPool,
    id: Uuid,
    limit: Duration,
    until: impl Fn(&Standing) -> bool,
) -> Standing {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = standing(pool, id).await
            && until(&found)
        {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "backtest {id}: {:?}",
            standing(pool, id).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the summary must say of EVALUATIONS scores 0 to 99 in turn, `gt 50` → `gt 40`.
fn assert_counted_once(summary: &Value) {
    let rounds = EVALUATIONS / 100;
    assert_eq!(summary["evaluated"], json!(EVALUATIONS));
    assert_eq!(summary["outcomes"]["fail"], json!(59 * rounds), "41..=99");
    assert_eq!(summary["outcomes"]["pass"], json!(41 * rounds));
    assert_eq!(summary["wouldChange"], json!({"pass->fail": 10 * rounds}));
    assert_eq!(
        summary["overlap"],
        json!({"both": 49 * rounds, "versionOnly": 10 * rounds, "neither": 41 * rounds})
    );
    let daily: i64 = summary["daily"]
        .as_array()
        .expect("daily")
        .iter()
        .map(|day| day["evaluated"].as_i64().expect("evaluated"))
        .sum();
    assert_eq!(daily, EVALUATIONS);
}

#[tokio::test]
async fn a_backtest_whose_worker_is_killed_mid_way_is_run_again_and_counted_once() {
    let pool = database().await;
    let tenant = tenant_with_evaluations(&pool).await;
    let topic = fresh_topic().await;
    let group = format!("backtests-{}", Uuid::new_v4().simple());
    let first = spawn_worker(&topic, &group);
    let id = start(&topic, tenant).await;

    // Running, part of the way, with progress moving.
    let early = wait_until(&pool, id, Duration::from_secs(90), |b| {
        b.status == "running" && b.progress_done > 0
    })
    .await;
    assert_eq!(early.progress_total, EVALUATIONS as i32);
    let later = wait_until(&pool, id, Duration::from_secs(30), |b| {
        b.progress_done > early.progress_done
    })
    .await;
    assert!(later.progress_done < later.progress_total, "{later:?}");
    first.kill();
    let killed = standing(&pool, id).await.expect("backtest");
    assert_eq!((killed.status.as_str(), killed.attempts), ("running", 1));

    // The group's next worker gets the command again and, once the lease expired, runs it
    // from nothing.
    let successor = spawn_worker(&topic, &group);
    let done = wait_until(&pool, id, Duration::from_secs(120), |b| {
        b.status == "completed"
    })
    .await;
    successor.kill();
    assert_eq!(done.attempts, 2);
    assert_eq!(done.progress_done, done.progress_total);
    assert_counted_once(&done.summary.expect("a summary"));
}

#[tokio::test]
async fn two_workers_given_the_same_backtest_run_it_once() {
    let pool = database().await;
    let tenant = tenant_with_evaluations(&pool).await;
    let topic = fresh_topic().await;
    // Two groups: each gets every command, as two pipelines would during a rebalance.
    let one = spawn_worker(&topic, &format!("backtests-{}", Uuid::new_v4().simple()));
    let other = spawn_worker(&topic, &format!("backtests-{}", Uuid::new_v4().simple()));
    let id = start(&topic, tenant).await;
    let done = wait_until(&pool, id, Duration::from_secs(120), |b| {
        b.status == "completed"
    })
    .await;
    // The other worker, holding the command too, finds it finished and does nothing.
    tokio::time::sleep(Duration::from_secs(2)).await;
    one.kill();
    other.kill();
    let after = standing(&pool, id).await.expect("backtest");
    assert_eq!((after.attempts, after.status.as_str()), (1, "completed"));
    assert_eq!(after.summary, done.summary);
    assert_counted_once(&done.summary.expect("a summary"));
}

#[tokio::test]
async fn a_backtest_whose_workers_kept_dying_is_failed_with_why() {
    let pool = database().await;
    let tenant = tenant_with_evaluations(&pool).await;
    let topic = fresh_topic().await;
    let id = Uuid::now_v7();
    // Five attempts made, the last one's lease expired: what five dead workers leave.
    sqlx::query(
        "INSERT INTO backtests (id, tenant_id, kind, key, version, last_days, sample_limit, \
         status, requested_by, requested_by_name, created_at, attempts, lease_id, \
         running_until, progress_done) \
         VALUES ($1, $2, 'rule', 'score', 2, 30, 100, 'running', 'test', 'Test', now(), 5, \
                 gen_random_uuid(), now() - interval '1 second', 40)",
    )
    .bind(id)
    .bind(tenant)
    .execute(&pool)
    .await
    .expect("backtest");
    let worker = spawn_worker(&topic, &format!("backtests-{}", Uuid::new_v4().simple()));
    let command = Envelope::new(
        Some(tenant),
        Principal::system("test"),
        "req-backtest",
        None,
        Command::Start {
            backtest_id: id,
            target: Target::Rule {
                key: "score".into(),
                version: 2,
            },
            sample: Sample {
                last_days: 30,
                limit: 100,
            },
        },
    );
    produce_keyed(&producer("backtest-test"), &topic, &command).await;
    let failed = wait_until(&pool, id, Duration::from_secs(90), |b| b.status == "failed").await;
    worker.kill();
    assert_eq!(failed.attempts, 5);
    assert!(
        failed
            .error
            .as_deref()
            .is_some_and(|e| e.contains("gave up after 5 attempts")),
        "{failed:?}"
    );
    assert_eq!(failed.summary, None);
}
