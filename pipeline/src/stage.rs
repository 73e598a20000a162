//! A stage applies the commands of one topic. [`StageHandler`] adapts a [`Stage`] to the consumer
//! loop: decode, skip what the inbox already holds, apply and record in one transaction, commit,
//! then publish the outcome.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};
use topics::{Delivery, Envelope, HandleError, Handler, Message};
use tracing::Instrument;

use crate::Error;
use crate::inbox::{self, Applied};
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
    /// failures that must not be recorded are errors.
    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Self::Body>,
    ) -> Result<Value, Error>;
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

    /// Applies the command once; returns its outcome, fresh or from the inbox.
    async fn apply_once(&self, command: &Envelope<S::Body>) -> Result<Value, Error> {
        let mut tx = self.pool.begin().await?;
        if let Some(outcome) = inbox::outcome(&mut tx, command.id).await? {
            tracing::info!(command_id = %command.id, "already applied; answering the stored outcome");
            tx.rollback().await?;
            return Ok(outcome);
        }
        let outcome = self.stage.apply(&mut tx, command).await?;
        let applied = Applied {
            command_id: command.id,
            stage: S::NAME,
            topic: <S::Body as Message>::TOPIC.name,
            tenant: command.tenant,
        };
        inbox::record(&mut tx, applied, &outcome).await?;
        tx.commit().await?;
        Ok(outcome)
    }
}

#[async_trait]
impl<S: Stage> Handler for StageHandler<S> {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        let command = Envelope::<S::Body>::decode(delivery.payload)
            .map_err(|e| Error::Undecodable(e.to_string()).into_handle_error())?;
        let span = tracing::info_span!(
            "stage.apply",
            otel.name = %format_args!("{} apply", S::NAME),
            stage = S::NAME,
            command_id = %command.id,
            attempt = delivery.attempt,
            svc.request_id = %command.request_id,
            svc.tenant_id = %command.tenant,
        );
        if let Some(traceparent) = &command.traceparent {
            service::telemetry::traces::continue_from(&span, traceparent);
        }
        let outcome = self
            .apply_once(&command)
            .instrument(span)
            .await
            .map_err(Error::into_handle_error)?;
        if let Some(replies) = &self.replies {
            replies.publish(command.id, &outcome).await;
        }
        Ok(())
    }
}
