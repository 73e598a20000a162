//! The callbacks stage: vendor webhook events (SPEC §3.2, §4.8) on `callbacks.events`, keyed by
//! the session they name, so each session has one writer here. The events a partition has
//! queued apply together, in order, in one transaction (a group commit: one commit for up to
//! [`BATCH_LIMIT`] events), with their sessions' rows locked first, in id order:
//!
//! - an event is recorded once: its message id is the row's key (a redelivery records nothing)
//!   and its vendor event id is unique per tenant and app (a repeat records nothing);
//! - on a pending session, a `completed` or `failed` event settles it (first wins: the
//!   timeout, a cancel and a forced uninstall move the session only while it is pending too,
//!   under the same row lock) and resumes its run through a timer due now; a `pending` event
//!   leaves it pending; both are audited as `app.callback.received` (app, external id, status
//!   and event id, never the payload);
//! - on a settled session (settled before, or by an earlier event of the same batch) it is
//!   recorded as `stale` and changes nothing.
//!
//! Each event is answered ([`Answer`]: settled, accepted, stale with the session's status, or a
//! duplicate of a recorded event id), and the webhook route answers the vendor from it: the
//! one writer of a session is the only one that knows which event settled it. The stage keeps
//! no inbox row ([`Stage::INBOX`]) but publishes the replies ([`Stage::REPLIES`]): the event's
//! own row is the record of it having been applied, and a redelivered message is answered from
//! it. A batch that fails is applied again one event at a time by the consumer, so an event
//! that can never apply is dead-lettered alone. `svc.app.callback.wait` is observed after the
//! commit ([`Stage::after_commit`]).

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::callbacks::{Answer, Event};
use topics::{Envelope, Outcome};
use tracing::Instrument;
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};
use crate::stage::{Applied, Decoded, Stage};

/// Most events applied in one transaction: a lane's pause mark, so a backlog drains in full
/// batches; a full batch holds its sessions' locks for a few hundred statements (tens of
/// milliseconds on a busy machine), which only the timeout, a cancel or an uninstall of one of
/// those sessions waits for.
const BATCH_LIMIT: usize = 64;

/// Applies [`Event`]s of the `callbacks.events` topic.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallbacksStage;

#[async_trait]
impl Stage for CallbacksStage {
    type Body = Event;
    /// The wait of the session the event settled, if it settled one.
    type Then = Option<Waited>;
    const NAME: &'static str = "callbacks";
    const BATCH_LIMIT: usize = BATCH_LIMIT;
    const INBOX: bool = false;
    const REPLIES: bool = true;

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &Envelope<Event>,
    ) -> Result<Applied<Answer, Self::Then>, Error> {
        tracing::Span::current().record("svc.app.name", event.body.app_name.as_str());
        let mut sessions = lock_sessions(tx, [event]).await?;
        Ok(applied(apply(tx, &mut sessions, event).await?))
    }

    /// The batch's sessions are locked first, in id order, then each event applied in turn.
    async fn apply_batch(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        events: &[&Decoded<Event>],
    ) -> Result<Vec<Applied<Answer, Self::Then>>, Error> {
        let mut sessions = lock_sessions(tx, events.iter().map(|e| &e.envelope)).await?;
        let mut done = Vec::with_capacity(events.len());
        for event in events {
            event
                .span
                .record("svc.app.name", event.envelope.body.app_name.as_str());
            let answered = apply(tx, &mut sessions, &event.envelope)
                .instrument(event.span.clone())
                .await?;
            done.push(applied(answered));
        }
        Ok(done)
    }

    async fn after_commit(
        &self,
        _event: &Envelope<Event>,
        then: Option<Self::Then>,
    ) -> Result<(), Error> {
        if let Some(Some(waited)) = then {
            observe_wait(
                waited.tenant,
                &waited.app,
                &waited.action,
                waited.result,
                waited.seconds,
            );
        }
        Ok(())
    }
}

/// An event applied: its answer, and the wait of the session it settled.
fn applied((answer, waited): (Answer, Option<Waited>)) -> Applied<Answer, Option<Waited>> {
    Applied {
        outcome: Outcome::done(answer),
        then: waited,
    }
}

