//! Sessions settle once whatever races them (SPEC §3.2 "first wins"): many runs of the example
//! app's asynchronous `verify` each wait on a session (a fake vendor opens them); then, at the
//! same moment, each session's callback deadline comes due and the vendor sends it a completed
//! and a failed event. Every session ends in exactly one terminal state, with one
//! `app.callback.received` audit row when an event settled it and none when the timeout did,
//! both events recorded (one settling at most), and its run ended the way its session did. And
//! the vendor is told the truth: the one event that settled a session was answered `received`,
//! every other final event `stale` with the status the session settled to, whether it raced
//! (on one API instance or two) or came after.

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

/// An API instance of our own without a rate limit (the vendor's thousands of webhooks come
/// from one address, and the admin starts a thousand runs), and a tenant with the example app
/// installed against a fake vendor.
struct Racing {
    api: Instance,
    tenant: Tenant,
}

impl Racing {
    async fn start() -> Self {
        let api = Instance::start(&[("API_RATE_LIMIT_PER_MINUTE", "0")]).await;
        let racing = Self {
            api,
            tenant: Tenant::new(),
        };
        let (status, versions) = racing
            .call(Method::GET, "/apps/vendor-app/versions", None)
            .await;
        assert_eq!(status, 200, "{versions}");
        let version = versions["items"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["status"] == "published"))
            .expect("the catalogue's vendor-app")["id"]
            .clone();
        let secret = Some(json!({"value": "race-key"}));
        let (status, body) = racing
            .call(Method::POST, "/apps/vendor-app/secrets/API_KEY", secret)
            .await;
        assert_eq!(status, 200, "{body}");
        let base_url = vendor::start().await;
        let install = json!({"versionId": version, "config": {"baseUrl": base_url}});
        let (status, body) = racing
            .call(Method::PUT, "/apps/vendor-app/install", Some(install))
            .await;
        assert_eq!(status, 200, "{body}");
        workflow(
            &racing.tenant,
            "race-verify",
            json!([{"id": "idv", "type": "call_app", "app": "vendor-app", "action": "verify",
                    "inputMapping": {"name": "person.name"}, "outputKey": "idv"}]),
        )
        .await;
        racing
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = client()
            .request(method, self.api.url(path))
            .bearer_auth(&self.tenant.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.expect("JSON"))
    }

    /// Starts `n` runs and answers their sessions once every one waits: (session, external
    /// id, run).
    async fn waiting_sessions(&self, n: usize) -> Vec<(Uuid, String, Uuid)> {
        let starts = futures::stream::iter(0..n)
            .map(|i| {
                let body = json!({"definitionKey": "race-verify", "context": {"person": {"name": format!("P{i}")}}});
                self.call(Method::POST, "/workflow-runs", Some(body))
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
            self.tenant.id,
        )
        .await;
        assert_eq!(pending, n as i64, "every run waits on its session");
        sqlx::query_as(
            "SELECT id, external_id, workflow_run_id FROM app_callback_sessions \
             WHERE tenant_id = $1",
        )
        .bind(self.tenant.id)
        .fetch_all(&pool)
        .await
        .expect("sessions")
    }
}

/// A vendor event of the example app: `approved` completes, `declined` fails.
fn vendor_event(external_id: &str, event_id: &str, result: &str) -> Value {
    json!({"sessionId": external_id, "eventId": event_id, "result": result})
}

