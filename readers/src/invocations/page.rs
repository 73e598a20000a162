//! The page of `GET /app-invocations`: its keys first, then its rows.
//!
//! The keys `(invoked_at, id)` of the page come from one ordered scan of the filter's index
//! (every index of the table ends with them, see migration 20261128000002), which skips
//! `offset` matches without reading their rows; then only the page's rows are read, by primary
//! key. Several statuses are one ordered scan each, merged: a single scan of the status index
//! could not return them in time order.

use sqlx::{PgPool, Postgres, QueryBuilder};

use super::{InvocationFilter, InvocationRow, InvocationStatus, push_scope};
use crate::{Error, Page, Tenant};

/// The page's rows; `filter` already narrowed to the months that hold them (`months`) or to
/// its run's lifetime (`run_lifetime`), so only their partitions are planned and read.
pub(super) async fn rows(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) -> Result<Vec<InvocationRow>, Error> {
    let mut query = QueryBuilder::<Postgres>::new("");
    push_query(&mut query, tenant, filter, page);
    Ok(query
        .build_query_as::<InvocationRow>()
        .fetch_all(pool)
        .await?)
}

/// Appends the page's query to `query`.
pub(super) fn push_query(
    query: &mut QueryBuilder<Postgres>,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) {
    query.push("SELECT page.* FROM (");
    push_keys(query, tenant, filter, page);
    query.push(concat!(
        ") AS keys CROSS JOIN LATERAL (SELECT ",
        columns!(),
        " FROM app_invocations WHERE tenant_id = "
    ));
    // LIMIT 1 keeps the lookup a subquery run per key (one primary key probe in the key's own
    // month) rather than a join the planner may turn into a scan of the tenant's rows.
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

/// `SELECT invoked_at, id ...` of the page's matches, newest first.
fn push_keys(
    query: &mut QueryBuilder<Postgres>,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) {
    if filter.statuses.len() < 2 {
        query.push("SELECT invoked_at, id FROM app_invocations");
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
        query.push("(SELECT invoked_at, id FROM app_invocations");
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