/// The session an event names, as settling reads it.
#[derive(Debug, sqlx::FromRow)]
struct Session {
    id: Uuid,
    tenant_id: Uuid,
    app_name: String,
    status: String,
    action: String,
    workflow_run_id: Option<Uuid>,
}

/// What recording an event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorded {
    Settled,
    Accepted,
    Stale,
}

impl Recorded {
    fn of(session_status: &str, event: &Event) -> Self {
        if session_status != "pending" {
            Recorded::Stale
        } else if event.status.settles() {
            Recorded::Settled
        } else {
            Recorded::Accepted
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Recorded::Settled => "settled",
            Recorded::Accepted => "accepted",
            Recorded::Stale => "stale",
        }
    }
}

/// A session settled by an event, for `svc.app.callback.wait` once the transaction committed.
#[derive(Debug)]
pub struct Waited {
    tenant: Uuid,
    app: String,
    action: String,
    result: &'static str,
    seconds: f64,
}

/// The sessions `events` name, locked in id order. Every writer that locks several sessions at
/// once (another batch, a forced uninstall, a cancel) locks them in id order too, so two of them
/// wait for each other rather than deadlock.
async fn lock_sessions<'a>(
    tx: &mut Transaction<'_, Postgres>,
    events: impl IntoIterator<Item = &'a Envelope<Event>>,
) -> Result<HashMap<Uuid, Session>, Error> {
    let mut ids: Vec<Uuid> = events.into_iter().map(|e| e.body.session_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let sessions: Vec<Session> = sqlx::query_as(
        "SELECT id, tenant_id, app_name, status, action, workflow_run_id \
         FROM app_callback_sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE",
    )
    .bind(&ids)
    .fetch_all(&mut **tx)
    .await?;
    Ok(sessions.into_iter().map(|s| (s.id, s)).collect())
}

/// Records one event against its locked session; answers what that came to, and the wait of
/// the session it settled.
async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    sessions: &mut HashMap<Uuid, Session>,
    envelope: &Envelope<Event>,
) -> Result<(Answer, Option<Waited>), Error> {
    let tenant = envelope
        .tenant
        .ok_or_else(|| Error::Invalid("a webhook event without a tenant".into()))?;
    let event = &envelope.body;
    // The route found the session before producing, and sessions are never deleted.
    let session = sessions
        .get_mut(&event.session_id)
        .filter(|s| s.tenant_id == tenant && s.app_name == event.app_name)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "no session {} of {}",
                event.session_id, event.app_name
            ))
        })?;
    let recorded = Recorded::of(&session.status, event);
    if !record(tx, tenant, envelope, recorded).await? {
        tracing::info!(
            event_id = event.event_id,
            "a repeat of a recorded event; nothing to do"
        );
        return Ok((repeat(tx, tenant, envelope).await?, None));
    }
    let (answer, waited) = match recorded {
        Recorded::Settled => {
            let seconds = settle(tx, tenant, event, session).await?;
            session.status = event.status.as_str().to_owned();
            let waited = Waited {
                tenant,
                app: event.app_name.clone(),
                action: session.action.clone(),
                result: event.status.as_str(),
                seconds,
            };
            let settled = Answer::Settled {
                status: event.status,
            };
            (settled, Some(waited))
        }
        Recorded::Accepted => (Answer::Accepted, None),
        Recorded::Stale => {
            tracing::info!(
                event_id = event.event_id,
                session = session.status,
                "stale event"
            );
            let status = session.status.clone();
            return Ok((Answer::Stale { status }, None));
        }
    };
    let audited = AuditEvent {
        action: "app.callback.received",
        subject_type: "app_callback",
        subject_id: event.session_id.to_string(),
        payload: json!({
            "app": event.app_name,
            "externalId": event.external_id,
            "status": event.status.as_str(),
            "eventId": event.event_id,
        }),
    };
    audit::record(tx, envelope, audited).await?;
    Ok((answer, waited))
}

