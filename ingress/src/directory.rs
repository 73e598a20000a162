//! The tenant's user directory, as the API sees it (docs/definitions-and-runs.md "The user
//! directory"): each human and machine token verified for the first time in this process is a
//! sighting of its subject (name, kind, roles, the permissions it holds), recorded in
//! `tenant_users` off the request's hot path: the verifier hands the sighting to a bounded queue
//! and moves on; one task writes the queue in batches. A sighting is bookkeeping, not a command: if
//! the queue is full or a write fails it is dropped (and counted), and the subject's next token
//! records it again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use service::shutdown::CancellationToken;
use sqlx::PgPool;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::auth::claims::Kind;
use crate::auth::permission::Role;
use crate::auth::{Permission, Principal};

/// Sightings waiting to be written; beyond it new ones are dropped.
const QUEUE: usize = 10_000;
/// The most sightings one statement writes.
const BATCH: usize = 500;
/// How long a write waits after a failure before the next batch.
const PAUSE_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// One subject seen in a verified token.
#[derive(Debug, Clone, Serialize)]
struct Sighting {
    tenant_id: Uuid,
    subject: Arc<str>,
    name: Arc<str>,
    kind: &'static str,
    roles: Vec<&'static str>,
    perms: Vec<&'static str>,
    seen: DateTime<Utc>,
}

/// Where the verifier drops its sightings.
#[derive(Debug, Clone)]
pub(crate) struct Sightings(mpsc::Sender<Sighting>);

/// What the writer task reads.
#[derive(Debug)]
pub(crate) struct Recorded(mpsc::Receiver<Sighting>);

/// A queue of sightings and its reading end.
pub(crate) fn queue() -> (Sightings, Recorded) {
    let (sender, receiver) = mpsc::channel(QUEUE);
    (Sightings(sender), Recorded(receiver))
}

impl Sightings {
    /// Notes that `principal`, whose token named `roles`, was seen now. Applicants are not the
    /// tenant's people and are not recorded.
    pub(crate) fn saw(&self, principal: &Principal, roles: &[Role]) {
        let kind = match principal.kind {
            Kind::Human => "human",
            Kind::Machine => "machine",
            Kind::Applicant => return,
        };
        let sighting = Sighting {
            tenant_id: principal.tenant,
            subject: principal.sub.clone(),
            name: principal.name.clone(),
            kind,
            roles: roles.iter().map(|role| role.as_str()).collect(),
            perms: Permission::ALL
                .iter()
                .copied()
                .filter(|p| principal.has(*p))
                .map(Permission::as_str)
                .collect(),
            seen: Utc::now(),
        };
        if self.0.try_send(sighting).is_err() {
            metrics::counter!("svc.directory.sightings.dropped").increment(1);
        }
    }
}

/// Writes sightings until `stop`.
pub(crate) async fn record(
    pool: PgPool,
    Recorded(mut receiver): Recorded,
    stop: CancellationToken,
) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        let received = tokio::select! {
            () = stop.cancelled() => return,
            received = receiver.recv_many(&mut batch, BATCH) => received,
        };
        if received == 0 {
            return;
        }
        if let Err(error) = write(&pool, &batch).await {
            tracing::warn!(%error, sightings = batch.len(), "the user directory was not updated");
            metrics::counter!("svc.directory.sightings.dropped").increment(batch.len() as u64);
            tokio::time::sleep(PAUSE_AFTER_FAILURE).await;
        }
    }
}

/// One statement for the batch, the newest sighting of each subject winning.
async fn write(pool: &PgPool, batch: &[Sighting]) -> Result<(), sqlx::Error> {
    let mut newest: HashMap<(Uuid, &str), &Sighting> = HashMap::with_capacity(batch.len());
    for sighting in batch {
        newest.insert((sighting.tenant_id, &sighting.subject), sighting);
    }
    let rows: Vec<&Sighting> = newest.into_values().collect();
    sqlx::query(
        "INSERT INTO tenant_users (tenant_id, subject, name, kind, roles, perms, first_seen, last_seen) \
         SELECT tenant_id, subject, name, kind, roles, perms, seen, seen \
         FROM jsonb_to_recordset($1) AS s(tenant_id uuid, subject text, name text, kind text, \
                                          roles text[], perms text[], seen timestamptz) \
         ON CONFLICT (tenant_id, subject) DO UPDATE SET name = excluded.name, \
             kind = excluded.kind, roles = excluded.roles, perms = excluded.perms, \
             last_seen = excluded.last_seen \
         WHERE tenant_users.last_seen <= excluded.last_seen",
    )
    .bind(sqlx::types::Json(&rows))
    .execute(pool)
    .await?;
    Ok(())
}
