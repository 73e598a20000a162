//! Outbound events delivered to tenants' endpoints (SPEC §6.2; docs/outbound-webhooks.md),
//! against the stack's pipeline and a receiver on loopback that checks every signature with the
//! `standardwebhooks` crate: one delivery per subscribed endpoint, signed; failures retried by
//! the schedule and given up after five with a notification to admins; the 10 s receiver
//! timeout; both secrets signing through a rotation and the old one refused after 24 hours;
//! a disabled endpoint's deliveries held until it is enabled; the list's filters.
//!
//! The schedule's waits (5 s to 2 hours) are not waited out: a test makes a failed delivery due
//! now, which is what the time passing would do, and wakes the dispatchers as the stages do.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::apps::{Tenant, call_with};
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::outbound::{circuit_opened, emit};
use crate::support::receiver::{FAILURE_BODY, Receiver};
use crate::support::{analyst, database, pipeline_metrics};
use crate::webhook_endpoints::endpoint;

const WAIT: Duration = Duration::from_secs(60);

fn uuid(value: &Value) -> Uuid {
    Uuid::try_parse(value.as_str().expect("a uuid")).expect("a uuid")
}

/// The tenant's deliveries matching `query`, newest first.
async fn deliveries(tenant: &Tenant, query: &str) -> Value {
    let (status, page) = tenant
        .call(Method::GET, &format!("/webhook-deliveries{query}"), None)
        .await;
    assert_eq!(status, 200, "{page}");
    page
}

