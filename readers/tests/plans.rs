//! Every filter combination of `GET /app-invocations` (SPEC §4.3) is served by an index that
//! leads with `tenant_id`: the plans of the queries the list runs, on a seeded and analysed
//! table, never scan a partition sequentially (but an empty one, made ahead of its month), and
//! every index condition names the tenant.
//!
//! The seed gives the planner a realistic shape: one large tenant among smaller ones, three
//! years of history, several apps and statuses, runs of a few attempts.

use chrono::{TimeZone, Utc};
use readers::invocations::{InvocationFilter, InvocationStatus, explain_list};
use readers::{Page, Tenant};
use serde_json::Value;
use service::testing::stack;
use sqlx::PgPool;
use uuid::Uuid;

async fn database() -> PgPool {
    let pool = PgPool::connect(stack().var("DATABASE_URL"))
        .await
        .expect("database");
    schema::migrate(&pool).await.expect("migrations");
    pool
}

/// `rows` invocations of `tenant` over the last three years; every three share a run.
async fn seed(pool: &PgPool, tenant: Uuid, rows: i64) {
    sqlx::query(
        "INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, \
         workflow_run_id, input, output, status, duration_ms, invoked_at) \
         SELECT gen_random_uuid(), $1, (ARRAY['kyc-check', 'aml-screening', 'pep-watch', \
                'doc-verify', 'fraud-score'])[1 + i % 5], \
                '00000000-0000-4000-8000-000000000001', 'check', \
                ('00000000-0000-4000-8000-' || lpad(to_hex(i / 3), 12, '0'))::uuid, \
                '{\"name\": \"Ada\"}', '{\"score\": 0.2}', \
                CASE WHEN i % 20 = 0 THEN 'error' WHEN i % 50 = 1 THEN 'timeout' \
                     WHEN i % 33 = 2 THEN 'pending' ELSE 'success' END, \
                20 + i % 700, now() - (i * (interval '3 years' / $2)) \
         FROM generate_series(0, $2 - 1) AS i",
    )
    .bind(tenant)
    .bind(rows)
    .execute(pool)
    .await
    .expect("seed");
}

/// The plan nodes reading `app_invocations` or one of its partitions.
fn scans<'a>(node: &'a Value, found: &mut Vec<&'a Value>) {
    let relation = node["Relation Name"].as_str().unwrap_or_default();
    let index = node["Index Name"].as_str().unwrap_or_default();
    if relation.starts_with("app_invocations") || index.starts_with("app_invocations") {
        found.push(node);
    }
    for child in node["Plans"].as_array().into_iter().flatten() {
        scans(child, found);
    }
}

/// Every subset of {run, app, status, window}, the status filter with one and with several
/// statuses.
fn filters(run: Uuid) -> Vec<InvocationFilter> {
    let from = Utc.with_ymd_and_hms(2025, 2, 10, 6, 0, 0).single();
    let to = Utc.with_ymd_and_hms(2025, 5, 20, 18, 0, 0).single();
    let mut all = Vec::new();
    for mask in 0..16u8 {
        let status_sets = if mask & 4 == 0 {
            vec![vec![]]
        } else {
            vec![
                vec![InvocationStatus::Error],
                vec![InvocationStatus::Error, InvocationStatus::Timeout],
            ]
        };
        for statuses in status_sets {
            all.push(InvocationFilter {
                workflow_run_id: (mask & 1 != 0).then_some(run),
                app_name: (mask & 2 != 0).then(|| "aml-screening".to_owned()),
                statuses,
                from: from.filter(|_| mask & 8 != 0),
                to: to.filter(|_| mask & 8 != 0),
            });
        }
    }
    all
}

#[tokio::test]
async fn every_filter_combination_is_served_by_an_index_led_by_the_tenant() {
    let pool = database().await;
    sqlx::query("SELECT app_invocations_ensure_partitions((now() - interval '3 years')::date, 38)")
        .execute(&pool)
        .await
        .expect("partitions");
    let large = Uuid::new_v4();
    let others: Vec<Uuid> = (0..8).map(|_| Uuid::new_v4()).collect();
    seed(&pool, large, 60_000).await;
    for tenant in &others {
        seed(&pool, *tenant, 6_000).await;
    }
    sqlx::query("ANALYZE app_invocations")
        .execute(&pool)
        .await
        .expect("analyze");

    let run = Uuid::parse_str("00000000-0000-4000-8000-000000000010").expect("uuid");
    let pages = [
        Page {
            limit: 50,
            offset: 0,
        },
        Page {
            limit: 50,
            offset: 950,
        },
    ];
    for filter in filters(run) {
        for page in pages {
            let plans = explain_list(&pool, Tenant::new(large), &filter, page)
                .await
                .expect("explain");
            for plan in &plans {
                let mut found = Vec::new();
                scans(&plan[0]["Plan"], &mut found);
                assert!(!found.is_empty(), "{filter:?}: no scan of the history");
                for node in found {
                    let kind = node["Node Type"].as_str().unwrap_or_default();
                    // A month not yet written (the partitions made ahead) has no pages: the
                    // planner reads it as a sequential scan of nothing, at cost 0.
                    let empty = node["Total Cost"].as_f64() == Some(0.0);
                    assert!(kind != "Seq Scan" || empty, "{filter:?} {page:?}: {plan}");
                    if kind.contains("Index") {
                        let condition = node["Index Cond"].as_str().unwrap_or_default();
                        assert!(
                            condition.contains("tenant_id ="),
                            "{filter:?} {page:?}: {kind} without the tenant: {plan}"
                        );
                    }
                }
            }
        }
    }

    let seeded: Vec<Uuid> = others.iter().chain([&large]).copied().collect();
    sqlx::query("DELETE FROM app_invocations WHERE tenant_id = ANY($1)")
        .bind(seeded)
        .execute(&pool)
        .await
        .expect("cleanup");
}
