//! What the vendor webhook routes (SPEC §4.8) read before any module code runs: where the
//! publisher's newest published version says a webhook's external id is ([`external_id_source`]),
//! the session an external id names with its tenant's install and whether another tenant's
//! session has the same id ([`find`]; the version that started it is read apart, and kept:
//! [`crate::apps::stored_version`]), and whether an event id was already recorded
//! ([`recorded_event`]); and after, what recording one event message came to ([`recording`]),
//! when the stage's reply did not reach the route.
//!
//! [`find`] is the one read of this crate that does not start from a tenant: the platform route
//! serves every tenant and learns the tenant from the session. It sees only sessions started by
//! platform versions; the tenant route sees only that tenant's sessions of its own versions.

use serde_json::Value;
use sqlx::{PgExecutor, PgPool, Postgres, QueryBuilder};
use topics::callbacks::{Answer, EventStatus, Recorded, SessionStatus};
use uuid::Uuid;

use super::target::{Target, install_joins, target_columns};
use crate::apps::newest_first;
use crate::{Error, Tenant};

/// Whose versions a webhook route serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publisher {
    /// `POST /webhooks/apps/:app`: the platform's own versions, any tenant's sessions.
    Platform,
    /// `POST /webhooks/apps/:app/tenants/:tenantId`: that tenant's own versions.
    Tenant(Tenant),
}

impl Publisher {
    /// The publishing tenant; `None` for the platform.
    pub fn tenant(self) -> Option<Uuid> {
        match self {
            Publisher::Platform => None,
            Publisher::Tenant(tenant) => Some(tenant.id()),
        }
    }
}

/// `handles.webhookExternalId` of the publisher's newest published version of `app` (by
/// semantic version), or `None` when no published version declares one.
pub async fn external_id_source(
    pool: &PgPool,
    publisher: Publisher,
    app: &str,
) -> Result<Option<Value>, Error> {
    let published: Vec<(String, Option<Value>)> = sqlx::query_as(
        "SELECT version, manifest -> 'handles' -> 'webhookExternalId' FROM app_versions \
         WHERE tenant_id IS NOT DISTINCT FROM $1 AND name = $2 AND status = 'published'",
    )
    .bind(publisher.tenant())
    .bind(app)
    .fetch_all(pool)
    .await?;
    Ok(published
        .into_iter()
        .min_by(|(a, _), (b, _)| newest_first(a, b))
        .and_then(|(_, source)| source))
}

/// The session an external id names, and whether it names sessions of several tenants.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Named {
    #[sqlx(flatten)]
    pub target: Target,
    /// Whether a platform version's session of another tenant has the same external id: the
    /// platform route cannot tell such sessions apart (always false for a tenant's own version).
    pub shared_with_another_tenant: bool,
}

/// The session of `app` the vendor's `external_id` names for `publisher`: a pending one first,
/// else the newest (so a vendor that reuses ids across tenants or time reaches the session
/// still waiting). The sessions with the id are read once: for the one chosen, and for the
/// tenants they belong to.
pub async fn find(
    pool: &PgPool,
    publisher: Publisher,
    app: &str,
    external_id: &str,
) -> Result<Option<Named>, Error> {
    let mut query = QueryBuilder::<Postgres>::new(
        "WITH named AS (SELECT s.id, s.tenant_id, s.app_name, s.action, s.external_id, \
           s.status, s.version_id, s.created_at \
         FROM app_callback_sessions s JOIN app_versions v ON v.id = s.version_id \
         WHERE s.app_name = ",
    );
    query.push_bind(app);
    query.push(" AND s.external_id = ");
    query.push_bind(external_id);
    match publisher.tenant() {
        None => {
            query.push(" AND v.tenant_id IS NULL");
        }
        Some(tenant) => {
            query.push(" AND s.tenant_id = ");
            query.push_bind(tenant);
            query.push(" AND v.tenant_id = ");
            query.push_bind(tenant);
        }
    }
    query.push(concat!(
        ") SELECT ",
        target_columns!(),
        ", (SELECT count(DISTINCT tenant_id) > 1 FROM named) AS shared_with_another_tenant \
         FROM (SELECT * FROM named ORDER BY status = 'pending' DESC, created_at DESC LIMIT 1) s",
        install_joins!(),
    ));
    Ok(query.build_query_as().fetch_optional(pool).await?)
}

/// The session and outcome of the event `event_id` of the tenant's `app`, when recorded.
pub async fn recorded_event(
    pool: &PgPool,
    tenant: Tenant,
    app: &str,
    event_id: &str,
) -> Result<Option<(Uuid, String)>, Error> {
    Ok(sqlx::query_as(
        "SELECT session_id, outcome FROM app_callback_events \
         WHERE tenant_id = $1 AND app_name = $2 AND event_id = $3",
    )
    .bind(tenant.id())
    .bind(app)
    .bind(event_id)
    .fetch_optional(pool)
    .await?)
}

/// What recording one event message came to, and its session's status now.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Recording {
    #[sqlx(try_from = "String")]
    pub outcome: Recorded,
    /// The event's status.
    #[sqlx(try_from = "String")]
    pub status: EventStatus,
    #[sqlx(try_from = "String")]
    pub session_status: SessionStatus,
}

impl Recording {
    /// The answer the event got.
    pub fn answer(&self) -> Answer {
        Answer::of_recording(self.outcome, self.status, self.session_status)
    }
}

/// The recording of the event message `message_id` (its envelope's id), once the callbacks
/// stage committed it.
pub async fn recording(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    message_id: Uuid,
) -> Result<Option<Recording>, Error> {
    Ok(sqlx::query_as(
        "SELECT e.outcome, e.status, s.status AS session_status FROM app_callback_events e \
         JOIN app_callback_sessions s ON s.id = e.session_id \
         WHERE e.id = $1 AND e.tenant_id = $2",
    )
    .bind(message_id)
    .bind(tenant.id())
    .fetch_optional(executor)
    .await?)
}
