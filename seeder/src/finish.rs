//! What follows the rows: the history's indexes rebuilt compact, fresh planner statistics, and
//! read caches told that anything may have changed.

use std::time::Instant;

use sqlx::PgConnection;

use crate::Error;

/// Below this share of the table's rows, the seeded rows' half-empty index pages are not worth
/// rebuilding every index of the table for (the rebuild takes about 11 s per million rows).
const REBUILD_FROM_SHARE: f64 = 0.25;

/// Rebuilds every index of `app_invocations` when the `written` rows are a large part of it.
/// Each index leads with the tenant, and rows arrive in time order for all tenants at once, so
/// every insert lands at the end of one tenant's key range inside the index, not at its right
/// edge: Postgres splits such a page in half (it packs the left page only on the rightmost
/// page, or for keys of 16 bytes at most), and the left half is never written again. Seeded
/// indexes end up about half empty (660 bytes per row instead of 380); rebuilt, 10 M rows take
/// 3 GB less and are read from fewer pages.
///
/// `REINDEX` locks one partition at a time while rebuilding it: reads of that month wait a
/// few seconds.
pub(super) async fn rebuild_indexes(
    connection: &mut PgConnection,
    written: u64,
) -> Result<(), Error> {
    // The rollups count every row exactly, and cheaply.
    let rows: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(calls), 0)::bigint FROM app_invocation_counts WHERE span = 'month'",
    )
    .fetch_one(&mut *connection)
    .await?;
    if (written as f64) < REBUILD_FROM_SHARE * rows as f64 {
        eprintln!("seed-history: indexes kept: {written} of {rows} rows are new");
        return Ok(());
    }
    let started = Instant::now();
    // Sorts of the largest month's index entries fit in memory.
    sqlx::raw_sql("SET maintenance_work_mem = '256MB'")
        .execute(&mut *connection)
        .await?;
    sqlx::raw_sql("REINDEX TABLE app_invocations")
        .execute(&mut *connection)
        .await?;
    sqlx::raw_sql("RESET maintenance_work_mem")
        .execute(&mut *connection)
        .await?;
    eprintln!(
        "seed-history: rebuilt the indexes of app_invocations in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Statistics of the new history, so the planner does not plan for empty tables.
pub(super) async fn analyze(connection: &mut PgConnection) -> Result<(), Error> {
    let started = Instant::now();
    sqlx::raw_sql("ANALYZE app_invocations, workflow_runs, workflow_run_steps")
        .execute(connection)
        .await?;
    eprintln!(
        "seed-history: analyzed app_invocations and the workflow runs in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Ingress caches invocation reads per tenant: `*` makes every cache drop everything.
pub(super) async fn tell_read_caches(redis_url: &str) -> Result<(), Error> {
    let client = redis::Client::open(redis_url)?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    redis::cmd("PUBLISH")
        .arg(readers::invocations::CHANGED_CHANNEL)
        .arg("*")
        .query_async::<i64>(&mut connection)
        .await?;
    Ok(())
}
