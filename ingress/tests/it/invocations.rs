//! `GET /app-invocations` and `GET /app-invocations/:id` over records written to Postgres.

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::isolation::assert_foreign_is_absent;
use crate::support::{admin, analyst, assert_envelope, client, database, stack};

struct Fixture {
    id: Uuid,
    app: &'static str,
    status: &'static str,
    run: Option<Uuid>,
    at: DateTime<Utc>,
}

async fn insert(pool: &PgPool, tenant: Uuid, f: &Fixture) {
    sqlx::query(
        "INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, workflow_run_id, \
         input, output, status, error, duration_ms, invoked_at, attempt, \
         usage_http_requests, usage_document_reads, usage_log_lines) \
         VALUES ($1, $2, $3, $4, 'check', $5, $6, $7, $8, $9, 12.5, $10, 1, 2, 0, 3)",
    )
    .bind(f.id)
    .bind(tenant)
    .bind(f.app)
    .bind(Uuid::new_v4())
    .bind(f.run)
    .bind(json!({"name": "Ada Lovelace", "country": "GB"}))
    .bind(json!({"score": 0.2, "match": false}))
    .bind(f.status)
    .bind((f.status == "error").then_some("vendor said no: canary-ERR-9"))
    .bind(f.at)
    .execute(pool)
    .await
    .expect("fixture inserts");
}

/// Six records for a fresh tenant, one a minute apart, newest last.
async fn seed(pool: &PgPool) -> (Uuid, Uuid, Vec<Uuid>, DateTime<Utc>) {
    let tenant = Uuid::new_v4();
    let run = Uuid::new_v4();
    let base = Utc
        .with_ymd_and_hms(2026, 11, 1, 12, 0, 0)
        .single()
        .expect("time");
    let plan = [
        ("kyc", "success", Some(run)),
        ("kyc", "error", Some(run)),
        ("aml", "timeout", None),
        ("kyc", "pending", None),
        ("aml", "success", Some(run)),
        ("kyc", "error", None),
    ];
    let mut ids = Vec::new();
    for (i, (app, status, run)) in plan.into_iter().enumerate() {
        let f = Fixture {
            id: Uuid::now_v7(),
            app,
            status,
            run,
            at: base + Duration::minutes(i as i64),
        };
        insert(pool, tenant, &f).await;
        ids.push(f.id);
    }
    (tenant, run, ids, base)
}

async fn list(token: &str, query: &str) -> Value {
    let response = client()
        .get(stack().api(&format!("/app-invocations{query}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200, "{query}");
    response.json().await.expect("json")
}

fn ids_of(page: &Value) -> Vec<Uuid> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| Uuid::parse_str(i["id"].as_str().expect("id")).expect("uuid"))
        .collect()
}

#[tokio::test]
async fn lists_newest_first_with_filters_paging_and_total() {
    let pool = database().await;
    let (tenant, run, ids, base) = seed(&pool).await;
    let token = admin(tenant);

    let all = list(&token, "").await;
    assert_eq!(all["total"], 6);
    assert_eq!(all["totalIsEstimate"], false);
    let newest_first: Vec<Uuid> = ids.iter().rev().copied().collect();
    assert_eq!(ids_of(&all), newest_first);

    let page = list(&token, "?limit=2&offset=1").await;
    assert_eq!(ids_of(&page), newest_first[1..3].to_vec());
    assert_eq!(page["total"], 6, "total ignores limit and offset");

    let by_run = list(&token, &format!("?workflowRunId={run}")).await;
    assert_eq!(ids_of(&by_run), vec![ids[4], ids[1], ids[0]]);

    let by_app = list(&token, "?appName=aml").await;
    assert_eq!(ids_of(&by_app), vec![ids[4], ids[2]]);

    let failures = list(&token, "?status=error&status=timeout").await;
    assert_eq!(ids_of(&failures), vec![ids[5], ids[2], ids[1]]);
    assert_eq!(failures["total"], 3);

    let from = (base + Duration::minutes(1)).to_rfc3339();
    let to = (base + Duration::minutes(3)).to_rfc3339();
    let window = list(
        &token,
        &format!("?from={}&to={}", urlencode(&from), urlencode(&to)),
    )
    .await;
    assert_eq!(
        ids_of(&window),
        vec![ids[3], ids[2], ids[1]],
        "bounds are inclusive"
    );

    let none = list(&token, "?appName=nothing-here").await;
    assert_eq!(none["total"], 0);
    assert_eq!(none["items"], json!([]));
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn records_have_every_field_and_admins_see_payloads() {
    let pool = database().await;
    let (tenant, run, ids, _) = seed(&pool).await;
    let response = client()
        .get(stack().api(&format!("/app-invocations/{}", ids[1])))
        .bearer_auth(admin(tenant))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let record: Value = response.json().await.expect("json");
    assert_eq!(record["id"], ids[1].to_string());
    assert_eq!(record["tenantId"], tenant.to_string());
    assert_eq!(record["appName"], "kyc");
    assert_eq!(record["action"], "check");
    assert_eq!(record["workflowRunId"], run.to_string());
    assert_eq!(record["subjectId"], Value::Null);
    assert_eq!(record["status"], "error");
    assert_eq!(record["input"]["name"], "Ada Lovelace");
    assert_eq!(record["error"], "vendor said no: canary-ERR-9");
    assert_eq!(record["durationMs"], 12.5);
    assert_eq!(record["attempt"], 1);
    assert_eq!(record["idempotencyKey"], Value::Null);
    assert_eq!(
        record["usage"],
        json!({"httpRequests": 2, "documentReads": 0, "logLines": 3})
    );
    assert!(DateTime::parse_from_rfc3339(record["invokedAt"].as_str().expect("time")).is_ok());
}

#[tokio::test]
async fn without_runs_context_values_are_redacted_keys_kept() {
    let pool = database().await;
    let (tenant, _, ids, _) = seed(&pool).await;
    let token = analyst(tenant);
    let page = list(&token, "?status=error").await;
    let text = page.to_string();
    assert!(
        !text.contains("Ada Lovelace") && !text.contains("canary-ERR-9"),
        "{text}"
    );
    let first = &page["items"][0];
    assert_eq!(
        first["input"],
        json!({"name": "[redacted]", "country": "[redacted]"})
    );
    assert_eq!(
        first["output"],
        json!({"score": "[redacted]", "match": "[redacted]"})
    );
    assert_eq!(first["error"], "[redacted]");

    let one = client()
        .get(stack().api(&format!("/app-invocations/{}", ids[1])))
        .bearer_auth(&token)
        .send()
        .await
        .expect("request");
    let record: Value = one.json().await.expect("json");
    assert_eq!(record["error"], "[redacted]");
    assert_eq!(record["input"]["name"], "[redacted]");
}

#[tokio::test]
async fn another_tenants_invocation_is_absent() {
    let pool = database().await;
    let (_owner, _, ids, _) = seed(&pool).await;
    let stranger = admin(Uuid::new_v4());
    assert_foreign_is_absent(
        &stranger,
        &format!("/app-invocations/{}", ids[0]),
        &format!("/app-invocations/{}", Uuid::new_v4()),
    )
    .await;
    let listed = list(&stranger, "").await;
    assert_eq!(listed["total"], 0, "a stranger's list is empty");
}

#[tokio::test]
async fn an_absent_invocation_is_404() {
    let response = client()
        .get(stack().api(&format!("/app-invocations/{}", Uuid::new_v4())))
        .bearer_auth(admin(Uuid::new_v4()))
        .send()
        .await
        .expect("request");
    assert_envelope(response, 404, "not_found").await;
}
