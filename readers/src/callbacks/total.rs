//! `total` of `GET /app-callbacks`: every match up to [`COUNT_CAP`], without counting raw rows
//! where the kept counts already know the answer.
//!
//! `app_callback_session_counts` holds sessions per tenant, app and status, and
//! `app_callback_session_count_changes` what writers moved since the pipeline last folded them
//! in (migration `20261201000002_callback_session_counts.sql`); both are read in one statement,
//! so the sum is exact at that statement's snapshot. A run's sessions are few and have no
//! count: they are counted raw.

use sqlx::{PgPool, Postgres, QueryBuilder};

use super::Filter;
use super::list::{keyed, narrowed};
use crate::Tenant;
use crate::page::COUNT_CAP;

/// Sessions of `tenant` that `filter` keeps (above [`COUNT_CAP`] only when there are more).
pub(super) async fn of(pool: &PgPool, tenant: Tenant, filter: &Filter) -> Result<i64, sqlx::Error> {
    if filter.workflow_run_id.is_some() {
        return counted(pool, tenant, filter).await;
    }
    let mut query = QueryBuilder::<Postgres>::new(
        "SELECT coalesce(sum(sessions), 0)::bigint FROM (SELECT sessions FROM \
         app_callback_session_counts",
    );
    keyed(&mut query, tenant, filter);
    query.push(" UNION ALL SELECT sessions FROM app_callback_session_count_changes");
    keyed(&mut query, tenant, filter);
    query.push(") AS kept");
    query.build_query_scalar::<i64>().fetch_one(pool).await
}

/// The matching rows themselves, over at most [`COUNT_CAP`] + 1.
async fn counted(pool: &PgPool, tenant: Tenant, filter: &Filter) -> Result<i64, sqlx::Error> {
    let mut query =
        QueryBuilder::<Postgres>::new("SELECT count(*) FROM (SELECT 1 FROM app_callback_sessions");
    narrowed(&mut query, tenant, filter);
    query.push(" LIMIT ");
    query.push_bind(COUNT_CAP + 1);
    query.push(") AS capped");
    query.build_query_scalar::<i64>().fetch_one(pool).await
}