/// Delivery `id` once `done` says it is, with its attempts.
async fn delivery_until(tenant: &Tenant, id: Uuid, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (status, delivery) = tenant
            .call(Method::GET, &format!("/webhook-deliveries/{id}"), None)
            .await;
        assert_eq!(status, 200, "{delivery}");
        if done(&delivery) {
            return delivery;
        }
        assert!(tokio::time::Instant::now() < deadline, "{delivery}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The only delivery of `event` to `endpoint`, once recorded.
async fn delivery_of(pool: &PgPool, event: Uuid, endpoint: Uuid) -> Uuid {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let ids: Vec<Uuid> = sqlx::query_scalar(
            "SELECT id FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2",
        )
        .bind(event)
        .bind(endpoint)
        .fetch_all(pool)
        .await
        .expect("deliveries");
        assert!(
            ids.len() <= 1,
            "one delivery per endpoint and event: {ids:?}"
        );
        if let Some(id) = ids.first() {
            return *id;
        }
        assert!(tokio::time::Instant::now() < deadline, "never recorded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// As if the schedule's wait after attempt `attempt` had passed: the delivery is due now (if
/// it still waits after that attempt: on a slow machine the wait may have passed already), and
/// dispatchers are woken.
async fn due_now(pool: &PgPool, id: Uuid, attempt: i64) {
    sqlx::query(
        "WITH due AS (UPDATE webhook_deliveries SET next_attempt_at = now() \
           WHERE id = $1 AND attempts = $2 AND status = 'failed' \
             AND next_attempt_at IS NOT NULL RETURNING id) \
         SELECT pg_notify('webhook_deliveries', '') FROM due",
    )
    .bind(id)
    .bind(i32::try_from(attempt).expect("an attempt"))
    .execute(pool)
    .await
    .expect("due now");
}

/// Waits until the pipeline's `/metrics` holds `line` (a counter moves just after its commit).
async fn pipeline_metrics_show(line: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = pipeline_metrics().await;
        if text.lines().any(|shown| shown == line) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{line} not in the pipeline's metrics:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn attempts(delivery: &Value) -> i64 {
    delivery["attemptCount"].as_i64().expect("attemptCount")
}

#[tokio::test]
async fn an_event_reaches_each_subscribed_endpoint_once_signed() {
    let tenant = Tenant::new();
    let pool = database().await;
    let (a, b, c) = (
        Receiver::start().await,
        Receiver::start().await,
        Receiver::start().await,
    );
    let opened_only = endpoint(
        &tenant,
        &a.url,
        json!({"eventTypes": ["app.circuit.opened"]}),
    )
    .await;
    let every = endpoint(&tenant, &b.url, json!({})).await;
    let closed_only = endpoint(
        &tenant,
        &c.url,
        json!({"eventTypes": ["app.circuit.closed"]}),
    )
    .await;

    let event = emit(tenant.id, circuit_opened("kyc-check")).await;
    for (receiver, created) in [(&a, &opened_only), (&b, &every)] {
        let received = receiver.until(1, WAIT).await;
        let request = &received[0];
        let secret = created["secret"].as_str().expect("secret");
        assert!(request.verifies_with(secret), "{:?}", request.headers);
        assert!(!request.verifies_with(closed_only["secret"].as_str().expect("secret")));
        assert_eq!(request.header("webhook-id"), event.to_string());
        assert_eq!(request.header("content-type"), "application/json");
        let body = request.json();
        assert_eq!(
            (&body["id"], &body["type"], &body["tenantId"], &body["data"]),
            (
                &json!(event),
                &json!("app.circuit.opened"),
                &json!(tenant.id),
                &json!({"appName": "kyc-check", "failures": 5})
            )
        );
        assert!(body["timestamp"].is_string(), "{body}");
        let id = delivery_of(&pool, event, uuid(&created["id"])).await;
        let delivery = delivery_until(&tenant, id, |d| d["status"] == "succeeded").await;
        assert_eq!(attempts(&delivery), 1);
        assert_eq!(delivery["attempts"][0]["statusCode"], 204, "{delivery}");
    }
    let page = deliveries(&tenant, "").await;
    assert_eq!(
        page["total"], 2,
        "none for the endpoint not subscribed: {page}"
    );
    // Counted, as SPEC's text exposition names counters (`_total`).
    let counted = format!(
        "svc_webhook_delivery_count_total{{tenant=\"{}\",status=\"succeeded\"}} 2",
        tenant.id
    );
    pipeline_metrics_show(&counted).await;

    // Another tenant's: absent, as a random id is.
    let other = Tenant::new();
    let foreign = page["items"][0]["id"].as_str().expect("an id");
    assert_foreign_is_absent(
        &other.token,
        &format!("/webhook-deliveries/{foreign}"),
        &format!("/webhook-deliveries/{}", Uuid::new_v4()),
    )
    .await;
    let retry = format!("/webhook-deliveries/{foreign}/retry");
    let (status, _) = other.call(Method::POST, &retry, None).await;
    assert_eq!(status, 404);
    assert_eq!(deliveries(&other, "").await["total"], 0);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(c.received().len(), 0);
    assert_eq!(a.received().len(), 1);
    assert_eq!(b.received().len(), 1);
}

#[tokio::test]
async fn a_receiver_failing_twice_gets_the_third_attempt() {
    let tenant = Tenant::new();
    let pool = database().await;
    let receiver = Receiver::start().await;
    receiver.fail_next(2);
    let created = endpoint(&tenant, &receiver.url, json!({})).await;
    let event = emit(tenant.id, circuit_opened("kyc-check")).await;
    let id = delivery_of(&pool, event, uuid(&created["id"])).await;

    let failed = delivery_until(&tenant, id, |d| attempts(d) >= 1).await;
    let attempt = &failed["attempts"][0];
    if attempts(&failed) == 1 {
        // Caught before the schedule's first wait passed by itself.
        assert_eq!(failed["status"], "failed", "{failed}");
        let started = attempt["startedAt"].as_str().expect("startedAt");
        let next = failed["nextAttemptAt"].as_str().expect("nextAttemptAt");
        let wait = chrono::DateTime::parse_from_rfc3339(next).expect("time")
            - chrono::DateTime::parse_from_rfc3339(started).expect("time");
        assert_eq!(wait, chrono::Duration::seconds(5), "the first wait");
    }
    assert_eq!(attempt["statusCode"], 500);
    let prefix = attempt["responsePrefix"].as_str().expect("a prefix");
    assert!(prefix.len() <= 256 && FAILURE_BODY.repeat(40).starts_with(prefix));
    assert!(prefix.len() > 200, "{prefix}");

    due_now(&pool, id, 1).await;
    let second = delivery_until(&tenant, id, |d| attempts(d) >= 2).await;
    assert_eq!(second["attempts"][1]["statusCode"], 500, "{second}");
    due_now(&pool, id, 2).await;
    let third = delivery_until(&tenant, id, |d| attempts(d) == 3).await;
    assert_eq!(third["status"], "succeeded", "{third}");
    assert_eq!(third["nextAttemptAt"], Value::Null);
    let received = receiver.received();
    assert_eq!(received.len(), 3);
    let secret = created["secret"].as_str().expect("secret");
    assert!(received.iter().all(|request| request.verifies_with(secret)));
    assert!(
        received
            .iter()
            .all(|request| request.header("webhook-id") == event.to_string()),
        "one id across retries"
    );
}

#[tokio::test]
async fn five_failures_give_a_delivery_up_and_tell_the_admins() {
    let tenant = Tenant::new();
    let pool = database().await;
    let receiver = Receiver::start().await;
    receiver.fail_next(usize::MAX);
    let created = endpoint(&tenant, &receiver.url, json!({})).await;
    let event = emit(tenant.id, circuit_opened("doc-verify")).await;
    let id = delivery_of(&pool, event, uuid(&created["id"])).await;
    for attempt in 1..=4 {
        let failed = delivery_until(&tenant, id, |d| attempts(d) >= attempt).await;
        assert_eq!(failed["status"], "failed", "{failed}");
        due_now(&pool, id, attempt).await;
    }
    let exhausted = delivery_until(&tenant, id, |d| attempts(d) == 5).await;
    assert_eq!(exhausted["status"], "exhausted", "{exhausted}");
    assert_eq!(exhausted["nextAttemptAt"], Value::Null);
    assert_eq!(exhausted["attempts"].as_array().map(Vec::len), Some(5));
    let page = deliveries(&tenant, "?status=failed&status=exhausted").await;
    assert_eq!(page["total"], 1, "{page}");
    let page = deliveries(&tenant, "?status=succeeded").await;
    assert_eq!(page["total"], 0, "{page}");

    let (status, notes) = tenant.call(Method::GET, "/notifications", None).await;
    assert_eq!(status, 200, "{notes}");
    let note = &notes["items"][0];
    assert_eq!(note["type"], "webhook_delivery_exhausted", "{notes}");
    assert_eq!(note["data"]["deliveryId"], json!(id));
    assert_eq!(note["read"], false);
    assert_eq!(notes["unread"], 1);
    let (status, theirs) =
        call_with(&analyst(tenant.id), Method::GET, "/notifications", None).await;
    assert_eq!(status, 200, "{theirs}");
    assert_eq!(theirs["items"], json!([]), "addressed to admins");
    let (status, marked) = tenant
        .call(
            Method::POST,
            "/notifications/read",
            Some(json!({"ids": [note["id"]]})),
        )
        .await;
    assert_eq!((status, &marked["marked"]), (200, &json!(1)));
    let (_, notes) = tenant
        .call(Method::GET, "/notifications?unread=true", None)
        .await;
    assert_eq!((&notes["items"], &notes["unread"]), (&json!([]), &json!(0)));

    // While an attempt is in flight (a dispatcher's lease, made here), a retry by hand is
    // refused: the attempt's answer would overwrite it.
    let lease = |held: bool| {
        sqlx::query(
            "UPDATE webhook_deliveries SET \
               leased_until = CASE WHEN $2 THEN now() + interval '5 minutes' END, \
               lease_id = CASE WHEN $2 THEN gen_random_uuid() END WHERE id = $1",
        )
        .bind(id)
        .bind(held)
        .execute(&pool)
    };
    lease(true).await.expect("leased");
    let (status, refused) = tenant
        .call(
            Method::POST,
            &format!("/webhook-deliveries/{id}/retry"),
            None,
        )
        .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (409, &json!("conflict")),
        "{refused}"
    );
    lease(false).await.expect("released");

    // By hand: one attempt more, now.
    receiver.fail_next(0);
    let (status, retried) = tenant
        .call(
            Method::POST,
            &format!("/webhook-deliveries/{id}/retry"),
            None,
        )
        .await;
    assert_eq!(status, 202, "{retried}");
    let sent = delivery_until(&tenant, id, |d| attempts(d) == 6).await;
    assert_eq!(sent["status"], "succeeded", "{sent}");
    assert_eq!(receiver.received().len(), 6);
}

#[tokio::test]
async fn a_receiver_silent_for_ten_seconds_times_out() {
    let tenant = Tenant::new();
    let pool = database().await;
    let receiver = Receiver::start().await;
    receiver.delay(Duration::from_secs(15));
    let created = endpoint(&tenant, &receiver.url, json!({})).await;
    let event = emit(tenant.id, circuit_opened("kyc-check")).await;
    let id = delivery_of(&pool, event, uuid(&created["id"])).await;

    let failed = delivery_until(&tenant, id, |d| attempts(d) == 1).await;
    let attempt = &failed["attempts"][0];
    assert_eq!(attempt["error"], "timed out", "{failed}");
    assert_eq!(attempt["statusCode"], Value::Null);
    let took = attempt["durationMs"].as_f64().expect("duration");
    // The timeout, and no more than a busy machine's delay after it.
    assert!((9_900.0..20_000.0).contains(&took), "{took} ms");
}

#[tokio::test]
async fn both_secrets_sign_through_a_rotation_until_the_old_one_ends() {
    let tenant = Tenant::new();
    let pool = database().await;
    let receiver = Receiver::start().await;
    let created = endpoint(&tenant, &receiver.url, json!({})).await;
    let endpoint_id = uuid(&created["id"]);
    let old = created["secret"].as_str().expect("secret").to_owned();
    let (_, rotated) = tenant
        .call(
            Method::POST,
            &format!("/webhook-endpoints/{endpoint_id}/rotate-secret"),
            None,
        )
        .await;
    let new = rotated["secret"].as_str().expect("secret").to_owned();

    emit(tenant.id, circuit_opened("kyc-check")).await;
    let first = receiver.until(1, WAIT).await.remove(0);
    assert_eq!(first.header("webhook-signature").split(' ').count(), 2);
    assert!(first.verifies_with(&old) && first.verifies_with(&new));

    // 24 hours on: the previous secret's end has passed.
    sqlx::query(
        "UPDATE webhook_endpoints SET previous_expires_at = now() - interval '1 second' \
         WHERE id = $1",
    )
    .bind(endpoint_id)
    .execute(&pool)
    .await
    .expect("the clock moved");
    let (_, read) = tenant
        .call(
            Method::GET,
            &format!("/webhook-endpoints/{endpoint_id}"),
            None,
        )
        .await;
    assert_eq!(read["previousSecretExpiresAt"], Value::Null);
    emit(tenant.id, circuit_opened("kyc-check")).await;
    let second = receiver.until(2, WAIT).await.remove(1);
    assert_eq!(second.header("webhook-signature").split(' ').count(), 1);
    assert!(second.verifies_with(&new));
    assert!(!second.verifies_with(&old), "the old secret is refused");
}

#[tokio::test]
async fn a_disabled_endpoint_holds_its_deliveries_until_enabled() {
    let tenant = Tenant::new();
    let pool = database().await;
    let receiver = Receiver::start().await;
    let created = endpoint(&tenant, &receiver.url, json!({"enabled": false})).await;
    let endpoint_id = uuid(&created["id"]);
    let event = emit(tenant.id, circuit_opened("kyc-check")).await;
    let id = delivery_of(&pool, event, endpoint_id).await;
    let (_, held) = tenant
        .call(Method::GET, &format!("/webhook-deliveries/{id}"), None)
        .await;
    assert_eq!(
        (
            &held["status"],
            &held["nextAttemptAt"],
            &held["attemptCount"]
        ),
        (&json!("pending"), &Value::Null, &json!(0)),
        "{held}"
    );
    // Longer than the dispatchers' two-second read.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(receiver.received().len(), 0);

    let path = format!("/webhook-endpoints/{endpoint_id}");
    let (status, _) = tenant
        .call(Method::PATCH, &path, Some(json!({"enabled": true})))
        .await;
    assert_eq!(status, 200);
    let sent = delivery_until(&tenant, id, |d| d["status"] == "succeeded").await;
    assert_eq!(attempts(&sent), 1);
    assert_eq!(receiver.received().len(), 1);

    let filtered = deliveries(
        &tenant,
        &format!("?endpointId={endpoint_id}&eventType=app.circuit.opened"),
    )
    .await;
    assert_eq!(filtered["total"], 1, "{filtered}");
    let other = deliveries(&tenant, "?eventType=app.circuit.closed").await;
    assert_eq!(other["total"], 0, "{other}");
    let (status, refused) = tenant
        .call(Method::GET, "/webhook-deliveries?status=lost", None)
        .await;
    assert_eq!(status, 400, "{refused}");
}

#[tokio::test]
async fn an_endpoint_deleted_while_an_event_is_recorded_costs_the_others_nothing() {
    let tenant = Tenant::new();
    let pool = database().await;
    let (kept, gone) = (Receiver::start().await, Receiver::start().await);
    let kept_endpoint = endpoint(&tenant, &kept.url, json!({})).await;
    let gone_endpoint = endpoint(&tenant, &gone.url, json!({})).await;

    // The delete is under way (uncommitted) when the outbound stage records the event, and
    // commits while the stage waits on it: the event is recorded for the endpoint that stays,
    // and only for it (had the stage read the deleted endpoint unlocked, its delivery's insert
    // would fail the whole event).
    let mut deleting = pool.begin().await.expect("tx");
    sqlx::query("DELETE FROM webhook_endpoints WHERE id = $1")
        .bind(uuid(&gone_endpoint["id"]))
        .execute(&mut *deleting)
        .await
        .expect("delete");
    let deleter: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *deleting)
        .await
        .expect("pid");
    let event = emit(tenant.id, circuit_opened("kyc-check")).await;
    // The stage reads the endpoints, or checks its deliveries' references, and waits for the
    // delete: only then does the delete commit.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let waiting: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)))",
        )
        .bind(deleter)
        .fetch_one(&pool)
        .await
        .expect("blocked backends");
        if waiting {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stage never waited"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    deleting.commit().await.expect("commit");

    let id = delivery_of(&pool, event, uuid(&kept_endpoint["id"])).await;
    let delivery = delivery_until(&tenant, id, |d| d["status"] == "succeeded").await;
    assert_eq!(attempts(&delivery), 1);
    assert_eq!(deliveries(&tenant, "").await["total"], 1);
    assert!(gone.received().is_empty());
}
