//! Deliveries of outbound events to the tenant's webhook endpoints (SPEC §6.2 `GET
//! /webhook-deliveries`; docs/outbound-webhooks.md): a page of them, newest first, filtered by
//! status (repeatable), endpoint and event type, with a capped total; and one with its attempts.
//! An attempt shows what the receiver answered: status code, duration, error, and at most the
//! first 256 bytes of its body.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use uuid::Uuid;

use crate::page::COUNT_CAP;
use crate::{Error, ListPage, Page, Tenant};

/// The statuses a delivery can have.
pub const STATUSES: [&str; 4] = ["pending", "succeeded", "failed", "exhausted"];

/// A delivery as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    /// `pending` (not tried yet, or due again by hand), `succeeded`, `failed` (due again by
    /// the schedule) or `exhausted` (given up).
    pub status: String,
    pub attempt_count: i32,
    pub max_attempts: i32,
    /// When it is next tried: none once it succeeded or was given up, and while its endpoint
    /// is disabled (held).
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_status_code: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One delivery with its attempts, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryDetail {
    #[serde(flatten)]
    pub delivery: Delivery,
    pub attempts: Vec<Attempt>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub attempt: i32,
    pub started_at: DateTime<Utc>,
    pub duration_ms: f32,
    pub status_code: Option<i32>,
    pub error: Option<String>,
    /// The start of the receiver's body, at most 256 bytes.
    pub response_prefix: Option<String>,
}

/// What a list is narrowed to; empty fields narrow nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub statuses: Vec<String>,
    pub endpoint_id: Option<Uuid>,
    pub event_type: Option<String>,
}

const COLUMNS: &str = "id, endpoint_id, event_id, event_type, status, \
    attempts AS attempt_count, max_attempts, next_attempt_at, last_status_code, last_error, \
    created_at, updated_at";

const WHERE: &str = "WHERE tenant_id = $1 \
    AND (cardinality($2::text[]) = 0 OR status = ANY($2)) \
    AND ($3::uuid IS NULL OR endpoint_id = $3) AND ($4::text IS NULL OR event_type = $4)";

pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    filter: &Filter,
    page: Page,
) -> Result<ListPage<Delivery>, Error> {
    let items: Vec<Delivery> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM webhook_deliveries {WHERE} \
         ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6"
    )))
    .bind(tenant.id())
    .bind(&filter.statuses)
    .bind(filter.endpoint_id)
    .bind(&filter.event_type)
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(pool)
    .await?;
    let counted: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries {WHERE} LIMIT $5) AS capped"
    )))
    .bind(tenant.id())
    .bind(&filter.statuses)
    .bind(filter.endpoint_id)
    .bind(&filter.event_type)
    .bind(COUNT_CAP + 1)
    .fetch_one(pool)
    .await?;
    Ok(ListPage::capped(items, counted))
}

/// Delivery `id` of `tenant`, with its attempts.
pub async fn get(pool: &PgPool, tenant: Tenant, id: Uuid) -> Result<Option<DeliveryDetail>, Error> {
    let delivery: Option<Delivery> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM webhook_deliveries WHERE tenant_id = $1 AND id = $2"
    )))
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(pool)
    .await?;
    let Some(delivery) = delivery else {
        return Ok(None);
    };
    let attempts = sqlx::query_as(
        "SELECT attempt, started_at, duration_ms, status_code, error, response_prefix \
         FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    Ok(Some(DeliveryDetail { delivery, attempts }))
}
