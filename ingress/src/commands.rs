//! Commands out, outcomes in (ARCHITECTURE "Write path" rule 4): a route produces its command
//! to the topic (acknowledged by every in-sync replica), waits a bounded time for the stage's
//! reply, and answers from it, so the HTTP answer is what was applied. The reply comes over
//! Redis (`replies`); while it has not, the inbox is read every [`INBOX_POLL`], so a reply lost
//! to a Redis hiccup is recovered from the outcome the stage stored, never by applying the
//! command again. A command still unapplied after the wait answers 504 `command_timeout` with
//! its id: it stays on the log and will apply.

use std::time::Duration;

use serde_json::Value;
use topics::{Envelope, Message, Outcome, Principal, PrincipalKind, Reply};
use uuid::Uuid;

use crate::auth::Principal as Caller;
use crate::auth::claims::Kind;
use crate::error::Error;
use crate::state::State;

/// How often a waiting route reads the inbox.
const INBOX_POLL: Duration = Duration::from_secs(1);

/// What a route knows of the request that carries a command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) caller: &'a Caller,
    pub(crate) request_id: &'a str,
}

/// Produces `body` for the caller's tenant and answers what the stage made of it: the effect's
/// value, or the refusal as an error.
pub(crate) async fn submit<B: Message>(
    state: &State,
    origin: Origin<'_>,
    body: B,
) -> Result<Value, Error> {
    let envelope = Envelope::new(
        Some(origin.caller.tenant),
        principal_of(origin.caller),
        origin.request_id,
        service::telemetry::traces::traceparent_of(&tracing::Span::current()),
        body,
    );
    match send_and_wait(state, &envelope).await? {
        Outcome::Done { value } => Ok(value),
        Outcome::Refused(refusal) => Err(Error::Refused(refusal)),
    }
}

/// Produces `envelope` and waits for its outcome.
pub(crate) async fn send_and_wait<B: Message>(
    state: &State,
    envelope: &Envelope<B>,
) -> Result<Outcome, Error> {
    let mut waiter = state.replies.wait_for(envelope.id);
    state
        .producer
        .send(envelope)
        .await
        .map_err(|e| Error::Unavailable(format!("the command log: {e}")))?;
    let deadline = tokio::time::Instant::now() + state.config.command_wait;
    let mut poll = tokio::time::interval_at(tokio::time::Instant::now() + INBOX_POLL, INBOX_POLL);
    let reply = loop {
        tokio::select! {
            reply = &mut waiter.reply => match reply {
                Ok(reply) => break reply,
                // The sender went away without a reply: only the inbox can tell now.
                Err(_) => match stored_reply(state, envelope.id).await? {
                    Some(reply) => break reply,
                    None => tokio::time::sleep_until(deadline).await,
                },
            },
            _ = poll.tick() => {
                if let Some(reply) = stored_reply(state, envelope.id).await? {
                    break reply;
                }
            }
            () = tokio::time::sleep_until(deadline) => {
                match stored_reply(state, envelope.id).await? {
                    Some(reply) => break reply,
                    None => return Err(Error::CommandTimeout { command_id: envelope.id }),
                }
            }
        }
    };
    match reply {
        Reply::Applied { outcome } => Ok(outcome),
        Reply::DeadLettered { reason } => Err(Error::Internal(format!(
            "command {} was dead-lettered: {reason}",
            envelope.id
        ))),
    }
}

/// The reply the inbox holds for `command_id`, once the stage committed one.
async fn stored_reply(state: &State, command_id: Uuid) -> Result<Option<Reply>, Error> {
    let row: Option<(Option<Value>, Option<String>)> =
        sqlx::query_as("SELECT outcome, dead_letter_reason FROM inbox WHERE command_id = $1")
            .bind(command_id)
            .fetch_optional(&state.pool)
            .await
            .map_err(|e| Error::Unavailable(format!("the inbox: {e}")))?;
    Ok(match row {
        Some((Some(outcome), _)) => serde_json::from_value(outcome)
            .ok()
            .map(|outcome| Reply::Applied { outcome }),
        Some((None, Some(reason))) => Some(Reply::DeadLettered { reason }),
        _ => None,
    })
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
