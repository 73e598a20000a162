//! Commands out, outcomes in (ARCHITECTURE "Write path" rule 4): a route produces its command
//! to the topic (acknowledged by every in-sync replica), waits a bounded time for the stage's
//! reply, and answers from it, so the HTTP answer is what was applied. The reply comes over
//! Redis (`replies`); while it has not, the inbox is read every [`INBOX_POLL`], so a reply lost
//! to a Redis hiccup is recovered from the outcome the stage stored, never by applying the
//! command again. A command still unapplied after the wait answers 504 `command_timeout` with
//! its id: it stays on the log and will apply.

use std::future::Future;
use std::time::Duration;

use serde::de::DeserializeOwned;
use sqlx::types::Json;
use topics::{
    Command, Encoded, Envelope, Heard, Message, Outcome, Principal, PrincipalKind, Reply,
};
use tracing::Instrument;
use uuid::Uuid;

use crate::auth::Principal as Caller;
use crate::auth::claims::Kind;
use crate::error::Error;
use crate::replies::Waiter;
use crate::state::Commands;

/// How often a waiting route reads the inbox.
const INBOX_POLL: Duration = Duration::from_secs(1);
/// How long one read of the inbox may take before the wait goes on without it.
const INBOX_READ: Duration = Duration::from_millis(500);

/// What a route knows of the request that carries a command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) caller: &'a Caller,
    pub(crate) request_id: &'a str,
}

/// Produces `command` for the caller's tenant and answers what the stage made of it: the
/// command's reply, or the refusal as an error.
pub(crate) async fn submit<C: Command>(
    commands: &Commands,
    origin: Origin<'_>,
    command: C,
) -> Result<C::Reply, Error> {
    let topic = <C::Body as Message>::TOPIC;
    // The command's client span (SPEC "Traces": the engine calls' client spans carry the
    // tenant): its trip over the log and the wait for its outcome. The stage's span continues
    // it, so the trace reads request → command → stage → runner.
    let span = tracing::info_span!(
        "command.send",
        otel.name = %format_args!("{} send", topic.name),
        otel.kind = "producer",
        svc.tenant_id = %origin.caller.tenant,
    );
    let envelope = Envelope::new(
        Some(origin.caller.tenant),
        principal_of(origin.caller),
        origin.request_id,
        service::telemetry::traces::traceparent_of(&span),
        command.into(),
    );
    match send_and_wait::<C>(commands, &envelope)
        .instrument(span)
        .await?
    {
        Outcome::Done { value } => Ok(value),
        Outcome::Refused(refusal) => Err(Error::Refused(refusal)),
    }
}

/// Produces `envelope`, which holds a `C`, and waits for its outcome.
pub(crate) async fn send_and_wait<C: Command>(
    commands: &Commands,
    envelope: &Envelope<C::Body>,
) -> Result<Outcome<C::Reply>, Error> {
    let waiter = commands.replies.wait_for(envelope.id);
    commands
        .producer
        .send(envelope)
        .await
        .map_err(|e| Error::Unavailable(format!("the command log: {e}")))?;
    let format = <C::Body as Message>::REPLY_VERSION;
    outcome_of(commands, waiter, envelope.id, format, || {
        stored_reply(commands, envelope.id)
    })
    .await
}

