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

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use sqlx::{Postgres, Transaction};
use topics::callbacks::{Answer, Event, EventStatus, Recorded, SessionStatus};
use topics::{Answered, Applied, Apply, Envelope, Header, Outcome};
use tracing::Span;
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};
use crate::stage::{Context, Decoded, Stage};
use crate::timers::TimerTable;

/// Most events applied in one transaction: a lane's pause mark, so a backlog drains in full
/// batches; a full batch holds its sessions' locks for a few hundred statements (tens of
/// milliseconds on a busy machine), which only the timeout, a cancel or an uninstall of one of
/// those sessions waits for.
const BATCH_LIMIT: usize = 64;

/// How long a batch waits for more events after its first: a batch costs six statements and a
/// commit whatever its size, and the count triggers write a row per tenant, app and status it
/// moved, so under a burst a few milliseconds more per webhook buy batches several times
/// larger (BENCHMARKS.md "Twice the webhooks").
const BATCH_LINGER: Duration = Duration::from_millis(5);

/// Applies [`Event`]s of the `callbacks.events` topic.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallbacksStage;

#[async_trait]
impl Stage for CallbacksStage {
    type Body = Event;
    /// The wait of the session the event settled, if it settled one.
    type Then = Option<Waited>;
    const NAME: &'static str = "callbacks";
    /// Sets timers: a run whose session settled resumes through a timer due now.
    const SETS_TIMERS: &'static [TimerTable] = &[TimerTable::Runs];
    const BATCH_LIMIT: usize = BATCH_LIMIT;
    const BATCH_LINGER: Duration = BATCH_LINGER;
    const INBOX: bool = false;
    const REPLIES: bool = true;

