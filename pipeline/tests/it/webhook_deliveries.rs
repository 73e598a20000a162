//! Webhook deliveries survive their dispatcher: against the stack's Postgres and pipeline, a
//! dispatcher of its own (this test binary re-run as a child process, on a short lease) is
//! killed (SIGKILL) in the middle of a burst of 300 events to two endpoints. The deliveries it
//! held are sent again once its leases end (by the stack's dispatcher, which was sending
//! beside it): every event reaches each endpoint, each recorded as one delivery, succeeded,
//! with one attempt row per attempt; only what the dead dispatcher held reached the receiver
//! twice, with the same `webhook-id`. And deliveries wait while no worker holds the key their
//! endpoint's secret is sealed with: the stack's dispatcher gives them back without counting an
//! attempt, and a worker with the key sends them. A delivery left held on an enabled endpoint,
//! or due on a disabled one (an enable or a disable racing the event), is set right by the
//! dispatchers' sweep.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use outbound::{Loopback, SigningSecret};
use pipeline::WebhookDispatcher;
use serde_json::json;
use sqlx::PgPool;
use tokio::net::TcpListener;
use topics::sealed::SecretKeys;
use topics::webhook_endpoints::secret_binding;
use uuid::Uuid;

use crate::support::{WorkerProcess, database, stack};

const EVENTS: usize = 300;
const OWNER: &str = "dispatch-kill-test";
/// How long each answer of the receiver takes: attempts are in flight when the kill comes.
const ANSWER_DELAY: Duration = Duration::from_millis(300);

/// The stack's secret store keys, or the key `DISPATCH_TEST_KEY` names when set.
fn keys() -> Arc<SecretKeys> {
    let key = std::env::var("DISPATCH_TEST_KEY")
        .unwrap_or_else(|_| stack().var("SECRET_STORE_KEY").to_owned());
    Arc::new(SecretKeys::parse(&key, &[]).expect("a secret store key"))
}

/// A key of the secret store that no worker of the stack holds.
fn foreign_key() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .encode(Uuid::new_v4().as_u128().to_be_bytes().repeat(2))
}

/// Runs as a child process of these tests: a dispatcher until it is killed, with the stack's
/// keys or those of `DISPATCH_TEST_KEY`.
#[tokio::test]
#[ignore = "started as a child process by the dispatcher tests"]
async fn dispatcher_process() {
    if std::env::var("WORKER_TOPIC").is_err() {
        panic!("a dispatcher started by the dispatcher tests, not a test");
    }
    let dispatcher = WebhookDispatcher::new(database().await, keys(), Loopback::Allowed)
        .expect("dispatcher")
        .leasing_as(OWNER, Duration::from_secs(5));
    dispatcher
        .run_alone(tokio_util::sync::CancellationToken::new())
        .await;
}