/// Waits for the outcome of `command_id`, produced after `waiter` began to wait: the reply
/// over Redis, or else what `stored` reads of it (every [`INBOX_POLL`], and once more at the
/// end of the wait; a read that fails counts as none yet), read as reply `R` in reply format
/// `format`. Still none after `COMMAND_WAIT_SECONDS`: 504 `command_timeout`.
pub(crate) async fn outcome_of<R, Stored, Reading>(
    commands: &Commands,
    mut waiter: Waiter,
    command_id: Uuid,
    format: u16,
    stored: Stored,
) -> Result<Outcome<R>, Error>
where
    R: DeserializeOwned,
    Stored: Fn() -> Reading,
    Reading: Future<Output = Result<Option<Reply>, Error>>,
{
    let deadline = tokio::time::Instant::now() + commands.wait;
    let mut poll = tokio::time::interval_at(tokio::time::Instant::now() + INBOX_POLL, INBOX_POLL);
    // A slow read must not bring the next ones forward in a burst.
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The command is on the log: it will apply. A read of the inbox the database cannot answer
    // (it is away: a connection waits out the pool's timeout) is a reply not known yet, bounded
    // by [`INBOX_READ`], never a 503 nor a wait past the deadline: a client told 503 retries,
    // and a second `POST /cases` opens a second case. What the wait cannot learn ends in 504,
    // which says so. Any other error (a stored outcome this build cannot read) is answered.
    let read = || async {
        match tokio::time::timeout(INBOX_READ, stored()).await {
            Ok(Err(Error::Unavailable(error))) => {
                tracing::debug!(%command_id, %error, "the inbox not read; waiting on");
                Ok(None)
            }
            Ok(read) => read,
            Err(_) => {
                tracing::debug!(%command_id, "the inbox not read in time; waiting on");
                Ok(None)
            }
        }
    };
    let reply = loop {
        tokio::select! {
            reply = &mut waiter.reply => match reply {
                Ok(payload) => {
                    return match Heard::read(&payload, format) {
                        Ok(Heard::Applied(outcome)) => Ok(outcome),
                        Ok(Heard::DeadLettered(reason)) => Err(dead_lettered(command_id, &reason)),
                        Err(error) => Err(unreadable(command_id, error)),
                    };
                }
                // The sender went away without a reply: only the stored outcome can tell now
                // (and the receiver, done, must not be polled again).
                Err(_) => match read().await? {
                    Some(reply) => break reply,
                    None => {
                        tokio::time::sleep_until(deadline).await;
                        match read().await? {
                            Some(reply) => break reply,
                            None => return Err(Error::CommandTimeout { command_id }),
                        }
                    }
                },
            },
            _ = poll.tick() => {
                if let Some(reply) = read().await? {
                    break reply;
                }
            }
            () = tokio::time::sleep_until(deadline) => {
                match read().await? {
                    Some(reply) => break reply,
                    None => return Err(Error::CommandTimeout { command_id }),
                }
            }
        }
    };
    match reply {
        Reply::Applied { outcome } => outcome
            .decode(format)
            .map_err(|e| unreadable(command_id, e)),
        Reply::DeadLettered { reason } => Err(dead_lettered(command_id, &reason)),
    }
}

fn dead_lettered(command_id: Uuid, reason: &str) -> Error {
    Error::Internal(format!("command {command_id} was dead-lettered: {reason}"))
}

/// The reply the inbox holds for `command_id`, once the stage committed one.
async fn stored_reply(commands: &Commands, command_id: Uuid) -> Result<Option<Reply>, Error> {
    let row: Option<(Option<Json<Encoded>>, Option<String>)> =
        sqlx::query_as("SELECT outcome, dead_letter_reason FROM inbox WHERE command_id = $1")
            .bind(command_id)
            .fetch_optional(&commands.pool)
            .await
            .map_err(|e| Error::Unavailable(format!("the inbox: {e}")))?;
    Ok(match row {
        Some((Some(Json(outcome)), _)) => Some(Reply::Applied { outcome }),
        Some((None, Some(reason))) => Some(Reply::DeadLettered { reason }),
        _ => None,
    })
}

/// A reply (or stored outcome) that does not read as the command's reply: a contract broken
/// between this build and the stage's (a pipeline of another format), never a reason to apply
/// again.
fn unreadable(command_id: Uuid, error: impl std::fmt::Display) -> Error {
    Error::Internal(format!("the reply to command {command_id}: {error}"))
}

/// The command's principal: who the token says is calling.
fn principal_of(caller: &Caller) -> Principal {
    let kind = match caller.kind {
        Kind::Human => PrincipalKind::Human,
        Kind::Machine => PrincipalKind::Machine,
        Kind::Applicant => PrincipalKind::Applicant,
    };
    Principal {
        kind,
        id: caller.sub.to_string(),
        name: caller.name.to_string(),
    }
}
