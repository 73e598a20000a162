//! The audit log (docs/cases-activity-audit.md "The audit log"): `GET /audit-events` with its
//! filters and capped totals, and `GET /audit-events/export` as NDJSON and CSV holding every row
//! and no secret.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::apps::{Tenant, call_with};
use crate::support::instance::Instance;
use crate::support::modules::scoring;
use crate::support::{StackUrls, analyst, client, database, stack};

fn actions(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["action"].as_str().expect("action"))
        .collect()
}

async fn export(tenant: &Tenant, query: &str) -> (u16, String, String) {
    let response = client()
        .get(stack().api(&format!("/audit-events/export{query}")))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or("").to_owned())
        .unwrap_or_default();
    (status, kind, response.text().await.expect("body"))
}

#[tokio::test]
async fn the_log_filters_by_action_actor_and_an_inclusive_window() {
    let tenant = Tenant::new();
    let colleague = tenant.other_admin();
    tenant.set_approvals(false, true).await;
    colleague.set_approvals(false, false).await;
    let rule = json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": 5}});
    assert_eq!(
        tenant
            .call(Method::POST, "/definitions/rule/r/versions", Some(rule))
            .await
            .0,
        201
    );
    assert_eq!(
        tenant
            .call(Method::POST, "/definitions/rule/r/versions/1/publish", None)
            .await
            .0,
        200
    );

    let (status, page) = tenant.call(Method::GET, "/audit-events", None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        actions(&page),
        [
            "rule.published",
            "approval_settings.updated",
            "approval_settings.updated"
        ]
    );
    assert_eq!(
        (&page["total"], &page["totalIsEstimate"]),
        (&json!(3), &json!(false))
    );
    let newest = &page["items"][0];
    assert_eq!(
        newest["payload"],
        json!({"kind": "rule", "key": "r", "version": 1, "previousVersion": null})
    );
    assert_eq!(
        (&newest["subjectType"], newest["requestId"].is_string()),
        (&json!("definition"), true)
    );

    let colleague_id = page["items"][1]["actor"]["id"]
        .as_str()
        .expect("actor")
        .to_owned();
    let (_, by_actor) = tenant
        .call(
            Method::GET,
            &format!("/audit-events?actor={colleague_id}"),
            None,
        )
        .await;
    assert_eq!(
        (actions(&by_actor), &by_actor["total"]),
        (vec!["approval_settings.updated"], &json!(1))
    );
    let (_, by_actions) = tenant
        .call(
            Method::GET,
            "/audit-events?action=rule.published&action=nothing.like.this",
            None,
        )
        .await;
    assert_eq!(actions(&by_actions), ["rule.published"]);

    // `from` and `to` are inclusive: an event's own time selects exactly it.
    let at = page["items"][1]["occurredAt"]
        .as_str()
        .expect("time")
        .to_owned();
    let encoded: String = form_urlencoded::byte_serialize(at.as_bytes()).collect();
    let (status, window) = tenant
        .call(
            Method::GET,
            &format!("/audit-events?from={encoded}&to={encoded}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{window}");
    assert_eq!(window["items"].as_array().expect("items").len(), 1);
    assert_eq!(window["items"][0]["id"], page["items"][1]["id"]);
    let (_, paged) = tenant
        .call(Method::GET, "/audit-events?limit=1&offset=2", None)
        .await;
    assert_eq!(
        (paged["items"][0]["id"].clone(), &paged["total"]),
        (page["items"][2]["id"].clone(), &json!(3))
    );

    for bad in [
        "?from=yesterday",
        "?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z",
        "?limit=201",
        "?actor=",
        "?actor=a&actor=b",
        "?sort=asc",
    ] {
        let (status, refused) = tenant
            .call(Method::GET, &format!("/audit-events{bad}"), None)
            .await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (400, &json!("validation_error")),
            "{bad}"
        );
    }
    let (status, refused) =
        call_with(&analyst(tenant.id), Method::GET, "/audit-events", None).await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("forbidden"))
    );
    let (_, foreign) = Tenant::new().call(Method::GET, "/audit-events", None).await;
    assert!(actions(&foreign).is_empty());
}

#[tokio::test]
async fn the_total_stops_at_the_cap() {
    let tenant = Tenant::new();
    seed(&tenant, 100_001).await;
    let (status, page) = tenant
        .call(Method::GET, "/audit-events?limit=2", None)
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        (&page["total"], &page["totalIsEstimate"]),
        (&json!(100_000), &json!(true))
    );
}

