//! A rule-set step's evaluation is recorded once however often the run's commands come again:
//! against the stack's pipeline, a run's `Start` is delivered a second time after the run
//! completed (as after a worker killed between its commit and its offset's), and timers'
//! `Resume`s for it arrive besides. Each delivery takes the run on from what is stored, and the
//! run past the step was recorded once, in the transaction that moved it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::PgPool;
use topics::catalogue::RUNS;
use topics::runs::{Resume, RunsCommand, Start};
use topics::{Envelope, Principal};
use uuid::Uuid;

use crate::support::{count, database, produce_keyed, producer, wait_for};

/// Version 1 of `kind`/`key`, published, for `tenant`.
async fn published(pool: &PgPool, tenant: Uuid, (kind, key): (&str, &str), body: Value) {
    sqlx::query(
        "WITH version AS ( \
           INSERT INTO definition_versions (tenant_id, kind, key, version, body, created_by, \
             published_at, published_by) \
           VALUES ($1, $2, $3, 1, $4, 'test', now(), 'test') RETURNING tenant_id, kind, key) \
         INSERT INTO definition_keys (tenant_id, kind, key, latest_version, published_version) \
         SELECT tenant_id, kind, key, 1, 1 FROM version",
    )
    .bind(tenant)
    .bind(kind)
    .bind(key)
    .bind(body)
    .execute(pool)
    .await
    .expect("definition");
}

fn command(tenant: Uuid, body: impl Into<RunsCommand>) -> Envelope<RunsCommand> {
    Envelope::new(
        Some(tenant),
        Principal::system("test"),
        "req-evaluations",
        None,
        body.into(),
    )
}

async fn run_status(pool: &PgPool, run: Uuid) -> Option<(String, i32)> {
    sqlx::query_as("SELECT status, position FROM workflow_runs WHERE id = $1")
        .bind(run)
        .fetch_optional(pool)
        .await
        .expect("run")
}

async fn evaluations(pool: &PgPool, run: Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM rule_evaluations WHERE run_id = $1")
        .bind(run)
        .fetch_one(pool)
        .await
        .expect("evaluations")
}

#[tokio::test]
async fn a_rule_set_steps_commands_redelivered_record_its_evaluation_once() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let rules = json!({"rules": [{"id": "score", "type": "field", "path": "score",
                                  "failWhen": {"op": "gt", "value": 50}}]});
    published(&pool, tenant, ("rule_set", "checks"), rules).await;
    let steps = json!({"steps": [
        {"id": "checks", "type": "rule_set", "ruleSet": "checks", "outputKey": "verdict"},
        {"id": "again", "type": "rule_set", "ruleSet": "checks", "outputKey": "second"}]});
    published(&pool, tenant, ("workflow", "onboarding"), steps).await;

    let run = Uuid::now_v7();
    let start = command(
        tenant,
        Start {
            run_id: run,
            definition_key: "onboarding".into(),
            version: None,
            subject_id: None,
            context: json!({"score": 70}),
        },
    );
    let producer = producer("evaluations-test");
    produce_keyed(&producer, RUNS.name, &start).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while run_status(&pool, run).await.map(|(status, _)| status) != Some("completed".into()) {
        assert!(
            Instant::now() < deadline,
            "{:?}",
            run_status(&pool, run).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The same Start again, and timers' Resumes: each is applied (or answered from the inbox)
    // and then advances the run from what is stored.
    produce_keyed(&producer, RUNS.name, &start).await;
    let resumes: Vec<_> = (0..3)
        .map(|_| command(tenant, Resume { run_id: run }))
        .collect();
    for resume in &resumes {
        produce_keyed(&producer, RUNS.name, resume).await;
    }
    // One partition, one writer: once the last Resume is in the inbox, the ones before it
    // (the Start among them) and their advances are done.
    let last = resumes.last().expect("resumes").id;
    wait_for(&pool, "inbox", last, 1, Duration::from_secs(60)).await;

    assert_eq!(count(&pool, "inbox", start.id).await, 1);
    assert_eq!(run_status(&pool, run).await, Some(("completed".into(), 2)));
    assert_eq!(evaluations(&pool, run).await, 2, "one evaluation a step");
    let steps: Vec<(String, String)> = sqlx::query_as(
        "SELECT step_id, decision FROM rule_evaluations WHERE run_id = $1 ORDER BY step_id",
    )
    .bind(run)
    .fetch_all(&pool)
    .await
    .expect("steps");
    assert_eq!(
        steps,
        [
            ("again".into(), "fail".into()),
            ("checks".into(), "fail".into())
        ]
    );
}
