//! Claiming due deliveries: a batch of deliveries whose time has come, to enabled endpoints,
//! that no other dispatcher holds, leased to this one in one statement (`crate::lease`), with what
//! sending each needs (the endpoint's URL and sealed secrets, the event). The claim changes no
//! indexed column (a heap-only update); rows in flight stay at the head of the due index, at
//! most a few hundred a dispatcher, and a claim steps over them. Rows another
//! dispatcher is claiming are skipped, not waited for. A dispatcher that dies holding a lease
//! leaves the delivery due again once the lease ends: it is sent again, with the same
//! `webhook-id`, so the receiver can tell.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;
use topics::sealed::Sealed;
use uuid::Uuid;

use crate::Error;
use crate::lease::DELIVERIES;

/// A delivery to send now.
#[derive(Debug)]
pub(super) struct Due {
    pub(super) id: Uuid,
    /// The claim that leased it: the answer is recorded only under it.
    pub(super) lease_id: Uuid,
    pub(super) tenant_id: Uuid,
    pub(super) endpoint_id: Uuid,
    /// This attempt, from 1.
    pub(super) attempt: i32,
    pub(super) allowed: i32,
    pub(super) url: String,
    /// The current secret, then the previous one while it still signs.
    pub(super) secrets: Vec<Sealed>,
    pub(super) event: Event,
}

#[derive(Debug)]
pub(super) struct Event {
    pub(super) id: Uuid,
    pub(super) kind: String,
    pub(super) data: Value,
    pub(super) occurred_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    lease_id: Uuid,
    tenant_id: Uuid,
    endpoint_id: Uuid,
    attempts: i32,
    max_attempts: i32,
    url: String,
    secret_key_id: String,
    secret_nonce: Vec<u8>,
    secret_ciphertext: Vec<u8>,
    previous_key_id: Option<String>,
    previous_nonce: Option<Vec<u8>>,
    previous_ciphertext: Option<Vec<u8>>,
    event_id: Uuid,
    event_type: String,
    data: Value,
    occurred_at: DateTime<Utc>,
}

/// Up to `limit` due deliveries, leased to `owner` for `lease`, the longest due first.
pub(super) async fn due(
    pool: &PgPool,
    limit: i64,
    (owner, lease): (&str, Duration),
) -> Result<Vec<Due>, Error> {
    let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "WITH due AS ( \
           SELECT d.id FROM webhook_deliveries d \
           JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.enabled \
           WHERE d.next_attempt_at <= now() AND {} \
           ORDER BY d.next_attempt_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED) \
         UPDATE webhook_deliveries d SET {}, lease_owner = $3 \
         FROM due, webhook_endpoints e, webhook_events ev \
         WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id \
         RETURNING d.id, d.lease_id, d.tenant_id, d.endpoint_id, d.attempts, d.max_attempts, \
           e.url, \
           e.secret_key_id, e.secret_nonce, e.secret_ciphertext, \
           CASE WHEN e.previous_expires_at > now() THEN e.previous_key_id END \
             AS previous_key_id, \
           CASE WHEN e.previous_expires_at > now() THEN e.previous_nonce END AS previous_nonce, \
           CASE WHEN e.previous_expires_at > now() THEN e.previous_ciphertext END \
             AS previous_ciphertext, \
           ev.id AS event_id, ev.type AS event_type, ev.data, ev.occurred_at",
        DELIVERIES.free("d"),
        DELIVERIES.take(4, 2)
    )))
    .bind(limit)
    .bind(lease.as_secs_f64())
    .bind(owner)
    .bind(Uuid::now_v7())
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(Due::from).collect())
}

impl From<Row> for Due {
    fn from(row: Row) -> Self {
        let mut secrets = vec![Sealed {
            key_id: row.secret_key_id,
            nonce: row.secret_nonce,
            ciphertext: row.secret_ciphertext,
        }];
        if let (Some(key_id), Some(nonce), Some(ciphertext)) = (
            row.previous_key_id,
            row.previous_nonce,
            row.previous_ciphertext,
        ) {
            secrets.push(Sealed {
                key_id,
                nonce,
                ciphertext,
            });
        }
        Self {
            id: row.id,
            lease_id: row.lease_id,
            tenant_id: row.tenant_id,
            endpoint_id: row.endpoint_id,
            attempt: row.attempts + 1,
            allowed: row.max_attempts,
            url: row.url,
            secrets,
            event: Event {
                id: row.event_id,
                kind: row.event_type,
                data: row.data,
                occurred_at: row.occurred_at,
            },
        }
    }
}
