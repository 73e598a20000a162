//! `total` of `GET /app-invocations` summed from the rollups the schema's triggers keep, checked
//! against the rows themselves over windows that cut months and days anywhere, and the cap.

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::{StackUrls, admin, announce_history_changed, client, database, stack};

const APPS: [&str; 3] = ["kyc", "aml", "pep"];
const STATUSES: [&str; 4] = ["success", "error", "timeout", "pending"];

#[derive(Debug, Clone)]
struct Row {
    id: Uuid,
    app: &'static str,
    status: &'static str,
    at: DateTime<Utc>,
}

fn utc(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, h, min, 0)
        .single()
        .expect("time")
}

/// A small deterministic generator, so a failure can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// Rows spread over two years, with some exactly on month and day boundaries and on the last
/// microsecond of a day.
fn rows() -> Vec<Row> {
    let mut random = Lcg(7);
    let start = utc(2024, 1, 1, 0, 0);
    let mut times: Vec<DateTime<Utc>> = (0..400)
        .map(|_| start + Duration::seconds(random.next(2 * 365 * 86_400) as i64))
        .collect();
    times.extend([
        utc(2024, 3, 1, 0, 0),
        utc(2024, 6, 1, 0, 0),
        utc(2024, 6, 15, 0, 0),
        utc(2024, 6, 15, 0, 0) - Duration::microseconds(1),
        utc(2025, 1, 1, 0, 0) - Duration::microseconds(1),
    ]);
    times
        .into_iter()
        .map(|at| Row {
            id: Uuid::new_v4(),
            app: APPS[random.next(3) as usize],
            status: STATUSES[random.next(4) as usize],
            at,
        })
        .collect()
}

/// Inserts `rows` in one statement, as a batch writer would.
async fn insert(pool: &PgPool, tenant: Uuid, rows: &[Row]) {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let apps: Vec<&str> = rows.iter().map(|r| r.app).collect();
    let statuses: Vec<&str> = rows.iter().map(|r| r.status).collect();
    let times: Vec<DateTime<Utc>> = rows.iter().map(|r| r.at).collect();
    sqlx::query(
        "INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, input, \
         status, duration_ms, invoked_at) \
         SELECT id, $2, app, gen_random_uuid(), 'check', '{}', status, 10, at \
         FROM unnest($1::uuid[], $3::text[], $4::text[], $5::timestamptz[]) \
             AS r(id, app, status, at)",
    )
    .bind(&ids)
    .bind(tenant)
    .bind(&apps)
    .bind(&statuses)
    .bind(&times)
    .execute(pool)
    .await
    .expect("rows insert");
    announce_history_changed(tenant).await;
}

async fn total(tenant: Uuid, query: &str) -> (i64, bool) {
    let response = client()
        .get(stack().api(&format!("/app-invocations?limit=1&{query}")))
        .bearer_auth(admin(tenant))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200, "{query}");
    let page: Value = response.json().await.expect("json");
    (
        page["total"].as_i64().expect("total"),
        page["totalIsEstimate"].as_bool().expect("totalIsEstimate"),
    )
}

fn param(at: DateTime<Utc>) -> String {
    form_urlencoded::byte_serialize(
        at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
            .as_bytes(),
    )
    .collect()
}

/// `from` and `to` of a request, either open.
type Window = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// Windows that start and end inside days, on day and month boundaries, on a day's last
/// microsecond, inside one day, and open on either side.
fn windows() -> Vec<Window> {
    let day_end = |at: DateTime<Utc>| at - Duration::microseconds(1);
    vec![
        (None, None),
        (Some(utc(2024, 1, 15, 10, 30)), Some(utc(2025, 4, 3, 12, 0))),
        (
            Some(utc(2024, 3, 1, 0, 0)),
            Some(day_end(utc(2024, 6, 1, 0, 0))),
        ),
        (Some(utc(2024, 3, 1, 0, 0)), Some(utc(2024, 6, 1, 0, 0))),
        (Some(utc(2024, 6, 15, 0, 0)), None),
        (None, Some(day_end(utc(2024, 6, 15, 0, 0)))),
        (
            None,
            Some(utc(2024, 6, 15, 0, 0) - Duration::microseconds(2)),
        ),
        (Some(utc(2024, 6, 15, 3, 0)), Some(utc(2024, 6, 15, 21, 0))),
        (Some(utc(2024, 2, 10, 0, 0)), Some(utc(2024, 2, 20, 5, 0))),
        (
            Some(utc(2024, 12, 31, 23, 0)),
            Some(day_end(utc(2025, 1, 1, 0, 0))),
        ),
        (Some(utc(2025, 1, 31, 13, 0)), Some(utc(2025, 3, 1, 0, 0))),
        (Some(utc(2026, 1, 1, 0, 0)), None),
    ]
}

