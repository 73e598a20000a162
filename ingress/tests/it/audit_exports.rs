//! Scheduled audit exports (docs/cases-activity-audit.md "The audit log"): a due window is written
//! to object storage as one file and the schedule moves on; a file over 256 MiB fails the run,
//! recorded with its error, and the next run covers the same window again.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::apps::{Tenant, call_with};
use crate::support::{analyst, database, stack};

/// The start of the hour three hours ago: windows from there are due at once.
async fn three_hours_ago() -> chrono::DateTime<chrono::Utc> {
    sqlx::query_scalar("SELECT date_trunc('hour', now()) - interval '3 hours'")
        .fetch_one(&database().await)
        .await
        .expect("a time")
}

/// Sets the tenant's schedule (hourly, `format`) and moves what it covered back to `start`, so
/// its windows are due at once. Events are seeded before: the worker may write a window the
/// moment it is due.
async fn due_schedule(tenant: &Tenant, format: &str, start: chrono::DateTime<chrono::Utc>) {
    let body = json!({"enabled": true, "intervalHours": 1, "format": format});
    let (status, schedule) = tenant
        .call(Method::PUT, "/audit-exports/schedule", Some(body))
        .await;
    assert_eq!(status, 200, "{schedule}");
    assert_eq!(
        (&schedule["enabled"], &schedule["format"]),
        (&json!(true), &json!(format))
    );
    sqlx::query("UPDATE audit_export_schedules SET covered_until = $2 WHERE tenant_id = $1")
        .bind(tenant.id)
        .bind(start)
        .execute(&database().await)
        .await
        .expect("backdated");
}

/// `rows` events with a `pad`-byte payload, a second apart from `from` on.
async fn seed(tenant: &Tenant, from: chrono::DateTime<chrono::Utc>, rows: i64, pad: i32) {
    sqlx::query(
        "INSERT INTO audit_events (id, tenant_id, action, actor_type, actor_id, actor_name, \
         subject_type, subject_id, payload, occurred_at) \
         SELECT gen_random_uuid(), $1, 'case.decided', 'human', 'seeder', 'Seeder', 'case', \
                n::text, jsonb_build_object('n', n, 'pad', repeat('x', $4)), \
                $2 + make_interval(secs => (n % 3600)::float8 / 10) \
         FROM generate_series(1, $3) AS n",
    )
    .bind(tenant.id)
    .bind(from)
    .bind(rows)
    .bind(pad)
    .execute(&database().await)
    .await
    .expect("seeded");
}

/// The tenant's runs once there are at least `count`.
async fn runs(tenant: &Tenant, count: usize) -> Vec<Value> {
    for _ in 0..300 {
        let (status, page) = tenant.call(Method::GET, "/audit-exports/runs", None).await;
        assert_eq!(status, 200, "{page}");
        let items = page["items"].as_array().expect("items").clone();
        if items.len() >= count {
            return items;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("fewer than {count} export runs");
}

fn bucket() -> (aws_sdk_s3::Client, String) {
    let config = service::storage::StorageConfig {
        endpoint: stack().var("STORAGE_ENDPOINT").to_owned(),
        bucket: stack().var("STORAGE_BUCKET").to_owned(),
        region: stack().var("STORAGE_REGION").to_owned(),
        access_key: stack().var("STORAGE_ACCESS_KEY").to_owned(),
        secret_key: stack().var("STORAGE_SECRET_KEY").to_owned(),
    };
    (config.client(), config.bucket)
}

#[tokio::test]
async fn a_due_window_becomes_one_file_and_the_schedule_moves_on() {
    let tenant = Tenant::new();
    let (status, unset) = tenant
        .call(Method::GET, "/audit-exports/schedule", None)
        .await;
    assert_eq!(
        (status, &unset["enabled"], &unset["coveredUntil"]),
        (200, &json!(false), &Value::Null)
    );
    let start = three_hours_ago().await;
    seed(&tenant, start, 1500, 10).await;
    due_schedule(&tenant, "csv", start).await;
    // The first window (three hours ago) holds the 1,500 events.
    let done = runs(&tenant, 1).await;
    let first = done.last().expect("the oldest run");
    assert_eq!(
        (&first["status"], &first["rows"], &first["error"]),
        (&json!("succeeded"), &json!(1500), &Value::Null),
        "{first}"
    );
    let key = first["objectKey"].as_str().expect("objectKey");
    assert!(
        key.starts_with(&format!("audit-exports/{}/", tenant.id)) && key.ends_with(".csv"),
        "{key}"
    );
    let (client, bucket) = bucket();
    let object = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .expect("the file");
    let bytes = object.body.collect().await.expect("bytes").into_bytes();
    assert_eq!(first["bytes"].as_u64(), Some(bytes.len() as u64));
    let mut reader = csv::Reader::from_reader(bytes.as_ref());
    assert_eq!(reader.records().count(), 1500);
    // SPEC "Metrics": a scheduled export's rows count as a download's do (later windows may
    // have added theirs already).
    let id = tenant.id.to_string();
    let labels = [("tenant", id.as_str()), ("format", "csv")];
    let counted = crate::support::pipeline_metric("svc_audit_export_rows_total", &labels).await;
    assert!(counted >= 1500.0, "{counted}");
    // Later windows follow, each starting where the last ended.
    let done = runs(&tenant, 2).await;
    assert_eq!(done[0]["windowFrom"], done[1]["windowTo"]);
    let (_, schedule) = tenant
        .call(Method::GET, "/audit-exports/schedule", None)
        .await;
    assert!(schedule["coveredUntil"].as_str() > Some(start.to_rfc3339().as_str()));

    let (status, refused) = call_with(
        &analyst(tenant.id),
        Method::GET,
        "/audit-exports/runs",
        None,
    )
    .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("forbidden"))
    );
    for bad in [
        json!({"enabled": true, "intervalHours": 0}),
        json!({"enabled": true, "format": "xml"}),
        json!({}),
    ] {
        let (status, _) = tenant
            .call(Method::PUT, "/audit-exports/schedule", Some(bad.clone()))
            .await;
        assert_eq!(status, 400, "{bad}");
    }
}

#[tokio::test]
async fn a_file_over_256_mib_fails_and_the_window_is_covered_again() {
    let tenant = Tenant::new();
    let start = three_hours_ago().await;
    // 135,000 events of about 2 KiB: a window of some 270 MiB.
    seed(&tenant, start, 135_000, 2000).await;
    due_schedule(&tenant, "ndjson", start).await;
    let done = runs(&tenant, 2).await;
    for run in &done {
        assert_eq!(
            (&run["status"], &run["objectKey"]),
            (&json!("failed"), &Value::Null),
            "{run}"
        );
        assert!(
            run["error"].as_str().is_some_and(|e| e.contains("256 MiB")),
            "{run}"
        );
        assert_eq!(
            run["windowFrom"]
                .as_str()
                .map(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok()),
            Some(Some(start))
        );
    }
    let (_, schedule) = tenant
        .call(Method::GET, "/audit-exports/schedule", None)
        .await;
    assert_eq!(
        schedule["coveredUntil"]
            .as_str()
            .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok()),
        Some(start),
        "a failed window is not skipped"
    );
    // Stop it retrying for the rest of the suite.
    let body = json!({"enabled": false});
    assert_eq!(
        tenant
            .call(Method::PUT, "/audit-exports/schedule", Some(body))
            .await
            .0,
        200
    );
}
