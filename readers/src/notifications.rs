//! The tenant's notifications for the home view (SPEC §6.2; docs/outbound-webhooks.md
//! "Notifications"), newest first, each with whether the reader has read it, and how many the
//! reader has not read. A reader sees those addressed to everyone and, holding the admins'
//! audience, those addressed to admins.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::page::COUNT_CAP;
use crate::{Error, Page, Tenant};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    pub id: Uuid,
    /// `app_degraded`, `webhook_delivery_exhausted`.
    #[sqlx(rename = "type")]
    #[serde(rename = "type")]
    pub kind: String,
    /// `everyone` or `admins`.
    pub audience: String,
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub read: bool,
}

/// A page of notifications with the reader's unread count (each counted to 100,000 at most).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationPage {
    pub items: Vec<Notification>,
    pub total: i64,
    /// Whether `total` stopped counting at 100,000.
    pub total_is_estimate: bool,
    pub unread: i64,
}

/// Whose notifications are read.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    pub tenant: Tenant,
    /// The token's subject: read marks are per reader.
    pub sub: &'a str,
    /// Whether notifications addressed to admins are theirs too.
    pub admin: bool,
}

const VISIBLE: &str = "n.tenant_id = $1 AND (n.audience = 'everyone' OR $3)";
const READ: &str = "EXISTS (SELECT 1 FROM notification_reads r \
    WHERE r.notification_id = n.id AND r.reader = $2)";

pub async fn list(
    pool: &PgPool,
    reader: Reader<'_>,
    unread_only: bool,
    page: Page,
) -> Result<NotificationPage, Error> {
    let items: Vec<Notification> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT n.id, n.type, n.audience, n.data, n.created_at, {READ} AS read \
         FROM notifications n WHERE {VISIBLE} AND (NOT $4 OR NOT {READ}) \
         ORDER BY n.created_at DESC, n.id DESC LIMIT $5 OFFSET $6"
    )))
    .bind(reader.tenant.id())
    .bind(reader.sub)
    .bind(reader.admin)
    .bind(unread_only)
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(pool)
    .await?;
    let (total, unread): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM notifications n WHERE {VISIBLE} \
                 LIMIT $4) AS capped), \
                (SELECT count(*) FROM (SELECT 1 FROM notifications n WHERE {VISIBLE} \
                 AND NOT {READ} LIMIT $4) AS capped)"
    )))
    .bind(reader.tenant.id())
    .bind(reader.sub)
    .bind(reader.admin)
    .bind(COUNT_CAP + 1)
    .fetch_one(pool)
    .await?;
    let total = if unread_only { unread } else { total };
    Ok(NotificationPage {
        items,
        total: total.min(COUNT_CAP),
        total_is_estimate: total > COUNT_CAP,
        unread: unread.min(COUNT_CAP),
    })
}