/// A receiver counting each `webhook-id` per path, answering 204 after [`ANSWER_DELAY`].
async fn receiver() -> (String, Arc<Mutex<HashMap<(String, String), usize>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let address = listener.local_addr().expect("address");
    let seen: Arc<Mutex<HashMap<(String, String), usize>>> = Arc::default();
    let counting = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counting = counting.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                    let counting = counting.clone();
                    async move {
                        let id = request
                            .headers()
                            .get("webhook-id")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned();
                        let key = (request.uri().path().to_owned(), id);
                        *counting.lock().expect("lock").entry(key).or_default() += 1;
                        tokio::time::sleep(ANSWER_DELAY).await;
                        let mut response = Response::new(Full::new(Bytes::new()));
                        *response.status_mut() = StatusCode::NO_CONTENT;
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://{address}"), seen)
}

/// An enabled endpoint of `tenant` at `url`, every event type, with a secret sealed by the
/// stack's key.
async fn endpoint(pool: &PgPool, tenant: Uuid, url: &str) -> Uuid {
    endpoint_sealed_by(pool, tenant, url, &keys()).await
}

async fn endpoint_sealed_by(pool: &PgPool, tenant: Uuid, url: &str, keys: &SecretKeys) -> Uuid {
    let id = Uuid::now_v7();
    let secret = SigningSecret::generate().reveal();
    let sealed = keys.seal(secret_binding(tenant, &id.to_string()), &secret);
    sqlx::query(
        "INSERT INTO webhook_endpoints (id, tenant_id, url, event_types, enabled, description, \
         secret_key_id, secret_nonce, secret_ciphertext, created_by, created_at, updated_at) \
         VALUES ($1, $2, $3, '{}', true, 'kill test', $4, $5, $6, 'test', now(), now())",
    )
    .bind(id)
    .bind(tenant)
    .bind(url)
    .bind(&sealed.key_id)
    .bind(&sealed.nonce)
    .bind(&sealed.ciphertext)
    .execute(pool)
    .await
    .expect("endpoint");
    id
}

/// EVENTS events of `tenant`, each with a due delivery to both endpoints, and the dispatchers
/// woken, as the outbound stage records them.
async fn burst(pool: &PgPool, tenant: Uuid, endpoints: [Uuid; 2]) -> Vec<Uuid> {
    events(pool, tenant, EVENTS, &endpoints).await
}

/// `count` events of `tenant` with a due delivery to each of `endpoints`, dispatchers woken.
async fn events(pool: &PgPool, tenant: Uuid, count: usize, endpoints: &[Uuid]) -> Vec<Uuid> {
    let events: Vec<Uuid> = (0..count).map(|_| Uuid::now_v7()).collect();
    let mut tx = pool.begin().await.expect("tx");
    sqlx::query(
        "INSERT INTO webhook_events (id, tenant_id, type, data, occurred_at) \
         SELECT id, $2, 'app.circuit.opened', $3, now() FROM unnest($1::uuid[]) AS e(id)",
    )
    .bind(&events)
    .bind(tenant)
    .bind(json!({"appName": "kyc-check", "failures": 5}))
    .execute(&mut *tx)
    .await
    .expect("events");
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, \
         status, next_attempt_at, created_at, updated_at) \
         SELECT gen_random_uuid(), $2, endpoint_id, e.id, 'app.circuit.opened', 'pending', \
           now(), now(), now() \
         FROM unnest($1::uuid[]) AS e(id), unnest($3::uuid[]) AS p(endpoint_id)",
    )
    .bind(&events)
    .bind(tenant)
    .bind(endpoints)
    .execute(&mut *tx)
    .await
    .expect("deliveries");
    sqlx::query("SELECT pg_notify('webhook_deliveries', '')")
        .execute(&mut *tx)
        .await
        .expect("wake");
    tx.commit().await.expect("commit");
    events
}

async fn held_by_child(pool: &PgPool, tenant: Uuid) -> Vec<Uuid> {
    sqlx::query_scalar(
        "SELECT event_id FROM webhook_deliveries WHERE tenant_id = $1 AND lease_owner = $2 \
         AND status = 'pending'",
    )
    .bind(tenant)
    .bind(OWNER)
    .fetch_all(pool)
    .await
    .expect("held")
}