#[tokio::test]
async fn a_completed_event_a_failed_event_and_the_timeout_race_and_one_wins() {
    let n = sessions();
    let racing = Racing::start().await;
    let tenant = &racing.tenant;
    let opened = racing.waiting_sessions(n).await;
    let pool = database().await;
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

    let url = racing.api.url("/webhooks/apps/vendor-app");
    let deliveries = opened.iter().flat_map(|(_, external_id, _)| {
        ["approved", "declined"]
            .map(|result| vendor_event(external_id, &format!("{external_id}-{result}"), result))
    });
    let answers = futures::stream::iter(deliveries)
        .map(|body| async {
            let event_id = body["eventId"].as_str().expect("id").to_owned();
            (event_id, deliver(&url, body).await)
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<HashMap<_, _>>()
        .await;
    let by_status = answers
        .values()
        .fold(HashMap::new(), |mut counts, (status, _)| {
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
        "SELECT s.status AS session, s.error, s.external_id, \
           (SELECT count(*) FROM app_callback_events e WHERE e.session_id = s.id) AS events, \
           (SELECT count(*) FROM app_callback_events e WHERE e.session_id = s.id \
              AND e.outcome = 'settled') AS settled, \
           (SELECT e.event_id FROM app_callback_events e WHERE e.session_id = s.id \
              AND e.outcome = 'settled') AS settled_by, \
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
            external_id,
            events,
            settled,
            settled_by,
            audits,
            run,
            run_error,
        } = outcome;
        *won.entry(session.clone()).or_insert(0) += 1;
        assert_eq!(events, 2, "both events recorded");
        // Each answer says what the store says: the event that settled the session was
        // answered `received`, the other `stale` with the status the session settled to.
        for result in ["approved", "declined"] {
            let event_id = format!("{external_id}-{result}");
            let (status, answer) = &answers[&event_id];
            if settled_by.as_deref() == Some(event_id.as_str()) {
                assert_eq!(*status, 202, "{event_id}: {answer}");
                assert_eq!(
                    (&answer["received"], &answer["status"]),
                    (&json!(true), &json!(session)),
                    "{event_id}"
                );
            } else {
                assert_eq!(*status, 200, "{event_id}: {answer}");
                assert_eq!(
                    (&answer["stale"], &answer["status"]),
                    (&json!(true), &json!(session)),
                    "{event_id}"
                );
            }
        }
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
    external_id: String,
    events: i64,
    settled: i64,
    /// The event id of the event that settled the session, if one did.
    settled_by: Option<String>,
    audits: i64,
    run: String,
    run_error: Option<String>,
}

/// Posts one vendor event until it is answered other than 503 (the vendor retries), for at
/// most two minutes, and answers that answer.
async fn deliver(url: &str, body: Value) -> (u16, Value) {
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
            return (status, response.json().await.expect("JSON"));
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

#[tokio::test]
async fn a_final_event_after_the_one_that_settled_is_answered_stale_with_its_status() {
    let racing = Racing::start().await;
    let sessions = racing.waiting_sessions(1).await;
    let [(session, external_id, _)] = sessions.as_slice() else {
        panic!("one session")
    };
    let url = racing.api.url("/webhooks/apps/vendor-app");

    let first = deliver(&url, vendor_event(external_id, "seq-1", "approved")).await;
    assert_eq!(first.0, 202, "{}", first.1);
    assert_eq!(
        first.1,
        json!({"received": true, "callbackId": session, "status": "completed"})
    );
    // After that answer, not racing it: a failed event changes nothing and says so.
    let second = deliver(&url, vendor_event(external_id, "seq-2", "declined")).await;
    assert_eq!(
        second,
        (
            200,
            json!({"received": false, "stale": true, "callbackId": session, "status": "completed"})
        )
    );
    // And a repeat of it is a duplicate, as every repeat is.
    let again = deliver(&url, vendor_event(external_id, "seq-2", "declined")).await;
    assert_eq!(again, (200, json!({"received": false, "duplicate": true})));
    let pool = database().await;
    let status: String =
        sqlx::query_scalar("SELECT status FROM app_callback_sessions WHERE id = $1")
            .bind(*session)
            .fetch_one(&pool)
            .await
            .expect("session");
    assert_eq!(status, "completed");
}

#[tokio::test]
async fn twenty_final_events_racing_on_two_instances_have_one_received() {
    let racing = Racing::start().await;
    let other = Instance::start(&[("API_RATE_LIMIT_PER_MINUTE", "0")]).await;
    let sessions = racing.waiting_sessions(1).await;
    let [(session, external_id, _)] = sessions.as_slice() else {
        panic!("one session")
    };
    let urls = [
        racing.api.url("/webhooks/apps/vendor-app"),
        other.url("/webhooks/apps/vendor-app"),
    ];
    let deliveries = (0..20).map(|i| {
        let result = if i % 2 == 0 { "approved" } else { "declined" };
        let body = vendor_event(external_id, &format!("race-{i}"), result);
        let url = urls[i % 2].clone();
        async move { (format!("race-{i}"), deliver(&url, body).await) }
    });
    let answers: Vec<(String, (u16, Value))> = futures::future::join_all(deliveries).await;

    let pool = database().await;
    let (settled_by, session_status): (String, String) = sqlx::query_as(
        "SELECT e.event_id, s.status FROM app_callback_events e \
         JOIN app_callback_sessions s ON s.id = e.session_id \
         WHERE e.session_id = $1 AND e.outcome = 'settled'",
    )
    .bind(*session)
    .fetch_one(&pool)
    .await
    .expect("the event that settled the session");
    let received: Vec<&String> = answers
        .iter()
        .filter(|(_, (_, answer))| answer["received"] == true)
        .map(|(event_id, _)| event_id)
        .collect();
    assert_eq!(received, [&settled_by], "{answers:?}");
    for (event_id, (status, answer)) in &answers {
        if *event_id == settled_by {
            assert_eq!(*status, 202, "{answer}");
            assert_eq!(answer["status"], json!(session_status));
        } else {
            assert_eq!(
                (*status, answer),
                (
                    200,
                    &json!({"received": false, "stale": true, "callbackId": session,
                            "status": session_status})
                ),
                "{event_id}"
            );
        }
    }
    let recorded: i64 =
        sqlx::query_scalar("SELECT count(*) FROM app_callback_events WHERE session_id = $1")
            .bind(*session)
            .fetch_one(&pool)
            .await
            .expect("events");
    assert_eq!(recorded, 20, "every event recorded, one settling");
}
