//! `GET /app-callbacks` (SPEC §4.2): a tenant's sessions, newest first, narrowed by run, status
//! and app, with `total` counted over at most [`COUNT_CAP`](crate::page::COUNT_CAP) + 1 rows.
//! Each filter has an index that starts with the tenant and ends with the list's order
//! (`created_at DESC, id DESC`), so a page reads its rows and stops.

use sqlx::{PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use super::{Session, SessionStatus};
use crate::page::COUNT_CAP;
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
    let mut items = QueryBuilder::<Postgres>::new(
        "SELECT id, tenant_id, app_name, version_id, action, external_id, workflow_run_id, \
         step_id, status, output, error, created_at, completed_at FROM app_callback_sessions",
    );
    narrowed(&mut items, tenant, filter);
    items.push(" ORDER BY created_at DESC, id DESC LIMIT ");
    items.push_bind(page.limit);
    items.push(" OFFSET ");
    items.push_bind(page.offset);
    let mut count =
        QueryBuilder::<Postgres>::new("SELECT count(*) FROM (SELECT 1 FROM app_callback_sessions");
    narrowed(&mut count, tenant, filter);
    count.push(" LIMIT ");
    count.push_bind(COUNT_CAP + 1);
    count.push(") AS capped");
    let (rows, counted) = tokio::try_join!(
        items.build_query_as::<Session>().fetch_all(pool),
        count.build_query_scalar::<i64>().fetch_one(pool),
    )?;
    let items = rows.into_iter().map(|s| s.seen_with(visibility)).collect();
    Ok(ListPage::capped(items, counted))
}

/// ` WHERE tenant_id = … AND …` for `filter`.
fn narrowed(query: &mut QueryBuilder<Postgres>, tenant: Tenant, filter: &Filter) {
    query.push(" WHERE tenant_id = ");
    query.push_bind(tenant.id());
    if let Some(run) = filter.workflow_run_id {
        query.push(" AND workflow_run_id = ");
        query.push_bind(run);
    }
    if let Some(status) = filter.status {
        query.push(" AND status = ");
        query.push_bind(status.as_str());
    }
    if let Some(app) = &filter.app_name {
        query.push(" AND app_name = ");
        query.push_bind(app.clone());
    }
}