#[tokio::test]
async fn a_dispatcher_killed_mid_burst_loses_no_delivery_and_records_each_once() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let (url, seen) = receiver().await;
    let endpoints = [
        endpoint(&pool, tenant, &format!("{url}/a")).await,
        endpoint(&pool, tenant, &format!("{url}/b")).await,
    ];
    let child = WorkerProcess::start("webhook_deliveries::dispatcher_process", "none", "none");
    // The child listens before the burst: give it its connection.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = burst(&pool, tenant, endpoints).await;

    let deadline = Instant::now() + Duration::from_secs(30);
    let held = loop {
        let held = held_by_child(&pool, tenant).await;
        if !held.is_empty() {
            break held;
        }
        assert!(Instant::now() < deadline, "the child never held a delivery");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    child.kill();
    let held: HashSet<Uuid> = held_by_child(&pool, tenant)
        .await
        .into_iter()
        .chain(held)
        .collect();

    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (succeeded, all): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) \
             FROM webhook_deliveries WHERE tenant_id = $1",
        )
        .bind(tenant)
        .fetch_one(&pool)
        .await
        .expect("counts");
        assert_eq!(
            all,
            (EVENTS * 2) as i64,
            "one delivery per endpoint and event"
        );
        if succeeded == all {
            break;
        }
        assert!(Instant::now() < deadline, "{succeeded} of {all} succeeded");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (attempt_rows, attempts): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM webhook_delivery_attempts a JOIN webhook_deliveries d \
                 ON d.id = a.delivery_id WHERE d.tenant_id = $1), \
                (SELECT sum(attempts) FROM webhook_deliveries WHERE tenant_id = $1)",
    )
    .bind(tenant)
    .fetch_one(&pool)
    .await
    .expect("attempts");
    assert_eq!(attempt_rows, attempts, "one row per attempt recorded");
    assert_eq!(
        attempts,
        (EVENTS * 2) as i64,
        "one attempt each was recorded"
    );

    let seen = seen.lock().expect("lock").clone();
    for event in &events {
        for path in ["/a", "/b"] {
            let times = seen.get(&(path.to_owned(), event.to_string())).copied();
            assert!(times.is_some(), "{event} never reached {path}");
            if times > Some(1) {
                assert!(
                    held.contains(event),
                    "{event} sent twice, not held by the dead"
                );
            }
        }
    }
}

#[tokio::test]
async fn deliveries_wait_for_a_worker_holding_their_key() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let (url, seen) = receiver().await;
    let key = foreign_key();
    let sealed_by = SecretKeys::parse(&key, &[]).expect("a key");
    let endpoint = endpoint_sealed_by(&pool, tenant, &format!("{url}/held"), &sealed_by).await;
    let event = events(&pool, tenant, 1, &[endpoint]).await[0];

    // The stack's dispatcher claims it, opens nothing, and gives it back a minute on.
    let deadline = Instant::now() + Duration::from_secs(30);
    let given_back = loop {
        let (attempts, status, wait): (i32, String, Option<f64>) = sqlx::query_as(
            "SELECT attempts, status, \
                    extract(epoch FROM next_attempt_at - now())::float8 \
             FROM webhook_deliveries WHERE event_id = $1",
        )
        .bind(event)
        .fetch_one(&pool)
        .await
        .expect("delivery");
        if wait.is_some_and(|wait| wait > 30.0) {
            break (attempts, status);
        }
        assert!(Instant::now() < deadline, "never given back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(given_back, (0, "pending".to_owned()), "no attempt counted");
    assert!(
        seen.lock().expect("lock").is_empty(),
        "nothing sent unsigned"
    );

    // A worker holding the key: once the delivery is due again (a minute on, made now), it
    // goes. The stack's dispatcher may claim it first and give it back again: made due again
    // each time, until the worker with the key has it.
    let child = WorkerProcess::start_with_env(
        "webhook_deliveries::dispatcher_process",
        ("none", "none"),
        &[("DISPATCH_TEST_KEY", &key)],
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        sqlx::query(
            "WITH due AS (UPDATE webhook_deliveries SET next_attempt_at = now() \
               WHERE event_id = $1 AND status = 'pending' AND leased_until IS NULL \
                 AND next_attempt_at > now() + interval '30 seconds' RETURNING id) \
             SELECT pg_notify('webhook_deliveries', '') FROM due",
        )
        .bind(event)
        .execute(&pool)
        .await
        .expect("due");
        let (status, attempts): (String, i32) =
            sqlx::query_as("SELECT status, attempts FROM webhook_deliveries WHERE event_id = $1")
                .bind(event)
                .fetch_one(&pool)
                .await
                .expect("status");
        if status == "succeeded" {
            assert_eq!(attempts, 1, "only the attempt that was sent counted");
            break;
        }
        assert!(Instant::now() < deadline, "{status}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    child.kill();
    let sent = seen
        .lock()
        .expect("lock")
        .get(&("/held".to_owned(), event.to_string()))
        .copied();
    assert_eq!(sent, Some(1));
}

#[tokio::test]
async fn a_delivery_held_on_an_enabled_endpoint_is_released_by_the_sweep() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let (url, seen) = receiver().await;
    let endpoint = endpoint(&pool, tenant, &format!("{url}/released")).await;
    // The event and its delivery as the outbound stage records them when it read the endpoint
    // disabled while an enable was committing: held, without a due time, on an enabled endpoint.
    let event = events(&pool, tenant, 1, &[]).await[0];
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, \
         status, next_attempt_at, created_at, updated_at) \
         VALUES (gen_random_uuid(), $1, $2, $3, 'app.circuit.opened', 'pending', NULL, now(), now())",
    )
    .bind(tenant)
    .bind(endpoint)
    .bind(event)
    .execute(&pool)
    .await
    .expect("held delivery");

    // The sweep runs every 30 s in each dispatcher: within two sweeps and a send, it is sent.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (status, attempts): (String, i32) =
            sqlx::query_as("SELECT status, attempts FROM webhook_deliveries WHERE event_id = $1")
                .bind(event)
                .fetch_one(&pool)
                .await
                .expect("delivery");
        if status == "succeeded" {
            assert_eq!(attempts, 1);
            break;
        }
        assert!(Instant::now() < deadline, "still {status}: never released");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let sent = seen
        .lock()
        .expect("lock")
        .get(&("/released".to_owned(), event.to_string()))
        .copied();
    assert_eq!(sent, Some(1));
}