/// `rows` audit events of `tenant`, one a second going back from now.
async fn seed(tenant: &Tenant, rows: i64) {
    sqlx::query(
        "INSERT INTO audit_events (id, tenant_id, action, actor_type, actor_id, actor_name, \
         subject_type, subject_id, payload, occurred_at) \
         SELECT gen_random_uuid(), $1, 'case.decided', 'human', 'seeder', 'Seeder, \"Quoted\"', \
                'case', n::text, jsonb_build_object('n', n, 'outcome', 'approved'), \
                now() - make_interval(secs => n) \
         FROM generate_series(1, $2) AS n",
    )
    .bind(tenant.id)
    .bind(rows)
    .execute(&database().await)
    .await
    .expect("seeded");
}

#[tokio::test]
async fn exports_hold_every_row_oldest_first_and_no_secret() {
    let tenant = Tenant::new();
    let canary = format!("canary{}", Uuid::new_v4().simple());
    tenant.published(scoring("audited-kyc", "1.0.0")).await;
    let (status, stored) = tenant.store_secret("audited-kyc", "API_KEY", &canary).await;
    assert!(status < 300, "{status} {stored}");
    seed(&tenant, 20_000).await;
    let (_, page) = tenant
        .call(Method::GET, "/audit-events?limit=1", None)
        .await;
    let total = page["total"].as_u64().expect("total");
    assert!(total > 20_000, "{page}");

    let (status, kind, ndjson) = export(&tenant, "").await;
    assert_eq!((status, kind.as_str()), (200, "application/x-ndjson"));
    let lines: Vec<Value> = ndjson
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len() as u64, total);
    assert_eq!(lines[0]["subjectId"], "20000", "oldest first");
    assert!(
        lines
            .windows(2)
            .all(|w| w[0]["occurredAt"].as_str() <= w[1]["occurredAt"].as_str())
    );
    assert!(lines.iter().any(|l| l["action"] == "app.secret.stored"));
    assert!(!ndjson.contains(&canary), "an export holds the secret");

    let (status, kind, csv) = export(&tenant, "?format=csv&action=case.decided").await;
    assert_eq!((status, kind.as_str()), (200, "text/csv; charset=utf-8"));
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(header[..3], ["id", "occurredAt", "action"]);
    let records: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("a record")).collect();
    assert_eq!(records.len(), 20_000);
    assert_eq!(
        &records[0][5], "Seeder, \"Quoted\"",
        "quoted as RFC 4180 says"
    );
    let payload: Value = serde_json::from_str(&records[0][9]).expect("payload is JSON");
    assert_eq!(payload["n"], 20_000);

    let (status, _, body) = export(&tenant, "?format=xml").await;
    assert_eq!(status, 400, "{body}");
    let (status, _, _) = export(
        &Tenant {
            id: tenant.id,
            token: analyst(tenant.id),
        },
        "",
    )
    .await;
    assert_eq!(status, 403);
}

/// The peak resident memory of process `pid` so far (VmHWM), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// Exports `query` from `instance` and counts its lines as they arrive, holding none.
async fn exported_lines(instance: &Instance, tenant: &Tenant, query: &str) -> u64 {
    // A long export outlasts the suite's usual 30 s client.
    let patient = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .expect("client");
    let mut response = patient
        .get(instance.url(&format!("/audit-events/export{query}")))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 200);
    let mut lines = 0;
    while let Some(chunk) = response.chunk().await.expect("chunk") {
        lines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
    }
    lines
}

#[tokio::test]
async fn a_million_row_export_takes_no_more_memory_than_a_small_one() {
    let tenant = Tenant::new();
    seed(&tenant, 1_000_000).await;
    let instance = Instance::start(&[("API_RATE_LIMIT_PER_MINUTE", "0")]).await;
    // The newest thousand first: what any export costs the process. The events are a second
    // apart going back from the newest.
    let newest: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT max(occurred_at) FROM audit_events WHERE tenant_id = $1")
            .bind(tenant.id)
            .fetch_one(&database().await)
            .await
            .expect("the newest event");
    let since = newest - chrono::Duration::seconds(999);
    let encoded: String = form_urlencoded::byte_serialize(since.to_rfc3339().as_bytes()).collect();
    let small = exported_lines(&instance, &tenant, &format!("?from={encoded}")).await;
    assert_eq!(small, 1000);
    let after_small = peak_kib(instance.pid());
    assert_eq!(exported_lines(&instance, &tenant, "").await, 1_000_000);
    let after_all = peak_kib(instance.pid());
    // A million events are some 300 MiB of NDJSON: an export holding them would show it.
    assert!(
        after_all.saturating_sub(after_small) < 64 * 1024,
        "the peak grew from {after_small} KiB to {after_all} KiB"
    );
}
