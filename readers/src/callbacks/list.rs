//! `GET /app-callbacks` (SPEC §4.2): a tenant's sessions, newest first, narrowed by run, status
//! and app, with `total` from the kept counts ([`total`](super::total)).
//!
//! Each filter of app and status has an index that starts with the tenant, holds the filter's
//! columns and ends with the list's order (`created_at DESC, id DESC`) and the id, so a page's
//! ids are read from the index, the entries passed over by the offset included, and only the
//! page's own rows are read from the table (and, for entries of pages not yet all-visible, the
//! table is asked whether they are). A run's few sessions come from the index of runs.

use sqlx::{PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use super::{Session, SessionStatus, total};
use crate::redaction::Visibility;
use crate::{Error, ListPage, Page, Tenant};

/// The list's filters, already validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub workflow_run_id: Option<Uuid>,
    pub status: Option<SessionStatus>,
    pub app_name: Option<String>,
}

/// One page of the tenant's sessions and the capped count of all that match.
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    filter: &Filter,
    page: Page,
    visibility: Visibility,
) -> Result<ListPage<Session>, Error> {
    let (rows, counted) = tokio::try_join!(
        rows(pool, tenant, filter, page),
        total::of(pool, tenant, filter),
    )?;
    let items = rows.into_iter().map(|s| s.seen_with(visibility)).collect();
    Ok(ListPage::capped(items, counted))
}

/// The page's rows: their ids from the filter's index, then those rows alone.
async fn rows(
    pool: &PgPool,
    tenant: Tenant,
    filter: &Filter,
    page: Page,
) -> Result<Vec<Session>, sqlx::Error> {
    let mut query = QueryBuilder::<Postgres>::new(
        "SELECT id, tenant_id, app_name, version_id, action, external_id, workflow_run_id, \
         step_id, status, output, error, created_at, completed_at FROM app_callback_sessions \
         WHERE tenant_id = ",
    );
    query.push_bind(tenant.id());
    query.push(" AND id = ANY(ARRAY(SELECT id FROM app_callback_sessions");
    narrowed(&mut query, tenant, filter);
    query.push(" ORDER BY created_at DESC, id DESC LIMIT ");
    query.push_bind(page.limit);
    query.push(" OFFSET ");
    query.push_bind(page.offset);
    query.push(")) ORDER BY created_at DESC, id DESC");
    query.build_query_as::<Session>().fetch_all(pool).await
}

/// ` WHERE tenant_id = … AND …` for `filter`.
pub(super) fn narrowed(query: &mut QueryBuilder<Postgres>, tenant: Tenant, filter: &Filter) {
    keyed(query, tenant, filter);
    if let Some(run) = filter.workflow_run_id {
        query.push(" AND workflow_run_id = ");
        query.push_bind(run);
    }
}

/// ` WHERE tenant_id = … AND …` for `filter` without its run: the columns the kept counts are
/// keyed by (tenant, app and status).
pub(super) fn keyed(query: &mut QueryBuilder<Postgres>, tenant: Tenant, filter: &Filter) {
    query.push(" WHERE tenant_id = ");
    query.push_bind(tenant.id());
    if let Some(status) = filter.status {
        query.push(" AND status = ");
        query.push_bind(status.as_str());
    }
    if let Some(app) = &filter.app_name {
        query.push(" AND app_name = ");
        query.push_bind(app.clone());
    }
}
