//! `GET /app-invocations` and `GET /app-invocations/:id` over records written to Postgres.

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::instance::Instance;
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::{
    StackUrls, admin, analyst, announce_history_changed, assert_envelope, client, database, stack,
};

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
    .bind(json!({
        "name": "Ada Lovelace",
        "country": "GB",
        "address": {"city": "London", "lines": ["12 Baker St", "flat 2"]}
    }))
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
    // Several statuses are merged from one scan each: paging cuts the merged order.
    let failures = list(&token, "?status=timeout&status=error&limit=2&offset=1").await;
    assert_eq!(ids_of(&failures), vec![ids[2], ids[1]]);
    let failures = list(
        &token,
        "?status=error&status=pending&status=timeout&limit=1&offset=3",
    )
    .await;
    assert_eq!(ids_of(&failures), vec![ids[1]]);

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

/// A finished run of `tenant` as the runs stage records it.
async fn insert_run(
    pool: &PgPool,
    tenant: Uuid,
    run: Uuid,
    created_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
) {
    sqlx::query(
        "INSERT INTO workflow_runs (id, tenant_id, definition_key, definition_version, status, \
         context, created_by, created_at, updated_at, finished_at) \
         VALUES ($1, $2, 'onboarding', 1, $3, '{}', 'tester', $4, $5, $6)",
    )
    .bind(run)
    .bind(tenant)
    .bind(if finished_at.is_some() {
        "completed"
    } else {
        "running"
    })
    .bind(created_at)
    .bind(finished_at.unwrap_or(created_at))
    .bind(finished_at)
    .execute(pool)
    .await
    .expect("run inserts");
}

/// A run's filter is bounded by the run's lifetime (so only its months are planned): records
/// at its very start, in a month between, and just after `finished_at` (the clocks differ by
/// a little) are all listed and counted, alone and with a window.
#[tokio::test]
async fn a_runs_records_across_months_are_listed_whole() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let token = admin(tenant);
    let at = |text: &str| {
        DateTime::parse_from_rfc3339(text)
            .expect("time")
            .with_timezone(&Utc)
    };
    let finished = Uuid::new_v4();
    insert_run(
        &pool,
        tenant,
        finished,
        at("2026-08-31T23:30:00Z"),
        Some(at("2026-10-01T00:10:00Z")),
    )
    .await;
    let going = Uuid::new_v4();
    insert_run(&pool, tenant, going, at("2026-09-15T08:00:00Z"), None).await;
    let mut records = Vec::new();
    for (run, when) in [
        (finished, "2026-08-31T23:30:00Z"),
        (finished, "2026-09-14T10:00:00Z"),
        (finished, "2026-10-01T00:10:00.250Z"),
        (going, "2026-09-15T08:00:01Z"),
        (going, "2026-11-02T09:00:00Z"),
    ] {
        let f = Fixture {
            id: Uuid::now_v7(),
            app: "kyc",
            status: "success",
            run: Some(run),
            at: at(when),
        };
        insert(&pool, tenant, &f).await;
        records.push(f.id);
    }
    announce_history_changed(tenant).await;

    let whole = list(&token, &format!("?workflowRunId={finished}")).await;
    assert_eq!(ids_of(&whole), vec![records[2], records[1], records[0]]);
    assert_eq!(whole["total"], 3);
    let going_on = list(&token, &format!("?workflowRunId={going}")).await;
    assert_eq!(ids_of(&going_on), vec![records[4], records[3]]);
    assert_eq!(going_on["total"], 2);
    let window = format!(
        "?workflowRunId={finished}&from={}&to={}",
        urlencode("2026-09-01T00:00:00Z"),
        urlencode("2026-12-01T00:00:00Z")
    );
    let late = list(&token, &window).await;
    assert_eq!(ids_of(&late), vec![records[2], records[1]]);
    assert_eq!(late["total"], 2);
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
        !text.contains("Ada Lovelace") && !text.contains("canary-ERR-9") && !text.contains("Baker"),
        "{text}"
    );
    let first = &page["items"][0];
    assert_eq!(
        first["input"],
        json!({
            "name": "[redacted]",
            "country": "[redacted]",
            "address": {"city": "[redacted]", "lines": ["[redacted]", "[redacted]"]}
        }),
        "keys kept at every depth, arrays keep their length"
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

async fn get_status(url: &str, token: &str) -> (u16, Value) {
    let response = client()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("json"))
}

/// Reads are served from the in-process read cache; a committed insert, update or delete of the
/// tenant's records must show in the reads that follow once its writer told the caches
/// (milliseconds), never a stale answer for longer. Totals come from the rollups the schema's
/// triggers keep, so they follow the insert, the status change and the delete too.
///
/// The test runs its own instance, so the cache counters it reads are moved by its reads only,
/// and seeds before that instance starts: its change listener connects after the seed
/// committed, so no message about the seed can arrive between the reads.
#[tokio::test]
async fn a_committed_change_shows_in_the_reads_that_follow() {
    let pool = database().await;
    let (tenant, _, ids, base) = seed(&pool).await;
    let instance = Instance::start(&[]).await;
    let token = admin(tenant);
    let list_url = instance.url("/app-invocations");
    let first_url = instance.url(&format!("/app-invocations/{}", ids[0]));
    let last_url = instance.url(&format!("/app-invocations/{}", ids[5]));
    let reads = || async {
        let (status, page) = get_status(&list_url, &token).await;
        assert_eq!((status, &page["total"]), (200, &json!(6)));
        assert_eq!(get_status(&first_url, &token).await.1["status"], "success");
        assert_eq!(get_status(&last_url, &token).await.0, 200);
    };
    // Until the change listener has connected, reads bypass the cache.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while cache_lookups(&instance, "hit").await == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no read was answered from the cache"
        );
        reads().await;
    }
    let hits_before = cache_lookups(&instance, "hit").await;
    reads().await;
    assert_eq!(
        cache_lookups(&instance, "hit").await,
        hits_before + 3,
        "the repeated reads were answered from the cache"
    );

    let added = Fixture {
        id: Uuid::now_v7(),
        app: "kyc",
        status: "success",
        run: None,
        at: base + Duration::minutes(10),
    };
    insert(&pool, tenant, &added).await;
    sqlx::query("UPDATE app_invocations SET status = 'timeout' WHERE tenant_id = $1 AND id = $2")
        .bind(tenant)
        .bind(ids[0])
        .execute(&pool)
        .await
        .expect("update");
    sqlx::query("DELETE FROM app_invocations WHERE tenant_id = $1 AND id = $2")
        .bind(tenant)
        .bind(ids[5])
        .execute(&pool)
        .await
        .expect("delete");
    announce_history_changed(tenant).await;

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let page = get_status(&list_url, &token).await.1;
        let first = ids_of(&page).first().copied();
        let updated = get_status(&first_url, &token).await.1["status"].clone();
        let deleted = get_status(&last_url, &token).await.0;
        if page["total"] == 6 && first == Some(added.id) && updated == "timeout" && deleted == 404 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "reads still stale after 5 s: total {}, first {first:?}, status {updated}, deleted {deleted}",
            page["total"]
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `ingress_read_cache_lookups_total{outcome}` of `instance`.
async fn cache_lookups(instance: &Instance, outcome: &str) -> u64 {
    let text = crate::support::metrics_at(&instance.url("/metrics")).await;
    let prefix = format!("ingress_read_cache_lookups_total{{outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .map_or(0, |n| n.trim().parse().expect("a count"))
}
