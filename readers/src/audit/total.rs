//! `total` of `GET /audit-events`: every match up to [`COUNT_CAP`], without counting raw rows
//! where the kept counts already know the answer.
//!
//! `audit_event_counts` holds events per tenant, action and actor, and
//! `audit_event_count_changes` what writers appended since the pipeline last folded them in
//! (migration `20261202000007_audit_event_counts.sql`); both are read in one statement, so the
//! sum is exact at that statement's snapshot. A filter by time has no count: its rows are
//! counted from the window's index range, at most [`COUNT_CAP`] + 1 of them.

use sqlx::{PgPool, Postgres, QueryBuilder};

use super::{Filter, push_source};
use crate::Tenant;
use crate::page::COUNT_CAP;

/// Events of `tenant` that `filter` keeps (above [`COUNT_CAP`] only when there are more).
pub(super) async fn of(pool: &PgPool, tenant: Tenant, filter: &Filter) -> Result<i64, sqlx::Error> {
    if filter.from.is_some() || filter.to.is_some() {
        return counted(pool, tenant, filter).await;
    }
    let mut query = QueryBuilder::<Postgres>::new(
        "SELECT coalesce(sum(events), 0)::bigint FROM (SELECT events FROM audit_event_counts",
    );
    keyed(&mut query, tenant, filter);
    query.push(" UNION ALL SELECT events FROM audit_event_count_changes");
    keyed(&mut query, tenant, filter);
    query.push(") AS kept");
    query.build_query_scalar::<i64>().fetch_one(pool).await
}

/// The tenant's rows of a kept count, of the filter's actions and actor when it names them.
fn keyed(query: &mut QueryBuilder<Postgres>, tenant: Tenant, filter: &Filter) {
    query.push(" WHERE tenant_id = ").push_bind(tenant.id());
    if !filter.actions.is_empty() {
        query
            .push(" AND action = ANY(")
            .push_bind(filter.actions.clone())
            .push(")");
    }
    if let Some(actor) = &filter.actor {
        query.push(" AND actor_id = ").push_bind(actor.clone());
    }
}

/// The matching rows themselves, over at most [`COUNT_CAP`] + 1.
async fn counted(pool: &PgPool, tenant: Tenant, filter: &Filter) -> Result<i64, sqlx::Error> {
    let mut query = QueryBuilder::<Postgres>::new("SELECT count(*) FROM (SELECT 1 FROM ");
    push_source(&mut query, tenant, filter, COUNT_CAP + 1);
    query
        .push(" LIMIT ")
        .push_bind(COUNT_CAP + 1)
        .push(") AS capped");
    query.build_query_scalar::<i64>().fetch_one(pool).await
}