#[tokio::test]
async fn a_due_delivery_of_a_disabled_endpoint_is_held_by_the_sweep() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let (url, seen) = receiver().await;
    let endpoint = endpoint(&pool, tenant, &format!("{url}/disabled")).await;
    sqlx::query("UPDATE webhook_endpoints SET enabled = false WHERE id = $1")
        .bind(endpoint)
        .execute(&pool)
        .await
        .expect("disabled");
    // Recorded due, as the outbound stage does when a disable commits beside the event.
    let event = events(&pool, tenant, 1, &[endpoint]).await[0];

    // The sweep runs every 30 s in each dispatcher: within two sweeps it is held, unsent.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (status, due, attempts): (String, bool, i32) = sqlx::query_as(
            "SELECT status, next_attempt_at IS NOT NULL, attempts FROM webhook_deliveries \
             WHERE event_id = $1",
        )
        .bind(event)
        .fetch_one(&pool)
        .await
        .expect("delivery");
        assert_eq!((status.as_str(), attempts), ("pending", 0), "never sent");
        if !due {
            break;
        }
        assert!(Instant::now() < deadline, "still due: never held");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(seen.lock().expect("lock").is_empty());
}

/// A pipeline of 0.1 still running beside the first of 0.2 (docs/operations.md "Upgrading from
/// 0.1") records its events under the table's old name, once each, and they are webhook events.
#[tokio::test]
async fn an_event_recorded_under_the_old_table_name_is_a_webhook_event() {
    let pool = database().await;
    let (id, tenant) = (Uuid::now_v7(), Uuid::new_v4());
    let record_as_0_1 = || {
        sqlx::query(
            "INSERT INTO outbound_events (id, tenant_id, type, data, occurred_at) \
             VALUES ($1, $2, 'app.circuit.closed', '{}', now()) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(tenant)
        .execute(&pool)
    };
    assert_eq!(record_as_0_1().await.expect("recorded").rows_affected(), 1);
    assert_eq!(record_as_0_1().await.expect("a repeat").rows_affected(), 0);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_events WHERE id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .expect("read");
    assert_eq!(stored, 1);
}
