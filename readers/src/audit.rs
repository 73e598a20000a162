//! The audit log (SPEC §6.1; README "The audit log"): a page of the tenant's recorded actions,
//! newest first, filtered by action, actor and an inclusive time window, with a total capped
//! like the invocation history's; and the same rows oldest first as a stream, for exports that
//! never hold more than a row at a time.

use chrono::{DateTime, Utc};
use futures::Stream;
use serde::Serialize;
use serde_json::Value;
use sqlx::{PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use crate::{Error, ListPage, Page, Tenant};

/// One recorded action.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    pub id: Uuid,
    pub occurred_at: DateTime<Utc>,
    pub action: String,
    #[sqlx(flatten)]
    pub actor: Actor,
    pub subject_type: String,
    pub subject_id: String,
    pub payload: Value,
    pub request_id: Option<String>,
}

/// Who acted: `human`, `machine`, `applicant` or `system`, with the name their token gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct Actor {
    #[serde(rename = "type")]
    #[sqlx(rename = "actor_type")]
    pub kind: String,
    #[sqlx(rename = "actor_id")]
    pub id: String,
    #[sqlx(rename = "actor_name")]
    pub name: String,
}

/// Which events a list or an export holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Any of these actions; all when empty.
    pub actions: Vec<String>,
    /// The actor's id (a token's `sub`).
    pub actor: Option<String>,
    /// Inclusive bounds on `occurredAt`.
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, occurred_at, action, actor_type, actor_id, actor_name, subject_type, \
    subject_id, payload, request_id";

/// A page, newest first; `total` counts up to [`crate::page::COUNT_CAP`].
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    filter: &Filter,
    page: Page,
) -> Result<ListPage<AuditEvent>, Error> {
    let mut select = QueryBuilder::<Postgres>::new(format!("SELECT {COLUMNS} FROM audit_events"));
    push_conditions(&mut select, tenant, filter);
    select
        .push(" ORDER BY occurred_at DESC, id DESC LIMIT ")
        .push_bind(page.limit);
    select.push(" OFFSET ").push_bind(page.offset);
    let mut count =
        QueryBuilder::<Postgres>::new("SELECT count(*) FROM (SELECT 1 FROM audit_events");
    push_conditions(&mut count, tenant, filter);
    count
        .push(" LIMIT ")
        .push_bind(crate::page::COUNT_CAP + 1)
        .push(") AS capped");
    let (items, counted) = tokio::try_join!(
        select.build_query_as().fetch_all(pool),
        count.build_query_scalar::<i64>().fetch_one(pool),
    )?;
    Ok(ListPage::capped(items, counted))
}

fn push_conditions(query: &mut QueryBuilder<Postgres>, tenant: Tenant, filter: &Filter) {
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
    if let Some(from) = filter.from {
        query.push(" AND occurred_at >= ").push_bind(from);
    }
    if let Some(to) = filter.to {
        query.push(" AND occurred_at <= ").push_bind(to);
    }
}

/// Every matching event, oldest first, read as the consumer of the stream asks for them.
pub fn export<'p>(
    pool: &'p PgPool,
    tenant: Tenant,
    filter: Filter,
) -> impl Stream<Item = Result<AuditEvent, Error>> + Send + 'p {
    use futures::TryStreamExt;
    let actions = (!filter.actions.is_empty()).then_some(filter.actions);
    sqlx::query_as::<_, AuditEvent>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM audit_events WHERE tenant_id = $1 \
         AND ($2::text[] IS NULL OR action = ANY($2)) AND ($3::text IS NULL OR actor_id = $3) \
         AND ($4::timestamptz IS NULL OR occurred_at >= $4) \
         AND ($5::timestamptz IS NULL OR occurred_at <= $5) \
         ORDER BY occurred_at, id"
    )))
    .bind(tenant.id())
    .bind(actions)
    .bind(filter.actor)
    .bind(filter.from)
    .bind(filter.to)
    .fetch(pool)
    .map_err(Error::from)
}
