//! A backtest survives its worker: against the real broker and Postgres, the worker running a
//! backtest is killed (SIGKILL) mid-replay; once its lease expired, a sweep (the stack's
//! pipeline's) runs the backtest again from nothing, so its summary counts each evaluation
//! once. Two workers given the same backtest (two groups), and the stack's sweep beside them,
//! run it once between them. A backtest recorded but never started is started by a sweep; one
//! whose workers kept dying is failed. The workers are this test binary re-run as child
//! processes, on a topic of the test's own, paced so that a backtest lasts seconds.

use std::time::{Duration, Instant};

use pipeline::{BacktestRunner, BacktestsStage, StageHandler};
use serde_json::{Value, json};
use sqlx::PgPool;
use topics::backtests::{BacktestsCommand, Sample, Start, Target};
use topics::{Envelope, Principal};
use uuid::Uuid;

use crate::support::{
    Counting, WorkerProcess, count, database, fresh_topic, produce_keyed, producer,
};

/// A pause per hundred evaluations in the workers: 5,000 take about 5 s, time to kill one.
const PACE: Duration = Duration::from_millis(100);
const EVALUATIONS: i64 = 5000;

/// Runs as a child process of these tests: the backtests stage, paced, counting deliveries.
#[tokio::test]
#[ignore = "started as a child process by the backtest tests"]
async fn backtest_worker_process() {
    let pool = database().await;
    let stop = tokio_util::sync::CancellationToken::new();
    let runner = BacktestRunner::new(&pool, PACE, stop.clone());
    let stage = BacktestsStage::new(runner.clone());
    let handler = StageHandler::new(stage, pool.clone(), None);
    // Until SIGTERM (or a SIGKILL); then, as the pipeline does, its backtests give their
    // leases back before it exits.
    WorkerProcess::serve(Counting(handler, pool)).await;
    stop.cancel();
    runner.drained().await;
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

/// Sends `Start` for a backtest of rule `score` version 2 on `topic`; answers its id and the
/// command's.
async fn start(topic: &str, tenant: Uuid) -> (Uuid, Uuid) {
    let id = Uuid::now_v7();
    let command = Envelope::new(
        Some(tenant),
        Principal::system("test"),
        "req-backtest",
        None,
        BacktestsCommand::from(Start {
            backtest_id: id,
            target: Target::Rule {
                key: "score".into(),
                version: 2,
            },
            sample: Sample {
                last_days: 30,
                limit: 5000,
            },
        }),
    );
    produce_keyed(&producer("backtest-test"), topic, &command).await;
    (id, command.id)
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
    let worker = spawn_worker(&topic, &format!("backtests-{}", Uuid::new_v4().simple()));
    let (id, _) = start(&topic, tenant).await;

    // Killed as soon as it is running, part of the way (about five seconds before its end).
    let early = wait_until(&pool, id, Duration::from_secs(90), |b| {
        b.status == "running" && b.progress_done > 0
    })
    .await;
    worker.kill();
    assert_eq!(early.progress_total, EVALUATIONS as i32);
    let killed = standing(&pool, id).await.expect("backtest");
    assert_eq!(
        (killed.status.as_str(), killed.attempts),
        ("running", 1),
        "{killed:?}"
    );
    assert!(killed.progress_done < killed.progress_total, "{killed:?}");

    // Once the lease expired, a sweep of the stack's pipeline runs it again, from nothing.
    let done = wait_until(&pool, id, Duration::from_secs(120), |b| {
        b.status == "completed"
    })
    .await;
    // Two at least: the killed one and the sweep's (a busy machine may need another).
    assert!(done.attempts >= 2, "{done:?}");
    assert_eq!(done.progress_done, done.progress_total);
    assert_counted_once(&done.summary.expect("a summary"));
}

#[tokio::test]
async fn a_worker_stopped_mid_way_gives_its_backtest_back_uncounted() {
    let pool = database().await;
    let tenant = tenant_with_evaluations(&pool).await;
    let topic = fresh_topic().await;
    let worker = spawn_worker(&topic, &format!("backtests-{}", Uuid::new_v4().simple()));
    let (id, _) = start(&topic, tenant).await;
    wait_until(&pool, id, Duration::from_secs(90), |b| {
        b.status == "running" && b.progress_done > 0
    })
    .await;
    worker.terminate().await;
    // Given back, its attempt uncounted (0), unless a sweep already took it (1).
    let stopped = standing(&pool, id).await.expect("backtest");
    assert!(stopped.attempts <= 1, "{stopped:?}");
    // Its lease expired as it stopped: a sweep of the stack's pipeline runs it as attempt 1.
    let done = wait_until(&pool, id, Duration::from_secs(60), |b| {
        b.status == "completed"
    })
    .await;
    assert_eq!(done.attempts, 1, "{done:?}");
    assert_counted_once(&done.summary.expect("a summary"));
}

#[tokio::test]
async fn two_workers_given_the_same_backtest_run_it_once() {
    let pool = database().await;
    let tenant = tenant_with_evaluations(&pool).await;
    let topic = fresh_topic().await;
    // Two groups: each gets every command, as two pipelines would during a rebalance; the
    // stack's pipeline sweeps beside them while the backtest runs for seconds.
    let one = spawn_worker(&topic, &format!("backtests-{}", Uuid::new_v4().simple()));
    let other = spawn_worker(&topic, &format!("backtests-{}", Uuid::new_v4().simple()));
    let (id, command) = start(&topic, tenant).await;
    // Running for seconds under one worker's lease, renewed, while the other and the stack's
    // sweep look on: never a second attempt.
    let running = wait_until(&pool, id, Duration::from_secs(90), |b| {
        b.status == "running" && b.progress_done > 0
    })
    .await;
    assert_eq!(running.attempts, 1);
    wait_until(&pool, id, Duration::from_secs(120), |b| {
        b.status == "completed"
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&pool, "deliveries", command).await < 2 {
        assert!(Instant::now() < deadline, "both workers get the command");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    one.kill();
    other.kill();
    let after = standing(&pool, id).await.expect("backtest");
    assert_eq!((after.attempts, after.status.as_str()), (1, "completed"));
    assert_counted_once(&after.summary.expect("a summary"));
}

/// Inserts backtest `id` of rule `score` version 2 as a worker would leave it.
async fn left(pool: &PgPool, tenant: Uuid, (status, attempts, lease): (&str, i32, bool)) -> Uuid {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO backtests (id, tenant_id, kind, key, version, last_days, sample_limit, \
         status, requested_by, requested_by_name, created_at, attempts, lease_id, \
         running_until, progress_done) \
         VALUES ($1, $2, 'rule', 'score', 2, 30, 100, $3, 'test', 'Test', now(), $4, \
                 CASE WHEN $5 THEN gen_random_uuid() END, \
                 CASE WHEN $5 THEN now() - interval '1 second' END, 0)",
    )
    .bind(id)
    .bind(tenant)
    .bind(status)
    .bind(attempts)
    .bind(lease)
    .execute(pool)
    .await
    .expect("backtest");
    id
}

#[tokio::test]
async fn a_sweep_starts_a_backtest_never_started_and_fails_one_out_of_attempts() {
    let pool = database().await;
    let tenant = tenant_with_evaluations(&pool).await;
    // Recorded, but its worker died before the reservation was used (or the command was
    // dead-lettered after it): no lease at all.
    let orphan = left(&pool, tenant, ("queued", 0, false)).await;
    // Five attempts made, the last one's lease expired: what five dead workers leave.
    let exhausted = left(&pool, tenant, ("running", 5, true)).await;

    let started = wait_until(&pool, orphan, Duration::from_secs(60), |b| {
        b.status == "completed"
    })
    .await;
    assert_eq!(started.attempts, 1);
    assert_eq!(started.summary.expect("a summary")["evaluated"], json!(100));
    let failed = wait_until(&pool, exhausted, Duration::from_secs(60), |b| {
        b.status == "failed"
    })
    .await;
    assert_eq!(failed.attempts, 5);
    assert_eq!(
        failed.error.as_deref(),
        Some("gave up after 5 attempts: each worker running it stopped")
    );
    assert_eq!(failed.summary, None);
}
