//! Every page of `GET /app-invocations` is the slice of the tenant's matches, newest first, that
//! one query over the whole history would answer: whatever months the page spans, skips or
//! starts in, and wherever a window cuts them (the list reads month by month from the
//! partitions, skipping months by their rollup counts).

use chrono::{DateTime, Duration, TimeZone, Utc};
use readers::invocations::{InvocationFilter, InvocationStatus, list};
use readers::{Page, Tenant};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::database;

fn month(year: i32, month: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(year, month, 1, 0, 0, 0)
        .single()
        .expect("month")
}

/// `count` invocations spread over the month starting at `start`, its first and last
/// microseconds included; app and status vary with the row.
async fn seed_month(pool: &PgPool, tenant: Uuid, start: DateTime<Utc>, count: i64) {
    sqlx::query(
        "INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, input, \
         status, duration_ms, invoked_at) \
         SELECT gen_random_uuid(), $1, (ARRAY['kyc-check', 'aml-screening'])[1 + i % 2], \
                '00000000-0000-4000-8000-000000000001', 'check', '{}', \
                (ARRAY['success', 'error', 'timeout'])[1 + i % 3], 10, \
                CASE WHEN i = 0 THEN $2 WHEN i = $4 - 1 THEN $3 \
                     ELSE $2 + (($3 - $2) * i / $4) END \
         FROM generate_series(0, $4 - 1) AS i",
    )
    .bind(tenant)
    .bind(start)
    .bind(next(start) - Duration::microseconds(1))
    .bind(count)
    .execute(pool)
    .await
    .expect("seed");
}

fn next(start: DateTime<Utc>) -> DateTime<Utc> {
    start
        .checked_add_months(chrono::Months::new(1))
        .expect("next month")
}

/// The ids of the page as one query over the whole history answers it.
async fn expected(pool: &PgPool, tenant: Uuid, filter: &InvocationFilter, page: Page) -> Vec<Uuid> {
    let statuses: Vec<&str> = filter.statuses.iter().map(|s| s.as_str()).collect();
    sqlx::query_scalar(
        "SELECT id FROM app_invocations WHERE tenant_id = $1 \
           AND ($2::text IS NULL OR app_name = $2) \
           AND (cardinality($3::text[]) = 0 OR status = ANY($3)) \
           AND ($4::timestamptz IS NULL OR invoked_at >= $4) \
           AND ($5::timestamptz IS NULL OR invoked_at <= $5) \
         ORDER BY invoked_at DESC, id DESC LIMIT $6 OFFSET $7",
    )
    .bind(tenant)
    .bind(filter.app_name.as_deref())
    .bind(statuses)
    .bind(filter.from)
    .bind(filter.to)
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(pool)
    .await
    .expect("reference")
}

#[tokio::test]
async fn pages_across_months_skipped_and_cut_by_the_window_are_the_whole_historys_slices() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    sqlx::query("SELECT app_invocations_ensure_partitions('2025-01-01', 8)")
        .execute(&pool)
        .await
        .expect("partitions");
    // Months of 13, none, 1, 40 and 7 matches, newest last.
    let seeded = [
        (month(2025, 1), 13),
        (month(2025, 3), 1),
        (month(2025, 4), 40),
        (month(2025, 5), 7),
    ];
    for (start, count) in seeded {
        seed_month(&pool, tenant, start, count).await;
    }
    let windows = [
        (None, None),
        // Cuts April and January, skips the empty February whole.
        (
            Some(Utc.with_ymd_and_hms(2025, 1, 20, 0, 0, 0).unwrap()),
            Some(Utc.with_ymd_and_hms(2025, 4, 18, 12, 0, 0).unwrap()),
        ),
        // Inside one month.
        (
            Some(Utc.with_ymd_and_hms(2025, 4, 3, 0, 0, 0).unwrap()),
            Some(Utc.with_ymd_and_hms(2025, 4, 9, 0, 0, 0).unwrap()),
        ),
        // From the first microsecond of March to the last of April: two whole months.
        (
            Some(month(2025, 3)),
            Some(month(2025, 5) - Duration::microseconds(1)),
        ),
    ];
    let mut compared = 0;
    for (from, to) in windows {
        for app in [None, Some("aml-screening".to_owned())] {
            for statuses in [
                vec![],
                vec![InvocationStatus::Error],
                vec![InvocationStatus::Error, InvocationStatus::Timeout],
            ] {
                let filter = InvocationFilter {
                    app_name: app.clone(),
                    statuses,
                    from,
                    to,
                    ..InvocationFilter::default()
                };
                for limit in [1, 5, 12] {
                    for offset in 0..64 {
                        let page = Page { limit, offset };
                        let listed = list(&pool, Tenant::new(tenant), &filter, page)
                            .await
                            .expect("list");
                        let ids: Vec<Uuid> = listed.items.iter().map(|r| r.id).collect();
                        let want = expected(&pool, tenant, &filter, page).await;
                        assert_eq!(ids, want, "{filter:?} {page:?}");
                        compared += 1;
                    }
                }
            }
        }
    }
    assert_eq!(compared, 4 * 2 * 3 * 3 * 64);
    sqlx::query("DELETE FROM app_invocations WHERE tenant_id = $1")
        .bind(tenant)
        .execute(&pool)
        .await
        .expect("cleanup");
}
