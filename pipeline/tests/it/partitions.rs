//! Months of `app_invocations` ensured by callers at once (workers starting together, the
//! seeding command beside a worker, test processes on a fresh database) are each created once,
//! and every caller succeeds.

use rand::Rng;
use sqlx::PgPool;

use crate::support::database;

const CALLERS: usize = 8;
const MONTHS: i32 = 3;

#[tokio::test]
async fn callers_at_once_each_succeed_and_each_month_is_created_once() {
    let pool = database().await;
    // Months of a year no other test writes, so they are missing before the callers start.
    let year: i32 = rand::rng().random_range(1100..1900);
    let first = format!("{year}-01-01");
    let callers = (0..CALLERS).map(|_| {
        let (pool, first) = (pool.clone(), first.clone());
        tokio::spawn(async move {
            sqlx::query("SELECT app_invocations_ensure_partitions($1::date, $2)")
                .bind(first)
                .bind(MONTHS)
                .execute(&pool)
                .await
        })
    });
    let results = futures::future::join_all(callers).await;
    let names = partitions_of(&pool, year).await;
    drop_partitions(&pool, &names).await;

    for result in results {
        result.expect("caller ran").expect("months ensured");
    }
    assert_eq!(
        names,
        (1..=MONTHS)
            .map(|month| format!("app_invocations_y{year}m{month:02}"))
            .collect::<Vec<_>>()
    );
}

async fn partitions_of(pool: &PgPool, year: i32) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = 'app_invocations'::regclass AND c.relname LIKE $1 ORDER BY 1",
    )
    .bind(format!("app_invocations_y{year}m%"))
    .fetch_all(pool)
    .await
    .expect("partitions listed")
}

/// Detached concurrently (a lock that does not stop other tests' reads and writes of the
/// history), then dropped.
async fn drop_partitions(pool: &PgPool, names: &[String]) {
    for name in names {
        for statement in [
            format!("ALTER TABLE app_invocations DETACH PARTITION {name} CONCURRENTLY"),
            format!("DROP TABLE {name}"),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
                .execute(pool)
                .await
                .expect("test partition dropped");
        }
    }
}