/// The answer to an event that recorded nothing: this very message again (a redelivery) gets
/// the answer it got the first time, from its row; another message with a recorded event id
/// is a duplicate.
async fn repeat(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    envelope: &Envelope<Event>,
) -> Result<Answer, Error> {
    let recording = readers::callbacks::webhook::recording(
        &mut **tx,
        readers::Tenant::new(tenant),
        envelope.id,
    )
    .await?;
    let Some(recording) = recording else {
        return Ok(Answer::Duplicate);
    };
    Answer::of_recording(&recording).ok_or_else(|| {
        Error::Invalid(format!(
            "event {} is recorded as {} {}",
            envelope.id, recording.outcome, recording.status
        ))
    })
}

/// `svc.app.callback.wait` of a session that settled: `result` is how (`completed`, `failed`,
/// `timed_out`).
pub(crate) fn observe_wait(
    tenant: Uuid,
    app: &str,
    action: &str,
    result: &'static str,
    seconds: f64,
) {
    metrics::histogram!(
        "svc.app.callback.wait",
        "tenant" => tenant.to_string(),
        "app" => app.to_owned(),
        "action" => action.to_owned(),
        "result" => result,
    )
    .record(seconds);
}

/// Inserts the event's row; false when it is a repeat (the same message, or the same vendor
/// event id for the tenant and app).
async fn record(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    envelope: &Envelope<Event>,
    recorded: Recorded,
) -> Result<bool, Error> {
    let event = &envelope.body;
    let inserted = sqlx::query(
        "INSERT INTO app_callback_events (id, tenant_id, app_name, session_id, event_id, \
         external_id, status, outcome, output, error, received_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING",
    )
    .bind(envelope.id)
    .bind(tenant)
    .bind(&event.app_name)
    .bind(event.session_id)
    .bind(&event.event_id)
    .bind(&event.external_id)
    .bind(event.status.as_str())
    .bind(recorded.as_str())
    .bind(&event.output)
    .bind(&event.error)
    .bind(envelope.time)
    .execute(&mut **tx)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Completes or fails the pending session (its row is locked, so it is still pending) and
/// resumes its run; answers how long the session waited, in seconds.
async fn settle(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    event: &Event,
    session: &Session,
) -> Result<f64, Error> {
    let waited: f64 = sqlx::query_scalar(
        "UPDATE app_callback_sessions SET status = $2, output = $3, error = $4, \
         completed_at = now() WHERE id = $1 \
         RETURNING extract(epoch FROM completed_at - created_at)::float8",
    )
    .bind(event.session_id)
    .bind(event.status.as_str())
    .bind(&event.output)
    .bind(&event.error)
    .fetch_one(&mut **tx)
    .await?;
    if let Some(run_id) = session.workflow_run_id {
        // The run's resume continues the webhook's trace.
        let traceparent = service::telemetry::traces::current_traceparent();
        sqlx::query(
            "INSERT INTO run_timers (id, tenant_id, run_id, due_at, purpose, traceparent) \
             SELECT $1, $2, $3, now(), 'callback', $4 \
             WHERE EXISTS (SELECT 1 FROM workflow_runs WHERE id = $3)",
        )
        .bind(Uuid::now_v7())
        .bind(tenant)
        .bind(run_id)
        .bind(traceparent)
        .execute(&mut **tx)
        .await?;
    }
    tracing::info!(
        status = event.status.as_str(),
        waited_seconds = waited,
        "callback session settled"
    );
    Ok(waited)
}

#[cfg(test)]
mod tests {
    use topics::callbacks::EventStatus;

    use super::*;

    fn event(status: EventStatus) -> Event {
        Event {
            session_id: Uuid::now_v7(),
            app_name: "kyc".into(),
            external_id: "s-1".into(),
            event_id: "e-1".into(),
            status,
            output: None,
            error: None,
        }
    }

    #[test]
    fn only_a_pending_session_is_settled_and_only_by_a_final_status() {
        let cases = [
            ("pending", EventStatus::Completed, Recorded::Settled),
            ("pending", EventStatus::Failed, Recorded::Settled),
            ("pending", EventStatus::Pending, Recorded::Accepted),
            ("completed", EventStatus::Completed, Recorded::Stale),
            ("failed", EventStatus::Pending, Recorded::Stale),
            ("timed_out", EventStatus::Failed, Recorded::Stale),
        ];
        for (session, status, expected) in cases {
            assert_eq!(Recorded::of(session, &event(status)), expected, "{session}");
        }
    }
}
