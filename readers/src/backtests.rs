//! Backtests (SPEC §2.7; docs/definitions-and-runs.md "Backtests"): one, a page of the tenant's
//! newest, and the latest completed one of a definition version (the approval detail's `backtest`).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgExecutor, PgPool};
use topics::backtests::{Backtest, BacktestStatus, Progress, Sample};
use uuid::Uuid;

use crate::{Error, ListPage, Page, Tenant};

/// A row of `backtests`.
#[derive(Debug, sqlx::FromRow)]
struct Row {
    id: Uuid,
    tenant_id: Uuid,
    kind: String,
    key: String,
    version: i32,
    last_days: i32,
    sample_limit: i32,
    #[sqlx(try_from = "String")]
    status: BacktestStatus,
    progress_done: i32,
    progress_total: i32,
    summary: Option<Value>,
    error: Option<String>,
    engine_workflow_id: Option<String>,
    requested_by: String,
    requested_by_name: String,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    attempts: i32,
}

impl From<Row> for Backtest {
    fn from(row: Row) -> Self {
        let of = |kind: &str| (row.kind == kind).then(|| (row.key.clone(), row.version));
        let (rule, rule_set, workflow) = (of("rule"), of("rule_set"), of("workflow"));
        Backtest {
            id: row.id,
            tenant_id: row.tenant_id,
            rule_key: rule.as_ref().map(|(key, _)| key.clone()),
            rule_version: rule.map(|(_, version)| version),
            rule_set_key: rule_set.as_ref().map(|(key, _)| key.clone()),
            rule_set_version: rule_set.map(|(_, version)| version),
            workflow_key: workflow.as_ref().map(|(key, _)| key.clone()),
            workflow_version: workflow.map(|(_, version)| version),
            sample: Sample {
                last_days: row.last_days,
                limit: row.sample_limit,
            },
            status: row.status,
            progress: Progress {
                done: row.progress_done,
                total: row.progress_total,
            },
            // Written by the pipeline from this same type; an unreadable one shows as none.
            summary: row.summary.and_then(|s| serde_json::from_value(s).ok()),
            error: row.error,
            engine_workflow_id: row.engine_workflow_id,
            requested_by: row.requested_by,
            requested_by_name: row.requested_by_name,
            created_at: row.created_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
            attempts: row.attempts,
        }
    }
}

const COLUMNS: &str = "id, tenant_id, kind, key, version, last_days, sample_limit, status, \
    progress_done, progress_total, summary, error, engine_workflow_id, requested_by, \
    requested_by_name, created_at, started_at, finished_at, attempts";

pub async fn get(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<Backtest>, Error> {
    let row: Option<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM backtests WHERE tenant_id = $1 AND id = $2"
    )))
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(executor)
    .await?;
    Ok(row.map(Backtest::from))
}

/// Which backtests a list holds: of one definition kind, key and version, and in a status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub kind: Option<String>,
    pub key: Option<String>,
    pub version: Option<i32>,
    pub status: Option<String>,
}

/// The tenant's backtests, newest first.
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    filter: &Filter,
    page: Page,
) -> Result<ListPage<Backtest>, Error> {
    const WHERE: &str = "WHERE tenant_id = $1 AND ($2::text IS NULL OR kind = $2) \
        AND ($3::text IS NULL OR key = $3) AND ($4::int IS NULL OR version = $4) \
        AND ($5::text IS NULL OR status = $5)";
    let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM backtests {WHERE} ORDER BY created_at DESC, id DESC \
         LIMIT $6 OFFSET $7"
    )))
    .bind(tenant.id())
    .bind(&filter.kind)
    .bind(&filter.key)
    .bind(filter.version)
    .bind(&filter.status)
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(pool)
    .await?;
    let counted: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM (SELECT 1 FROM backtests {WHERE} LIMIT $6) AS capped"
    )))
    .bind(tenant.id())
    .bind(&filter.kind)
    .bind(&filter.key)
    .bind(filter.version)
    .bind(&filter.status)
    .bind(crate::page::COUNT_CAP + 1)
    .fetch_one(pool)
    .await?;
    Ok(ListPage::capped(
        rows.into_iter().map(Backtest::from).collect(),
        counted,
    ))
}

/// The latest completed backtest of version `version` of the tenant's `kind` definition `key`.
pub async fn latest_completed(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    (kind, key, version): (&str, &str, i32),
) -> Result<Option<Backtest>, Error> {
    let row: Option<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM backtests WHERE tenant_id = $1 AND kind = $2 AND key = $3 \
         AND version = $4 AND status = 'completed' ORDER BY finished_at DESC, id DESC LIMIT 1"
    )))
    .bind(tenant.id())
    .bind(kind)
    .bind(key)
    .bind(version)
    .fetch_optional(executor)
    .await?;
    Ok(row.map(Backtest::from))
}
