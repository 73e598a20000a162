//! App invocation records (SPEC 2.4) as `GET /app-invocations` and `GET /app-invocations/:id`
//! answer them (SPEC 4.3, 4.4).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;
use sqlx::{PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use crate::redaction::{Visibility, redact_text};
use crate::{Error, ListPage, Page, Tenant};

/// The selected columns, as a macro so queries stay `&'static str` (sqlx refuses built strings).
macro_rules! columns {
    () => {
        "id, tenant_id, app_name, version_id, action, subject_id, workflow_run_id, \
         input, output, status, error, duration_ms, invoked_at, idempotency_key, attempt, \
         usage_http_requests, usage_document_reads, usage_log_lines"
    };
}

mod months;
mod page;
mod payload;
mod rollup;
mod run_lifetime;
mod total;

pub use payload::Payload;

/// The partitioned table of every invocation (`months` names its partitions).
const HISTORY: &str = "app_invocations";

/// What the unit tests of the history's modules share.
#[cfg(test)]
mod testing {
    use chrono::{DateTime, Utc};

    /// An instant written as RFC 3339.
    pub(super) fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("time")
            .with_timezone(&Utc)
    }
}

/// Redis channel on which writers of `app_invocations` name each tenant whose history they
/// changed, once their transaction committed (or `*`: any tenant may have changed). Read
/// caches listen to it; a writer that cannot tell (a crash between commit and message) is
/// covered by the caches' time to live.
pub const CHANGED_CHANNEL: &str = "app_invocations:changed";

topics::labels::labels! {
    /// Status of an invocation attempt.
    pub enum InvocationStatus {
        Success = "success",
        Error = "error",
        Timeout = "timeout",
        Pending = "pending",
    }
}

/// Filters of `GET /app-invocations`, already validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InvocationFilter {
    pub workflow_run_id: Option<Uuid>,
    pub app_name: Option<String>,
    /// Any of these; empty means every status.
    pub statuses: Vec<InvocationStatus>,
    /// Inclusive lower bound on `invokedAt`.
    pub from: Option<DateTime<Utc>>,
    /// Inclusive upper bound on `invokedAt`.
    pub to: Option<DateTime<Utc>>,
}

impl InvocationFilter {
    /// The statuses matched, by name: every one when the filter names none (the rollups'
    /// queries test `status = ANY(...)` either way).
    fn status_names(&self) -> Vec<&'static str> {
        let statuses: &[InvocationStatus] = if self.statuses.is_empty() {
            InvocationStatus::ALL
        } else {
            &self.statuses
        };
        statuses.iter().map(|s| s.as_str()).collect()
    }
}

/// What one attempt used (SPEC 2.4 `usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub http_requests: i32,
    pub document_reads: i32,
    pub log_lines: i32,
}

/// An invocation record as the API answers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InvocationRecord {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub app_name: String,
    pub version_id: Uuid,
    pub action: String,
    pub subject_id: Option<Uuid>,
    pub workflow_run_id: Option<Uuid>,
    pub input: Payload,
    pub output: Option<Payload>,
    pub status: &'static str,
    pub error: Option<String>,
    pub duration_ms: f64,
    pub invoked_at: DateTime<Utc>,
    pub idempotency_key: Option<String>,
    pub attempt: i32,
    pub usage: Option<Usage>,
}

impl InvocationRecord {
    /// The record as a caller with the given visibility may see it.
    pub fn visible_to(self, visibility: Visibility) -> Self {
        match visibility {
            Visibility::Full => self,
            Visibility::Redacted => Self {
                input: self.input.redacted(),
                output: self.output.map(Payload::redacted),
                error: redact_text(self.error),
                ..self
            },
        }
    }
}

#[derive(sqlx::FromRow)]
struct InvocationRow {
    id: Uuid,
    tenant_id: Uuid,
    app_name: String,
    version_id: Uuid,
    action: String,
    subject_id: Option<Uuid>,
    workflow_run_id: Option<Uuid>,
    input: Box<RawValue>,
    output: Option<Box<RawValue>>,
    status: String,
    error: Option<String>,
    duration_ms: f64,
    invoked_at: DateTime<Utc>,
    idempotency_key: Option<String>,
    attempt: i32,
    usage_http_requests: Option<i32>,
    usage_document_reads: Option<i32>,
    usage_log_lines: Option<i32>,
}

impl From<InvocationRow> for InvocationRecord {
    fn from(row: InvocationRow) -> Self {
        let usage = match (
            row.usage_http_requests,
            row.usage_document_reads,
            row.usage_log_lines,
        ) {
            (Some(http_requests), Some(document_reads), Some(log_lines)) => Some(Usage {
                http_requests,
                document_reads,
                log_lines,
            }),
            _ => None,
        };
        Self {
            id: row.id,
            tenant_id: row.tenant_id,
            app_name: row.app_name,
            version_id: row.version_id,
            action: row.action,
            subject_id: row.subject_id,
            workflow_run_id: row.workflow_run_id,
            input: Payload::Stored(row.input),
            output: row.output.map(Payload::Stored),
            // The column has a CHECK constraint; an unknown value cannot be stored.
            status: InvocationStatus::parse(&row.status)
                .map(InvocationStatus::as_str)
                .unwrap_or("error"),
            error: row.error,
            duration_ms: row.duration_ms,
            invoked_at: row.invoked_at,
            idempotency_key: row.idempotency_key,
            attempt: row.attempt,
            usage,
        }
    }
}

