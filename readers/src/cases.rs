//! Cases (docs/cases-activity-audit.md "Cases"): one case, and a page of the tenant's newest.

use chrono::{DateTime, Utc};
use sqlx::{PgExecutor, PgPool};
use topics::cases::{Case, CaseStatus, Outcome, Priority};
use uuid::Uuid;

use crate::row::{Label, row_of};
use crate::{Error, ListPage, Page, Tenant};

row_of! {
    /// A row of `cases`.
    struct CaseRow => Case {
        id: Uuid,
        case_type: String,
        title: String,
        subject_id: Option<Uuid>,
        priority: Label<Priority>,
        status: Label<CaseStatus>,
        sla_due_at: DateTime<Utc>,
        sla_breached_at: Option<DateTime<Utc>>,
        outcome: Option<Label<Outcome>>,
        decision_comment: Option<String>,
        opened_by: String,
        opened_by_name: String,
        opened_at: DateTime<Utc>,
        decided_by: Option<String>,
        decided_by_name: Option<String>,
        decided_at: Option<DateTime<Utc>>,
        workflow_run_id: Option<Uuid>,
        step_id: Option<String>,
    }
}

const COLUMNS: &str = "id, type AS case_type, title, subject_id, priority, status, sla_due_at, \
    sla_breached_at, outcome, decision_comment, opened_by, opened_by_name, opened_at, \
    decided_by, decided_by_name, decided_at, workflow_run_id, step_id";

pub async fn get(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<Case>, Error> {
    let row: Option<CaseRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM cases WHERE tenant_id = $1 AND id = $2"
    )))
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(executor)
    .await?;
    Ok(row.map(Case::from))
}

/// The tenant's cases, newest first; `open` narrows to open or decided ones.
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    open: Option<bool>,
    page: Page,
) -> Result<ListPage<Case>, Error> {
    let status = open.map(|open| {
        if open {
            CaseStatus::Open.as_str()
        } else {
            CaseStatus::Decided.as_str()
        }
    });
    let rows: Vec<CaseRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM cases WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2) \
         ORDER BY opened_at DESC, id DESC LIMIT $3 OFFSET $4"
    )))
    .bind(tenant.id())
    .bind(status)
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(pool)
    .await?;
    let counted: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM cases WHERE tenant_id = $1 \
         AND ($2::text IS NULL OR status = $2) LIMIT 100001) AS capped",
    )
    .bind(tenant.id())
    .bind(status)
    .fetch_one(pool)
    .await?;
    let items = rows.into_iter().map(Case::from).collect();
    Ok(ListPage::capped(items, counted))
}
