//! Definition approval requests (SPEC §2.5, §4.5, §4.6): the list (`GET /approvals`), one
//! request and its discussion; what the detail adds: the [`diff`] between two versions, the
//! [`usage`] of the key, the [`approvers`]. A tenant's own app versions' publish requests are
//! [`apps`] (SPEC §4.7: `GET /apps/approvals`).

pub mod approvers;
pub mod apps;
pub mod diff;
pub mod usage;

use chrono::{DateTime, Utc};
use sqlx::{PgExecutor, PgPool, Postgres, QueryBuilder};
use topics::definitions::{ApprovalRequest, Comment, Decision, Kind};
use uuid::Uuid;

use crate::row::{Label, row_of};
use crate::{Error, ListPage, Page, Tenant};

row_of! {
    /// A row of `definition_approval_requests`.
    struct RequestRow => ApprovalRequest {
        id: Uuid,
        tenant_id: Uuid,
        kind: Label<Kind>,
        key: String,
        version: i32,
        requested_by: String,
        requested_by_name: String,
        requested_at: DateTime<Utc>,
        comment: Option<String>,
        decided_by: Option<String>,
        decided_by_name: Option<String>,
        decided_at: Option<DateTime<Utc>>,
        decision: Option<Label<Decision>>,
        decision_comment: Option<String>,
    }
}

row_of! {
    /// A row of `definition_approval_comments`.
    struct CommentRow => Comment {
        id: Uuid,
        author_id: String,
        author_name: String,
        body: String,
        created_at: DateTime<Utc>,
    }
}

/// Which requests `GET /approvals` lists (SPEC §4.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// `true`: open ones, oldest first; `false`: decided ones, newest decision first.
    pub open: bool,
    pub kind: Option<String>,
    /// Only the requests of this subject (`mine=true`).
    pub requested_by: Option<String>,
    /// Only the requests made over a day ago (`stale=true`).
    pub stale: bool,
}

const COLUMNS: &str = "id, tenant_id, kind, key, version, requested_by, requested_by_name, \
    requested_at, comment, decided_by, decided_by_name, decided_at, decision, decision_comment";

/// A page of the tenant's requests, with the exact total (requests are few: no cap).
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    filter: &Filter,
    page: Page,
) -> Result<ListPage<ApprovalRequest>, Error> {
    let mut select = QueryBuilder::new(format!(
        "SELECT {COLUMNS} FROM definition_approval_requests"
    ));
    push_conditions(&mut select, tenant, filter);
    select.push(if filter.open {
        " ORDER BY requested_at, id"
    } else {
        " ORDER BY decided_at DESC, id DESC"
    });
    select.push(" LIMIT ").push_bind(page.limit);
    select.push(" OFFSET ").push_bind(page.offset);
    let rows: Vec<RequestRow> = select.build_query_as().fetch_all(pool).await?;
    let items = rows.into_iter().map(ApprovalRequest::from).collect();
    let mut count = QueryBuilder::new("SELECT count(*) FROM definition_approval_requests");
    push_conditions(&mut count, tenant, filter);
    let total: i64 = count.build_query_scalar().fetch_one(pool).await?;
    Ok(ListPage {
        items,
        total,
        total_is_estimate: None,
    })
}

fn push_conditions(query: &mut QueryBuilder<Postgres>, tenant: Tenant, filter: &Filter) {
    query.push(" WHERE tenant_id = ").push_bind(tenant.id());
    query.push(if filter.open {
        " AND decision IS NULL"
    } else {
        " AND decision IS NOT NULL"
    });
    if let Some(kind) = &filter.kind {
        query.push(" AND kind = ").push_bind(kind.clone());
    }
    if let Some(subject) = &filter.requested_by {
        query
            .push(" AND requested_by = ")
            .push_bind(subject.clone());
    }
    if filter.stale {
        query.push(" AND requested_at < now() - interval '1 day'");
    }
}

/// One of the tenant's requests.
pub async fn get(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<ApprovalRequest>, Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM definition_approval_requests WHERE tenant_id = $1 AND id = $2"
    );
    let row: Option<RequestRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.id())
        .bind(id)
        .fetch_optional(executor)
        .await?;
    Ok(row.map(ApprovalRequest::from))
}

/// The request's discussion, oldest first.
pub async fn comments(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    approval: Uuid,
) -> Result<Vec<Comment>, Error> {
    let rows: Vec<CommentRow> = sqlx::query_as(
        "SELECT id, author_id, author_name, body, created_at FROM definition_approval_comments \
         WHERE tenant_id = $1 AND approval_id = $2 ORDER BY created_at, id",
    )
    .bind(tenant.id())
    .bind(approval)
    .fetch_all(executor)
    .await?;
    Ok(rows.into_iter().map(Comment::from).collect())
}

/// One comment of the tenant's.
pub async fn comment(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<Comment>, Error> {
    let row: Option<CommentRow> = sqlx::query_as(
        "SELECT id, author_id, author_name, body, created_at FROM definition_approval_comments \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(executor)
    .await?;
    Ok(row.map(Comment::from))
}
