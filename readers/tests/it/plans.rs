//! Every filter combination of `GET /app-invocations` (SPEC §4.3) is served by an index that
//! leads with `tenant_id`: the plans of the queries the list runs, on a seeded and analysed
//! table, never scan a partition sequentially, and every index condition names the tenant and,
//! when the filter has a run, an app or statuses, one of them.
//!
//! The seed gives the planner a realistic shape: one large tenant among smaller ones, three
//! years of history, several apps and statuses, runs of a few attempts. It is small beside a
//! real history, and on partitions of a few hundred pages a sequential scan is the planner's
//! right choice; so the plans are taken with `enable_seqscan` off, which leaves a sequential
//! scan only where no index can serve the filter. Whether the planner picks the index at scale
//! is what `loadtests/history` measures over ten million rows.

use chrono::{Datelike, Months, TimeZone, Utc};
use readers::invocations::{InvocationFilter, InvocationStatus, explain_list};
use readers::{Page, Tenant};
use serde_json::Value;
use service::testing::stack;
use sqlx::PgPool;
use sqlx::postgres::PgConnectOptions;
use uuid::Uuid;

async fn database() -> PgPool {
    let options: PgConnectOptions = stack().var("DATABASE_URL").parse().expect("database url");
    let pool = PgPool::connect_with(options.options([("enable_seqscan", "off")]))
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

/// The partitions of the months the seed fills wholly: its first month and the current one
/// hold a few days of it, a few pages the planner may read any way, and the months made ahead
/// hold nothing.
fn whole_months() -> Vec<String> {
    let now = Utc::now().date_naive();
    let first = now - Months::new(36);
    (1..36)
        .map(|back| first + Months::new(back))
        .map(|month| format!("app_invocations_y{}m{:02}", month.year(), month.month()))
        .collect()
}

/// Whether a scan node reads one of `months` (a partition, or one of its indexes, which are
/// named after it).
fn reads_one_of(months: &[String], node: &Value) -> bool {
    let relation = node["Relation Name"]
        .as_str()
        .or_else(|| node["Index Name"].as_str())
        .unwrap_or_default();
    months
        .iter()
        .any(|month| relation.starts_with(month.as_str()))
}

/// Whether an index condition uses one of the filter's columns beside the tenant, so the index
/// range holds only matching rows; a lookup of a found key by its id counts as narrowed. An
/// index led by the tenant alone would pass the tenant check yet read every row of it.
fn narrows(filter: &InvocationFilter, condition: &str) -> bool {
    let columns = [
        (filter.workflow_run_id.is_some(), "workflow_run_id ="),
        (filter.app_name.is_some(), "app_name ="),
        (!filter.statuses.is_empty(), "status"),
    ];
    let filtered = columns.iter().any(|(on, _)| *on);
    !filtered
        || condition.contains("(id = ")
        || columns
            .iter()
            .any(|(on, column)| *on && condition.contains(column))
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

    let months = whole_months();
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
                    if !reads_one_of(&months, node) {
                        continue;
                    }
                    let kind = node["Node Type"].as_str().unwrap_or_default();
                    assert!(kind != "Seq Scan", "{filter:?} {page:?}: {plan}");
                    if kind.contains("Index") {
                        let condition = node["Index Cond"].as_str().unwrap_or_default();
                        assert!(
                            condition.contains("tenant_id ="),
                            "{filter:?} {page:?}: {kind} without the tenant: {plan}"
                        );
                        assert!(
                            narrows(&filter, condition),
                            "{filter:?} {page:?}: {kind} not narrowed by the filter: {plan}"
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