#[tokio::test]
async fn totals_over_any_window_and_filter_match_the_rows() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let mut rows = rows();
    insert(&pool, tenant, &rows).await;
    // Another tenant's rows in the same buckets never count.
    insert(&pool, Uuid::new_v4(), &self::rows()).await;

    let check = |rows: Vec<Row>| async move {
        let filters: [(Option<&str>, &[&str]); 4] = [
            (None, &[]),
            (Some("aml"), &[]),
            (None, &["error", "timeout"]),
            (Some("kyc"), &["pending"]),
        ];
        for (from, to) in windows() {
            for (app, statuses) in filters {
                let expected = rows
                    .iter()
                    .filter(|r| from.is_none_or(|from| r.at >= from))
                    .filter(|r| to.is_none_or(|to| r.at <= to))
                    .filter(|r| app.is_none_or(|app| r.app == app))
                    .filter(|r| statuses.is_empty() || statuses.contains(&r.status))
                    .count() as i64;
                let mut query = String::new();
                if let Some(from) = from {
                    query += &format!("from={}&", param(from));
                }
                if let Some(to) = to {
                    query += &format!("to={}&", param(to));
                }
                if let Some(app) = app {
                    query += &format!("appName={app}&");
                }
                for status in statuses {
                    query += &format!("status={status}&");
                }
                assert_eq!(
                    total(tenant, &query).await,
                    (expected, false),
                    "total of {query}"
                );
            }
        }
    };
    check(rows.clone()).await;

    // Updates move rows between statuses, deletes remove them: the rollups follow both.
    let changed: Vec<Uuid> = rows.iter().step_by(7).map(|r| r.id).collect();
    sqlx::query(
        "UPDATE app_invocations SET status = 'timeout' WHERE tenant_id = $1 AND id = ANY($2)",
    )
    .bind(tenant)
    .bind(&changed)
    .execute(&pool)
    .await
    .expect("update");
    let removed: Vec<Uuid> = rows.iter().skip(3).step_by(11).map(|r| r.id).collect();
    sqlx::query("DELETE FROM app_invocations WHERE tenant_id = $1 AND id = ANY($2)")
        .bind(tenant)
        .bind(&removed)
        .execute(&pool)
        .await
        .expect("delete");
    announce_history_changed(tenant).await;
    for row in &mut rows {
        if changed.contains(&row.id) {
            row.status = "timeout";
        }
    }
    rows.retain(|r| !removed.contains(&r.id));
    // The API's read cache drops the tenant's answers when its subscriber has read the
    // message, which PUBLISH returning does not wait for: wait for the first answer to follow.
    let remaining = rows.len() as i64;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while total(tenant, "").await != (remaining, false) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    check(rows).await;
}

#[tokio::test]
async fn a_total_past_the_cap_is_an_estimate_at_the_cap() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    // 100,001 rows over 2025, one every five minutes or so, in one statement.
    sqlx::query(
        "INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, input, \
         status, duration_ms, invoked_at) \
         SELECT gen_random_uuid(), $1, 'kyc', gen_random_uuid(), 'check', '{}', \
                CASE WHEN i % 10 = 0 THEN 'error' ELSE 'success' END, 10, \
                '2025-01-01T00:00:00Z'::timestamptz + i * interval '315 seconds' \
         FROM generate_series(0, 100000) AS i",
    )
    .bind(tenant)
    .execute(&pool)
    .await
    .expect("rows insert");
    announce_history_changed(tenant).await;

    assert_eq!(total(tenant, "").await, (100_000, true));
    assert_eq!(total(tenant, "appName=kyc").await, (100_000, true));
    // Fewer matches are exact again: every tenth row is an error; a window inside one day.
    assert_eq!(total(tenant, "status=error").await, (10_001, false));
    let (from, to) = (utc(2025, 3, 10, 0, 0), utc(2025, 3, 10, 23, 59));
    let expected = (0..=100_000)
        .map(|i| utc(2025, 1, 1, 0, 0) + Duration::seconds(315 * i))
        .filter(|at| (from..=to).contains(at))
        .count() as i64;
    let day = format!("from={}&to={}", param(from), param(to));
    assert_eq!(total(tenant, &day).await, (expected, false));
    // A wide window whose whole days already pass the cap stops there.
    let wide = format!("from={}", param(utc(2024, 12, 31, 12, 0)));
    assert_eq!(total(tenant, &wide).await, (100_000, true));

    sqlx::query("DELETE FROM app_invocations WHERE tenant_id = $1")
        .bind(tenant)
        .execute(&pool)
        .await
        .expect("cleanup");
}
