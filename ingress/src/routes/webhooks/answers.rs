//! What a vendor is answered for an event (SPEC §4.8's table), decided by the callbacks stage:
//! the one writer of the session is the only one that knows whether this event settled it, or
//! another event, the session's timeout, a cancel or a forced uninstall did first. The route
//! waits for the stage's reply once the event is on the log ([`answer_of`]), reading the
//! event's row when the reply went missing, so exactly one final event per session is answered
//! `received`, on whichever API instance, and every other one `stale` with the status the
//! session settled to.

use http::{Response, StatusCode};
use readers::callbacks::webhook;
use serde_json::{Value, json};
use service::http::{Body, response};
use topics::callbacks::{Answer, Event};
use topics::{Envelope, Message, Outcome, Reply};
use uuid::Uuid;

use crate::commands;
use crate::error::Error;
use crate::replies::Waiter;
use crate::state::State;

/// The stage's answer to the event `message` of `tenant`, produced after `waiter` began.
pub(super) async fn answer_of(
    state: &State,
    waiter: Waiter,
    tenant: Uuid,
    message: &Envelope<Event>,
) -> Result<Answer, Error> {
    let message_id = message.id;
    let stored = || recorded(state, tenant, message);
    let format = Event::REPLY_VERSION;
    match commands::outcome_of(&state.commands, waiter, message_id, format, stored).await? {
        Outcome::Done { value } => Ok(value),
        // The stage refuses no event: one it cannot apply is dead-lettered.
        Outcome::Refused(refusal) => Err(Error::Internal(format!(
            "the callbacks stage refused event {message_id}: {}",
            refusal.message
        ))),
    }
}

/// The reply the event's row holds, once the stage committed it; a duplicate, which the stage
/// records nothing of, is known by the row another message of its event id left.
async fn recorded(
    state: &State,
    tenant: Uuid,
    message: &Envelope<Event>,
) -> Result<Option<Reply>, Error> {
    let message_id = message.id;
    let tenant = readers::Tenant::new(tenant);
    let Some(recording) = webhook::recording(&state.reads.pool, tenant, message_id).await? else {
        let event = &message.body;
        let other =
            webhook::recorded_event(&state.reads.pool, tenant, &event.app_name, &event.event_id);
        return other.await?.map(|_| applied(Answer::Duplicate)).transpose();
    };
    applied(recording.answer()).map(Some)
}

/// The reply the stage would have published with `answer`.
fn applied(answer: Answer) -> Result<Reply, Error> {
    let outcome = Outcome::done(answer)
        .encode(Event::REPLY_VERSION)
        .map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Reply::Applied { outcome })
}

/// The vendor's answer: 202 for the event that settled (or, `pending`, kept) its session, 200
/// for one that changed nothing.
pub(super) fn response_to(callback_id: Uuid, answer: &Answer) -> Response<Body> {
    match answer {
        Answer::Settled { status } => json_answer(
            StatusCode::ACCEPTED,
            json!({"received": true, "callbackId": callback_id, "status": status.as_str()}),
        ),
        Answer::Accepted => json_answer(
            StatusCode::ACCEPTED,
            json!({"received": true, "accepted": true, "callbackId": callback_id, "status": "pending"}),
        ),
        Answer::Stale { status } => json_answer(
            StatusCode::OK,
            json!({"received": false, "stale": true, "callbackId": callback_id, "status": status}),
        ),
        Answer::Duplicate => duplicate(),
    }
}

/// A delivery of an event id recorded before.
pub(super) fn duplicate() -> Response<Body> {
    json_answer(
        StatusCode::OK,
        json!({"received": false, "duplicate": true}),
    )
}

pub(super) fn json_answer(status: StatusCode, body: Value) -> Response<Body> {
    response::json(status, &body)
}