    async fn apply_batch(
        &self,
        cx: &mut Context,
        events: &[&Decoded<Event>],
    ) -> Result<Vec<Answered<Self::Then>>, Error> {
        let headers: Vec<Header> = events.iter().map(|e| e.envelope.header()).collect();
        let events: Vec<(&Header, &Event, &Span)> = events
            .iter()
            .zip(&headers)
            .map(|(e, header)| (header, &e.envelope.body, &e.span))
            .collect();
        let v = <Event as topics::Message>::REPLY_VERSION;
        apply_all(&mut cx.tx, &events)
            .await?
            .into_iter()
            .map(|applied| Ok(applied.encode(v)?))
            .collect()
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

/// One event alone (a batch of one), in the span it is applied in.
#[async_trait]
impl Apply<Event, Context, Option<Waited>> for CallbacksStage {
    async fn apply(
        &self,
        cx: &mut Context,
        event: &Event,
    ) -> Result<Applied<Answer, Option<Waited>>, Error> {
        let span = Span::current();
        let mut applied = apply_all(&mut cx.tx, &[(&cx.command, event, &span)]).await?;
        applied
            .pop()
            .ok_or_else(|| Error::Contract("an event went unanswered".into()))
    }
}

/// The session an event names, as settling reads it.
#[derive(Debug, sqlx::FromRow)]
struct Session {
    id: Uuid,
    tenant_id: Uuid,
    app_name: String,
    #[sqlx(try_from = "String")]
    status: SessionStatus,
    action: String,
    workflow_run_id: Option<Uuid>,
}

/// What recording `event` does to its session, as it stands.
fn recorded(session: SessionStatus, event: &Event) -> Recorded {
    if session != SessionStatus::Pending {
        Recorded::Stale
    } else if event.status.settles() {
        Recorded::Settled
    } else {
        Recorded::Accepted
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

/// Records consecutive events of one partition, in order: their sessions locked, the events
/// already recorded read, then what each comes to decided here and written with one statement
/// per table for the whole batch ([`Writes`]): a batch of sixty events costs the database six
/// statements, not two hundred and forty, and the count triggers run once per table.
async fn apply_all(
    tx: &mut Transaction<'_, Postgres>,
    events: &[(&Header, &Event, &Span)],
) -> Result<Vec<Applied<Answer, Option<Waited>>>, Error> {
    let mut sessions = lock_sessions(tx, events.iter().map(|(_, e, _)| *e)).await?;
    let known = recorded_events(tx, events).await?;
    let mut writes = Writes::default();
    // The event ids of this batch recorded so far: a second delivery in the same batch is a
    // repeat too.
    let mut recorded_now: HashSet<(Uuid, &str, &str)> = HashSet::new();
    let mut answers = Vec::with_capacity(events.len());
    for &(header, event, span) in events {
        let _entered = span.enter();
        span.record("svc.app.name", event.app_name.as_str());
        let tenant = header
            .tenant
            .ok_or_else(|| Error::Invalid("a webhook event without a tenant".into()))?;
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
        let id_key = (tenant, event.app_name.as_str(), event.event_id.as_str());
        let recorded_before = known.iter().find(|k| {
            k.tenant_id == tenant && k.app_name == event.app_name && k.event_id == event.event_id
        });
        if let Some(recording) = recorded_before {
            answers.push(Planned::Now(repeat(header, event, recording)));
            continue;
        }
        if !recorded_now.insert(id_key) {
            tracing::info!(
                event_id = event.event_id,
                "a repeat of a recorded event; nothing to do"
            );
            answers.push(Planned::Now(Answer::Duplicate));
            continue;
        }
        let recorded = recorded(session.status, event);
        writes.event(tenant, header, event, recorded);
        match recorded {
            Recorded::Settled => {
                let settled = writes.settle(tenant, event, session);
                writes.audit(header, event);
                session.status = event.status.settles_to().unwrap_or(session.status);
                answers.push(Planned::Settled(settled));
            }
            Recorded::Accepted => {
                writes.audit(header, event);
                answers.push(Planned::Now(Answer::Accepted));
            }
            Recorded::Stale => {
                tracing::info!(
                    event_id = event.event_id,
                    session = session.status.as_str(),
                    "stale event"
                );
                let status = session.status;
                answers.push(Planned::Now(Answer::Stale { status }));
            }
        }
    }
    let waits = writes.write(tx).await?;
    answers
        .into_iter()
        .zip(events)
        .map(|(planned, (_, _, span))| match planned {
            Planned::Now(answer) => Ok(applied(answer, None)),
            Planned::Settled(i) => {
                let settled = &writes.settled[i];
                // Its row is locked by this transaction: it cannot have gone.
                let seconds = *waits.get(&settled.session_id).ok_or_else(|| {
                    Error::Invalid(format!("session {} did not settle", settled.session_id))
                })?;
                span.in_scope(|| {
                    tracing::info!(
                        status = settled.status.as_str(),
                        waited_seconds = seconds,
                        "callback session settled"
                    )
                });
                let answer = Answer::Settled {
                    status: settled.status,
                };
                let waited = Waited {
                    tenant: settled.tenant,
                    app: settled.app.clone(),
                    action: settled.action.clone(),
                    result: settled.status.as_str(),
                    seconds,
                };
                Ok(applied(answer, Some(waited)))
            }
        })
        .collect()
}

/// An event's answer: known at once, or once its session's settling wrote how long it waited.
enum Planned {
    Now(Answer),
    /// The index of its session in [`Writes::settled`].
    Settled(usize),
}

fn applied(answer: Answer, waited: Option<Waited>) -> Applied<Answer, Option<Waited>> {
    Applied {
        outcome: Outcome::done(answer),
        then: waited,
    }
}

/// The sessions `events` name, locked in id order. Every writer that locks several sessions at
/// once (another batch, a forced uninstall, a cancel) locks them in id order too, so two of them
/// wait for each other rather than deadlock.
async fn lock_sessions<'a>(
    tx: &mut Transaction<'_, Postgres>,
    events: impl IntoIterator<Item = &'a Event>,
) -> Result<HashMap<Uuid, Session>, Error> {
    let mut ids: Vec<Uuid> = events.into_iter().map(|e| e.session_id).collect();
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

/// A vendor event id recorded before: by which message, what it came to, and its session's status now.
#[derive(Debug, sqlx::FromRow)]
struct Known {
    tenant_id: Uuid,
    app_name: String,
    event_id: String,
    message_id: Uuid,
    #[sqlx(try_from = "String")]
    outcome: Recorded,
    #[sqlx(try_from = "String")]
    status: EventStatus,
    #[sqlx(try_from = "String")]
    session_status: SessionStatus,
}

/// The events of the batch whose vendor event ids were recorded before, by tenant, app and event
/// id (one look-up of the unique index for the batch).
async fn recorded_events(
    tx: &mut Transaction<'_, Postgres>,
    events: &[(&Header, &Event, &Span)],
) -> Result<Vec<Known>, Error> {
    let mut tenants = Vec::with_capacity(events.len());
    let mut apps = Vec::with_capacity(events.len());
    let mut event_ids = Vec::with_capacity(events.len());
    for (header, event, _) in events {
        let Some(tenant) = header.tenant else {
            continue; // refused when applied
        };
        tenants.push(tenant);
        apps.push(event.app_name.as_str());
        event_ids.push(event.event_id.as_str());
    }
    Ok(sqlx::query_as(
        "SELECT e.tenant_id, e.app_name, e.event_id, e.id AS message_id, e.outcome, e.status, \
         s.status AS session_status \
         FROM unnest($1::uuid[], $2::text[], $3::text[]) AS k(tenant_id, app_name, event_id) \
         JOIN app_callback_events e ON e.tenant_id = k.tenant_id AND e.app_name = k.app_name \
           AND e.event_id = k.event_id \
         JOIN app_callback_sessions s ON s.id = e.session_id",
    )
    .bind(&tenants)
    .bind(&apps)
    .bind(&event_ids)
    .fetch_all(&mut **tx)
    .await?)
}

/// The answer to an event whose id was recorded before: this very message again (a redelivery)
/// gets the answer it got the first time, from its row; another message of a recorded event id
/// is a duplicate.
fn repeat(header: &Header, event: &Event, known: &Known) -> Answer {
    if known.message_id != header.id {
        tracing::info!(
            event_id = event.event_id,
            "a repeat of a recorded event; nothing to do"
        );
        return Answer::Duplicate;
    }
    Answer::of_recording(known.outcome, known.status, known.session_status)
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

/// A session an event of the batch settles.
#[derive(Debug)]
struct Settled {
    session_id: Uuid,
    tenant: Uuid,
    app: String,
    action: String,
    status: EventStatus,
}

/// What a batch writes, column by column, so that each table gets one statement
/// (`unnest` of the columns' arrays).
#[derive(Debug, Default)]
struct Writes {
    events: EventRows,
    settled: Vec<Settled>,
    settle_outputs: Vec<Option<Value>>,
    settle_errors: Vec<Option<String>>,
    /// Runs to resume: run id, tenant, and the trace of the webhook that settled their session.
    resumes: Vec<(Uuid, Uuid, Option<String>)>,
    audits: Vec<audit::Row>,
}

/// `app_callback_events` rows, column by column.
#[derive(Debug, Default)]
struct EventRows {
    ids: Vec<Uuid>,
    tenants: Vec<Uuid>,
    apps: Vec<String>,
    sessions: Vec<Uuid>,
    event_ids: Vec<String>,
    external_ids: Vec<String>,
    statuses: Vec<&'static str>,
    outcomes: Vec<&'static str>,
    outputs: Vec<Option<Value>>,
    errors: Vec<Option<String>>,
    received: Vec<chrono::DateTime<chrono::Utc>>,
}

impl Writes {
    /// The event's row.
    fn event(&mut self, tenant: Uuid, header: &Header, event: &Event, recorded: Recorded) {
        let rows = &mut self.events;
        rows.ids.push(header.id);
        rows.tenants.push(tenant);
        rows.apps.push(event.app_name.clone());
        rows.sessions.push(event.session_id);
        rows.event_ids.push(event.event_id.clone());
        rows.external_ids.push(event.external_id.clone());
        rows.statuses.push(event.status.as_str());
        rows.outcomes.push(recorded.as_str());
        rows.outputs.push(event.output.clone());
        rows.errors.push(event.error.clone());
        rows.received.push(header.time);
    }

    /// Completes or fails the pending session (its row is locked, so it is still pending),
    /// resumes its run and audits the event; answers the session's index in [`Writes::settled`].
    fn settle(&mut self, tenant: Uuid, event: &Event, session: &Session) -> usize {
        self.settled.push(Settled {
            session_id: event.session_id,
            tenant,
            app: event.app_name.clone(),
            action: session.action.clone(),
            status: event.status,
        });
        self.settle_outputs.push(event.output.clone());
        self.settle_errors.push(event.error.clone());
        if let Some(run_id) = session.workflow_run_id {
            // The run's resume continues the webhook's trace (this event's span is entered).
            let traceparent = service::telemetry::traces::current_traceparent();
            self.resumes.push((run_id, tenant, traceparent));
        }
        self.settled.len() - 1
    }

    /// `app.callback.received` (app, external id, status and event id, never the payload).
    fn audit(&mut self, header: &Header, event: &Event) {
        self.audits.push(audit::Row::of(
            header,
            AuditEvent {
                action: "app.callback.received",
                subject_type: "app_callback",
                subject_id: event.session_id.to_string(),
                payload: json!({
                    "app": event.app_name,
                    "externalId": event.external_id,
                    "status": event.status.as_str(),
                    "eventId": event.event_id,
                }),
            },
        ));
    }

    /// Writes the batch: one statement per table. Answers how long each settled session waited,
    /// in seconds, by session id.
    async fn write(
        &mut self,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<HashMap<Uuid, f64>, Error> {
        self.insert_events(tx).await?;
        let waits = self.settle_sessions(tx).await?;
        self.resume_runs(tx).await?;
        audit::record_all(tx, &self.audits).await?;
        Ok(waits)
    }

    /// Every event is new (the batch's ids were looked up under the sessions' locks); one that
    /// is not after all was recorded meanwhile by another partition's writer (the same vendor
    /// event id for another session): the batch is applied again, one event at a time.
    async fn insert_events(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), Error> {
        let rows = &self.events;
        if rows.ids.is_empty() {
            return Ok(());
        }
        let inserted = sqlx::query(
            "INSERT INTO app_callback_events (id, tenant_id, app_name, session_id, event_id, \
             external_id, status, outcome, output, error, received_at) \
             SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::text[], \
               $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::text[], $11::timestamptz[]) \
             ON CONFLICT DO NOTHING",
        )
        .bind(&rows.ids)
        .bind(&rows.tenants)
        .bind(&rows.apps)
        .bind(&rows.sessions)
        .bind(&rows.event_ids)
        .bind(&rows.external_ids)
        .bind(&rows.statuses)
        .bind(&rows.outcomes)
        .bind(&rows.outputs)
        .bind(&rows.errors)
        .bind(&rows.received)
        .execute(&mut **tx)
        .await?;
        if inserted.rows_affected() != rows.ids.len() as u64 {
            return Err(Error::Raced(format!(
                "{} of {} events were recorded meanwhile",
                rows.ids.len() as u64 - inserted.rows_affected(),
                rows.ids.len()
            )));
        }
        Ok(())
    }

    async fn settle_sessions(
        &mut self,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<HashMap<Uuid, f64>, Error> {
        if self.settled.is_empty() {
            return Ok(HashMap::new());
        }
        let ids: Vec<Uuid> = self.settled.iter().map(|s| s.session_id).collect();
        let statuses: Vec<&str> = self.settled.iter().map(|s| s.status.as_str()).collect();
        let waits: Vec<(Uuid, f64)> = sqlx::query_as(
            "UPDATE app_callback_sessions s SET status = u.status, output = u.output, \
             error = u.error, completed_at = now() \
             FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::text[]) \
               AS u(id, status, output, error) \
             WHERE s.id = u.id \
             RETURNING s.id, extract(epoch FROM s.completed_at - s.created_at)::float8",
        )
        .bind(&ids)
        .bind(&statuses)
        .bind(&self.settle_outputs)
        .bind(&self.settle_errors)
        .fetch_all(&mut **tx)
        .await?;
        Ok(waits.into_iter().collect())
    }

    /// A run whose session settled resumes through a timer due now.
    async fn resume_runs(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), Error> {
        if self.resumes.is_empty() {
            return Ok(());
        }
        let timer_ids: Vec<Uuid> = self.resumes.iter().map(|_| Uuid::now_v7()).collect();
        let runs: Vec<Uuid> = self.resumes.iter().map(|r| r.0).collect();
        let tenants: Vec<Uuid> = self.resumes.iter().map(|r| r.1).collect();
        let traces: Vec<Option<&str>> = self.resumes.iter().map(|r| r.2.as_deref()).collect();
        sqlx::query(
            "INSERT INTO run_timers (id, tenant_id, run_id, due_at, purpose, traceparent) \
             SELECT t.id, t.tenant_id, t.run_id, now(), 'callback', t.traceparent \
             FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[]) \
               AS t(id, tenant_id, run_id, traceparent) \
             WHERE EXISTS (SELECT 1 FROM workflow_runs r WHERE r.id = t.run_id)",
        )
        .bind(&timer_ids)
        .bind(&tenants)
        .bind(&runs)
        .bind(&traces)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use topics::callbacks::{EventStatus, Recorded, SessionStatus};

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
            (
                SessionStatus::Pending,
                EventStatus::Completed,
                Recorded::Settled,
            ),
            (
                SessionStatus::Pending,
                EventStatus::Failed,
                Recorded::Settled,
            ),
            (
                SessionStatus::Pending,
                EventStatus::Pending,
                Recorded::Accepted,
            ),
            (
                SessionStatus::Completed,
                EventStatus::Completed,
                Recorded::Stale,
            ),
            (SessionStatus::Failed, EventStatus::Pending, Recorded::Stale),
            (
                SessionStatus::TimedOut,
                EventStatus::Failed,
                Recorded::Stale,
            ),
        ];
        for (session, status, expected) in cases {
            assert_eq!(recorded(session, &event(status)), expected, "{session}");
        }
    }
}