/// Appends `WHERE tenant_id = $1 AND <filters>` to `query`, with `statuses` in place of the
/// filter's (any of them; none: every status).
fn push_scope(
    query: &mut QueryBuilder<Postgres>,
    tenant: Tenant,
    filter: &InvocationFilter,
    statuses: &[InvocationStatus],
) {
    query.push(" WHERE tenant_id = ").push_bind(tenant.id());
    if let Some(run) = filter.workflow_run_id {
        query.push(" AND workflow_run_id = ").push_bind(run);
    }
    if let Some(app) = &filter.app_name {
        query.push(" AND app_name = ").push_bind(app.clone());
    }
    match statuses {
        [] => {}
        [status] => {
            query.push(" AND status = ").push_bind(status.as_str());
        }
        _ => {
            let statuses: Vec<&'static str> = statuses.iter().map(|s| s.as_str()).collect();
            query
                .push(" AND status = ANY(")
                .push_bind(statuses)
                .push(")");
        }
    }
    if let Some(from) = filter.from {
        query.push(" AND invoked_at >= ").push_bind(from);
    }
    if let Some(to) = filter.to {
        query.push(" AND invoked_at <= ").push_bind(to);
    }
}

/// One page of a tenant's invocations, newest first, with the capped count of every match
/// (`total`).
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) -> Result<ListPage<InvocationRecord>, Error> {
    let filter = run_lifetime::bound(pool, tenant, filter).await?;
    let (rows, counted) = match filter.workflow_run_id {
        // The page and the count run on two connections at once.
        Some(_) => tokio::join!(
            page::rows(pool, tenant, &filter, page),
            total::count_run(pool, tenant, &filter)
        ),
        None => {
            let split = total::split(filter.from, filter.to);
            let rollup = rollup::load(pool, tenant, &filter, &split).await?;
            if rollup.months.is_empty() {
                return Ok(ListPage::capped(Vec::new(), 0));
            }
            tokio::join!(
                page::by_month(pool, tenant, &filter, page, &rollup.months),
                total::count(pool, tenant, &filter, &split, &rollup)
            )
        }
    };
    let items = rows?.into_iter().map(InvocationRecord::from).collect();
    Ok(ListPage::capped(items, counted?))
}

/// The plans (`EXPLAIN (FORMAT JSON)`) of the queries [`list`] runs on the history for these
/// arguments (the rollup and the run's lifetime aside): outside a run, the page's query on each
/// of the three newest months with matches, at the page's offset, and the count of a month; for
/// tests that check which indexes serve each filter.
#[cfg(feature = "testing")]
pub async fn explain_list(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    page: Page,
) -> Result<Vec<serde_json::Value>, Error> {
    let filter = &run_lifetime::bound(pool, tenant, filter).await?;
    let mut queries = Vec::new();
    match filter.workflow_run_id {
        Some(_) => {
            let mut query = QueryBuilder::<Postgres>::new("EXPLAIN (FORMAT JSON) ");
            page::push_query(&mut query, HISTORY, tenant, filter, page);
            queries.push(query);
        }
        None => {
            let split = total::split(filter.from, filter.to);
            let rollup = rollup::load(pool, tenant, filter, &split).await?;
            for (start, _) in rollup.months.iter().take(3) {
                let month = months::Month::of(*start, filter);
                let mut query = QueryBuilder::<Postgres>::new("EXPLAIN (FORMAT JSON) ");
                page::push_query(&mut query, &month.table, tenant, &month.filter, page);
                queries.push(query);
                let mut query = QueryBuilder::<Postgres>::new("EXPLAIN (FORMAT JSON) ");
                total::push_count_rows(&mut query, &month.table, tenant, &month.filter, 1_000);
                queries.push(query);
            }
        }
    }
    let mut plans = Vec::new();
    for mut query in queries {
        plans.push(
            query
                .build_query_scalar::<serde_json::Value>()
                .fetch_one(pool)
                .await?,
        );
    }
    plans.extend(total::explain(pool, tenant, filter).await?);
    Ok(plans)
}

/// One invocation of the tenant; `None` when absent or another tenant's.
pub async fn get(
    pool: &PgPool,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<InvocationRecord>, Error> {
    let row = sqlx::query_as::<_, InvocationRow>(concat!(
        "SELECT ",
        columns!(),
        " FROM app_invocations WHERE tenant_id = $1 AND id = $2 LIMIT 1"
    ))
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(InvocationRecord::from))
}
