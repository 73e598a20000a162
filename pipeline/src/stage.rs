//! A stage applies the commands of one topic. [`StageHandler`] adapts a [`Stage`] to the consumer
//! loop: decode, skip what the inbox already holds, apply and record in one transaction, commit,
//! then publish the outcome.

use async_trait::async_trait;
use sqlx::{PgPool, Postgres, Transaction};
use topics::{Delivery, Envelope, HandleError, Handler, Message, Outcome, Reply};
use tracing::{Instrument, Span};
use uuid::Uuid;

use crate::Error;
use crate::inbox::{self, Entry};
use crate::replies::Replies;

/// One concern of the write path.
#[async_trait]
pub trait Stage: Send + Sync + 'static {
    /// The commands it applies.
    type Body: Message;
    /// Its name in the inbox, logs and consumer group.
    const NAME: &'static str;

    /// Applies `command` inside `tx` and returns its outcome. A refusal decided by the stage
    /// (conflict, missing record) is an outcome too, so a redelivery gets the same answer; only
    /// failures that must not be recorded are errors (their class decides between retry and
    /// dead letter).
    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Self::Body>,
    ) -> Result<Outcome, Error>;
}

/// The tenant a tenant's command (or event) names; one without is malformed, so poison.
pub(crate) fn tenant_of<S: Stage>(command: &Envelope<S::Body>) -> Result<Uuid, Error> {
    command
        .tenant
        .ok_or_else(|| Error::Invalid(format!("a {} command without a tenant", S::NAME)))
}

/// The span of one message applied by stage `name`: its ids, its tenant, and the trace of the
/// request that produced it, continued.
pub(crate) fn apply_span<B>(name: &'static str, message: &Envelope<B>, attempt: u32) -> Span {
    let span = tracing::info_span!(
        "stage.apply",
        otel.name = %format_args!("{name} apply"),
        stage = name,
        command_id = %message.id,
        attempt,
        svc.request_id = %message.request_id,
        svc.tenant_id = tracing::field::Empty,
        svc.app.name = tracing::field::Empty,
        svc.remote_parent = tracing::field::Empty,
    );
    if let Some(tenant) = message.tenant {
        span.record("svc.tenant_id", tracing::field::display(tenant));
    }
    if let Some(traceparent) = &message.traceparent {
        service::telemetry::traces::continue_from(&span, traceparent);
    }
    span
}

/// A stage bound to its database and reply channel.
pub struct StageHandler<S> {
    stage: S,
    pool: PgPool,
    replies: Option<Replies>,
}

impl<S> std::fmt::Debug for StageHandler<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageHandler").finish_non_exhaustive()
    }
}

impl<S: Stage> StageHandler<S> {
    pub fn new(stage: S, pool: PgPool, replies: Option<Replies>) -> Self {
        Self {
            stage,
            pool,
            replies,
        }
    }

    fn entry<'a>(command: &Envelope<S::Body>) -> Entry<'a> {
        Entry {
            command_id: command.id,
            stage: S::NAME,
            topic: <S::Body as Message>::TOPIC.name,
            tenant: command.tenant,
        }
    }

    /// Applies the command once; answers its reply, fresh or from the inbox.
    async fn apply_once(&self, command: &Envelope<S::Body>) -> Result<Reply, Error> {
        let mut tx = self.pool.begin().await?;
        if let Some(reply) = inbox::take(&mut tx, Self::entry(command)).await? {
            tracing::info!(command_id = %command.id, "already answered; replying from the inbox");
            tx.rollback().await?;
            return Ok(reply);
        }
        let outcome = self.stage.apply(&mut tx, command).await?;
        inbox::applied(&mut tx, command.id, &outcome).await?;
        tx.commit().await?;
        Ok(Reply::Applied { outcome })
    }

    async fn publish(&self, command_id: Uuid, reply: &Reply) {
        if let Some(replies) = &self.replies {
            replies.publish(command_id, reply).await;
        }
    }
}

#[async_trait]
impl<S: Stage> Handler for StageHandler<S> {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        let command = Envelope::<S::Body>::decode(delivery.payload)
            .map_err(|e| Error::Undecodable(e.to_string()).into_handle_error())?;
        let span = apply_span(S::NAME, &command, delivery.attempt);
        let reply = self
            .apply_once(&command)
            .instrument(span)
            .await
            .map_err(Error::into_handle_error)?;
        self.publish(command.id, &reply).await;
        Ok(())
    }

    /// A dead-lettered command's reply is recorded in the inbox (so a redelivery and a waiter
    /// that missed the message find it) and published. A message that does not decode has no
    /// tenant to record it under; its reply is only published, to the id in its headers.
    async fn dead_lettered(
        &self,
        delivery: &Delivery<'_>,
        reason: &str,
    ) -> Result<(), HandleError> {
        match Envelope::<S::Body>::decode(delivery.payload) {
            Ok(command) => {
                let reply = inbox::dead_lettered(&self.pool, Self::entry(&command), reason)
                    .await
                    .map_err(Error::into_handle_error)?;
                self.publish(command.id, &reply).await;
            }
            Err(_) => {
                let id = delivery
                    .header("id")
                    .and_then(|id| std::str::from_utf8(id).ok())
                    .and_then(|id| Uuid::try_parse(id).ok());
                if let Some(id) = id {
                    let reply = Reply::DeadLettered {
                        reason: reason.to_owned(),
                    };
                    self.publish(id, &reply).await;
                }
            }
        }
        Ok(())
    }
}
