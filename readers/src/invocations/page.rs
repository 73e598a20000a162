//! The page of `GET /app-invocations`: its keys first, then its rows.
//!
//! The keys `(invoked_at, id)` of the page come from one ordered scan of the filter's index
//! (every index of the table ends with them, see migration 20261128000002), which skips
//! `offset` matches without reading their rows; then only the page's rows are read, by primary
//! key. Several statuses are one ordered scan each, merged: a single scan of the status index
//! could not return them in time order.
//!
//! Outside a run, the page is read month by month from the partitions ([`by_month`]): the
//! month rollup says how many matches each month holds, newest first, so the months wholly
//! before the page's offset are passed without a query and the page's first month is read at
//! the offset left. A month the window cuts has only its whole month's count in the rollup: it
//! is read at the offset left, and when the page does not start in it, its matches are counted
//! (up to that offset) to know how many it took.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres, QueryBuilder};

use super::months::Month;
use super::total::push_count_rows;
use super::{HISTORY, InvocationFilter, InvocationRow, InvocationStatus, push_scope};
use crate::{Error, Page, Tenant};

/// The page's rows of a run's invocations, from the whole history: the run's lifetime
/// (`run_lifetime`) bounds the filter, so only its months are planned.
pub(super) async fn rows(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) -> Result<Vec<InvocationRow>, Error> {
    fetch(pool, HISTORY, tenant, filter, page).await
}

/// The page's rows, from the partitions of `months` (the rollup's matches per month of the
/// filter's window, newest first).
pub(super) async fn by_month(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
    months: &[(DateTime<Utc>, i64)],
) -> Result<Vec<InvocationRow>, Error> {
    let mut skip = page.offset;
    let mut rows = Vec::new();
    for &(start, matches) in months {
        let wanted = page.limit - rows.len() as i64;
        if wanted <= 0 {
            break;
        }
        let month = Month::of(start, filter);
        if month.whole && matches <= skip {
            skip -= matches;
            continue;
        }
        let at = Page {
            limit: wanted,
            offset: skip,
        };
        let found = fetch(pool, &month.table, tenant, &month.filter, at).await?;
        if found.is_empty() && skip > 0 {
            // The page starts after this month: it holds at most `skip` matches.
            skip -= count(pool, &month, tenant, skip).await?;
            continue;
        }
        skip = 0;
        rows.extend(found);
    }
    Ok(rows)
}

/// Matches of `month`, counted up to `cap`.
async fn count(pool: &PgPool, month: &Month, tenant: Tenant, cap: i64) -> Result<i64, Error> {
    let mut query = QueryBuilder::<Postgres>::new("");
    push_count_rows(&mut query, &month.table, tenant, &month.filter, cap);
    Ok(query.build_query_scalar::<i64>().fetch_one(pool).await?)
}

async fn fetch(
    pool: &PgPool,
    table: &str,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) -> Result<Vec<InvocationRow>, Error> {
    let mut query = QueryBuilder::<Postgres>::new("");
    push_query(&mut query, table, tenant, filter, page);
    Ok(query
        .build_query_as::<InvocationRow>()
        .fetch_all(pool)
        .await?)
}

/// Appends the page's query over `table` (the history, or one of its partitions) to `query`.
pub(super) fn push_query(
    query: &mut QueryBuilder<Postgres>,
    table: &str,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) {
    query.push("SELECT page.* FROM (");
    push_keys(query, table, tenant, filter, page);
    query.push(concat!(
        ") AS keys CROSS JOIN LATERAL (SELECT ",
        columns!(),
        " FROM "
    ));
    // LIMIT 1 keeps the lookup a subquery run per key (one primary key probe in the key's own
    // month) rather than a join the planner may turn into a scan of the tenant's rows.
    query.push(table).push(" WHERE tenant_id = ");
    query.push_bind(tenant.id());
    // The window again, so the planner keeps only its months for the lookups too.
    if let Some(from) = filter.from {
        query.push(" AND invoked_at >= ").push_bind(from);
    }
    if let Some(to) = filter.to {
        query.push(" AND invoked_at <= ").push_bind(to);
    }
    query.push(
        " AND invoked_at = keys.invoked_at AND id = keys.id LIMIT 1) AS page \
         ORDER BY page.invoked_at DESC, page.id DESC",
    );
}

/// `SELECT invoked_at, id ...` of the page's matches in `table`, newest first.
fn push_keys(
    query: &mut QueryBuilder<Postgres>,
    table: &str,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) {
    if filter.statuses.len() < 2 {
        query.push("SELECT invoked_at, id FROM ").push(table);
        push_scope(query, tenant, filter, &filter.statuses);
        push_order(query, page.limit, Some(page.offset));
        return;
    }
    // The first `offset + limit` of each status hold the page.
    query.push("SELECT invoked_at, id FROM (");
    for (i, status) in filter.statuses.iter().enumerate() {
        if i > 0 {
            query.push(" UNION ALL ");
        }
        query.push("(SELECT invoked_at, id FROM ").push(table);
        push_scope(
            query,
            tenant,
            filter,
            std::slice::from_ref::<InvocationStatus>(status),
        );
        push_order(query, page.offset + page.limit, None);
        query.push(")");
    }
    query.push(") AS merged");
    push_order(query, page.limit, Some(page.offset));
}

fn push_order(query: &mut QueryBuilder<Postgres>, limit: i64, offset: Option<i64>) {
    query
        .push(" ORDER BY invoked_at DESC, id DESC LIMIT ")
        .push_bind(limit);
    if let Some(offset) = offset {
        query.push(" OFFSET ").push_bind(offset);
    }
}
