//! Sessions settle once whatever races them (SPEC §3.2 "first wins"): many runs of the example
//! app's asynchronous `verify` each wait on a session (a fake vendor opens them); then, at the
//! same moment, each session's callback deadline comes due and the vendor sends it a completed
//! and a failed event. Every session ends in exactly one terminal state, with one
//! `app.callback.received` audit row when an event settled it and none when the timeout did,
//! both events recorded (one settling at most), and its run ended the way its session did.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::runs::workflow;
use crate::support::apps::Tenant;
use crate::support::instance::Instance;
use crate::support::{client, database, vendor};

/// Sessions raced; `WEBHOOK_RACE_SESSIONS` overrides.
fn sessions() -> usize {
    std::env::var("WEBHOOK_RACE_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000)
}

const IN_FLIGHT: usize = 32;

#[tokio::test]
async fn a_completed_event_a_failed_event_and_the_timeout_race_and_one_wins() {
    let n = sessions();
    // An instance of our own without a rate limit: the vendor's thousands of webhooks come from
    // one address, and the admin starts a thousand runs.
    let api = Instance::start(&[("API_RATE_LIMIT_PER_MINUTE", "0")]).await;
    let tenant = Tenant::new();
    let call = |method: Method, path: String, body: Option<Value>| {
        let mut request = client()
            .request(method, api.url(&path))
            .bearer_auth(&tenant.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let response = request.send().await.expect("request");
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.expect("JSON"))
        }
    };
    let (status, versions) = call(Method::GET, "/apps/vendor-app/versions".into(), None).await;
    assert_eq!(status, 200, "{versions}");
    let version = versions["items"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["status"] == "published"))
        .expect("the catalogue's vendor-app")["id"]
        .clone();
    let (status, body) = call(
        Method::POST,
        "/apps/vendor-app/secrets/API_KEY".into(),
        Some(json!({"value": "race-key"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let base_url = vendor::start().await;
    let install = json!({"versionId": version, "config": {"baseUrl": base_url}});
    let (status, body) = call(
        Method::PUT,
        "/apps/vendor-app/install".into(),
        Some(install),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    workflow(
        &tenant,
        "race-verify",
        json!([{"id": "idv", "type": "call_app", "app": "vendor-app", "action": "verify",
                "inputMapping": {"name": "person.name"}, "outputKey": "idv"}]),
    )
    .await;

    let starts = futures::stream::iter(0..n)
        .map(|i| {
            let body = json!({"definitionKey": "race-verify", "context": {"person": {"name": format!("P{i}")}}});
            call(Method::POST, "/workflow-runs".into(), Some(body))
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    assert!(
        starts.iter().all(|(status, _)| *status == 202),
        "every run starts"
    );

    let pool = database().await;
    let pending = wait_until(
        &pool,
        n,
        "SELECT count(*) FROM app_callback_sessions WHERE tenant_id = $1 AND status = 'pending'",
        tenant.id,
    )
    .await;
    assert_eq!(pending, n as i64, "every run waits on its session");
    let opened: Vec<(Uuid, String, Uuid)> = sqlx::query_as(
        "SELECT id, external_id, workflow_run_id FROM app_callback_sessions WHERE tenant_id = $1",
    )
    .bind(tenant.id)
    .fetch_all(&pool)
    .await
    .expect("sessions");
    let runs: Vec<Uuid> = opened.iter().map(|(_, _, run)| *run).collect();

    // Every deadline comes due two seconds from now, by the database's clock.
    sqlx::query(
        "WITH due AS (SELECT now() + interval '2 seconds' AS at) \
         , calls AS (UPDATE workflow_run_calls SET deadline_at = (SELECT at FROM due) \
                     WHERE run_id = ANY($1) AND status = 'pending' RETURNING 1) \
         UPDATE run_timers SET due_at = (SELECT at FROM due) \
         WHERE run_id = ANY($1) AND purpose = 'callback_timeout'",
    )
    .bind(&runs)
    .execute(&pool)
    .await
    .expect("deadlines moved");
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let url = api.url("/webhooks/apps/vendor-app");
    let deliveries = opened.iter().flat_map(|(_, external_id, _)| {
        ["approved", "declined"].map(|result| {
            json!({"sessionId": external_id, "eventId": format!("{external_id}-{result}"), "result": result})
        })
    });
    let answers = futures::stream::iter(deliveries)
        .map(|body| deliver(&url, body))
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    let by_status = answers.iter().fold(HashMap::new(), |mut counts, status| {
        *counts.entry(*status).or_insert(0) += 1;
        counts
    });
    assert!(
        by_status.keys().all(|status| [200, 202].contains(status)),
        "every delivery is answered 200 or 202 in the end: {by_status:?}"
    );

    let ended = wait_until(&pool, n, "SELECT count(*) FROM workflow_runs WHERE tenant_id = $1 AND status IN ('completed', 'failed')", tenant.id).await;
    assert_eq!(ended, n as i64, "every run ended");
    // Every event is recorded (applied a little after its answer).
    wait_until(
        &pool,
        2 * n,
        "SELECT count(*) FROM app_callback_events WHERE tenant_id = $1",
        tenant.id,
    )
    .await;

    let outcomes: Vec<Outcome> = sqlx::query_as(
        "SELECT s.status AS session, s.error, \
           (SELECT count(*) FROM app_callback_events e WHERE e.session_id = s.id) AS events, \
           (SELECT count(*) FROM app_callback_events e WHERE e.session_id = s.id \
              AND e.outcome = 'settled') AS settled, \
           (SELECT count(*) FROM audit_events a WHERE a.tenant_id = s.tenant_id \
              AND a.action = 'app.callback.received' AND a.subject_id = s.id::text) AS audits, \
           r.status AS run, r.error AS run_error \
         FROM app_callback_sessions s JOIN workflow_runs r ON r.id = s.workflow_run_id \
         WHERE s.tenant_id = $1",
    )
    .bind(tenant.id)
    .fetch_all(&pool)
    .await
    .expect("outcomes");
    assert_eq!(outcomes.len(), n);
    let mut won = HashMap::new();
    for outcome in outcomes {
        let Outcome {
            session,
            error,
            events,
            settled,
            audits,
            run,
            run_error,
        } = outcome;
        *won.entry(session.clone()).or_insert(0) += 1;
        assert_eq!(events, 2, "both events recorded");
        match session.as_str() {
            "completed" => {
                assert_eq!((settled, audits), (1, 1));
                assert_eq!((run.as_str(), run_error), ("completed", None));
            }
            "failed" => {
                assert_eq!(
                    (settled, audits, error.as_deref()),
                    (1, 1, Some("declined"))
                );
                assert_eq!(
                    run_error.as_deref(),
                    Some("AppCallbackFailed: vendor-app verify")
                );
            }
            "timed_out" => {
                assert_eq!((settled, audits), (0, 0));
                assert_eq!(
                    run_error.as_deref(),
                    Some("CallbackTimeout: vendor-app verify")
                );
            }
            other => panic!("a session ended {other}"),
        }
    }
    eprintln!("{n} sessions: won by {won:?}; answers {by_status:?}");
}

/// How one session and its run ended.
#[derive(sqlx::FromRow)]
struct Outcome {
    session: String,
    error: Option<String>,
    events: i64,
    settled: i64,
    audits: i64,
    run: String,
    run_error: Option<String>,
}

/// Posts one vendor event until it is answered other than 503 (the vendor retries), for at
/// most two minutes, and answers that status.
async fn deliver(url: &str, body: Value) -> u16 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let response = client()
            .post(url)
            .json(&body)
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        if status != 503 || tokio::time::Instant::now() > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls `count_sql` (bound to `tenant`) until it reaches `at_least` or two minutes pass;
/// answers the last count.
async fn wait_until(
    pool: &sqlx::PgPool,
    at_least: usize,
    count_sql: &'static str,
    tenant: Uuid,
) -> i64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    loop {
        let count: i64 = sqlx::query_scalar(count_sql)
            .bind(tenant)
            .fetch_one(pool)
            .await
            .expect("count");
        if count >= at_least as i64 || tokio::time::Instant::now() > deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
