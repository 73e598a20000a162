//! One shape for every stage. A [`Stage`] applies the commands (or events) of one topic, a batch
//! of consecutive ones at a time (one message is a batch of one), inside a transaction it is
//! handed; then, once that transaction committed, it may do what must not happen inside one
//! ([`Stage::after_commit`]: the runs stage calls the runner there). [`StageHandler`] runs any
//! stage on the consumer loop: decode the batch, take each command's inbox row (a command
//! answered before is answered from there instead of applied again), apply the rest, record their
//! outcomes, commit, publish each reply, then the after-commit step.

mod context;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::PgPool;
use topics::{Answered, Delivery, Dispatch, Envelope, HandleError, Handler, Message, Reply};
use tracing::{Instrument, Span};
use uuid::Uuid;

pub use context::Context;

/// A stage applies command `$command` with `$apply`, an `async fn(&mut Context, &$command)` to
/// the command's `Outcome`, leaving nothing for after the commit: the `Apply` of most commands.
macro_rules! applies {
    ($stage:ty: $command:ty => $apply:path) => {
        #[async_trait::async_trait]
        impl topics::Apply<$command, $crate::stage::Context> for $stage {
            async fn apply(
                &self,
                cx: &mut $crate::stage::Context,
                command: &$command,
            ) -> Result<topics::Applied<<$command as topics::Command>::Reply>, $crate::Error> {
                $apply(cx, command).await.map(topics::Applied::from)
            }
        }
    };
}
pub(crate) use applies;

use crate::Error;
use crate::inbox::{self, Entry};
use crate::replies::Replies;
use crate::task_failures::{self, Owner, Reason};
use crate::timers::{TimerTable, TimersSet};

/// One concern of the write path. What it does with each command type of its topic is its
/// [`topics::Apply`] of that type, in a [`Context`]; the topic's body hands each command to
/// it ([`Dispatch`]).
#[async_trait]
pub trait Stage: Sized + Send + Sync + 'static {
    /// The commands it applies: its topic's body.
    type Body: Dispatch<Self, Context, Self::Then>;
    /// What applying a command leaves for [`Stage::after_commit`] (`()` when nothing).
    type Then: Send + 'static;
    /// Its name in the inbox, logs and consumer group.
    const NAME: &'static str;
    /// Up to how many queued commands of a partition apply in one transaction (a group
    /// commit); 1 applies each alone.
    const BATCH_LIMIT: usize = 1;
    /// How long a batch that is not full waits for more commands of its partition
    /// ([`topics::Handler::batch_linger`]); zero takes only what is queued.
    const BATCH_LINGER: Duration = Duration::ZERO;
    /// Whether each command gets an inbox row (and a reply): commands a route waits on. A
    /// stage whose events are recorded by rows of their own says no: its redeliveries are its
    /// own to recognise, and to answer.
    const INBOX: bool = true;
    /// Whether each command's outcome is published to a waiting route: by default when it has
    /// an inbox (where a route that missed the reply reads it). A stage without one whose
    /// rows say what each event came to says yes too (the callbacks stage: the webhook route
    /// answers the vendor from it); one whose commands nobody waits on says no.
    const REPLIES: bool = Self::INBOX;
    /// The timer tables applying its commands (or their after-commit steps) may set timers in:
    /// the handler wakes those tables' relays after each commit and after the after-commit
    /// steps, so a timer due now fires at once ([`crate::timers::TimersSet`]).
    const SETS_TIMERS: &'static [TimerTable] = &[];

    /// Applies consecutive commands of one partition in `cx`'s transaction, in order,
    /// answering what each came to. Each alone by default, through its type's
    /// [`topics::Apply`]; a stage that gains from seeing the batch (locking every row it
    /// touches first) applies it its own way. A refusal decided by the stage (conflict,
    /// missing record) is an outcome too, so a redelivery gets the same answer; only failures
    /// that must not be recorded are errors (their class decides between retry and dead
    /// letter).
    async fn apply_batch(
        &self,
        cx: &mut Context,
        commands: &[&Decoded<Self::Body>],
    ) -> Result<Vec<Answered<Self::Then>>, Error> {
        let mut answered = Vec::with_capacity(commands.len());
        for command in commands {
            cx.at(command.envelope.header());
            let one = command
                .envelope
                .body
                .dispatch(self, cx)
                .instrument(command.span.clone())
                .await?;
            answered.push(one);
        }
        Ok(answered)
    }

    /// After the commit and the replies: `then` is what applying `command` left, `None` when
    /// it was applied before (answered from the inbox, a redelivery): the step runs again then,
    /// so it reads what is stored rather than trusting it ran. A failure retries the command.
    async fn after_commit(
        &self,
        _command: &Envelope<Self::Body>,
        _then: Option<Self::Then>,
    ) -> Result<(), Error> {
        Ok(())
    }
}

/// A command as the stage gets it: decoded, with the span its application runs in.
#[derive(Debug)]
pub struct Decoded<B> {
    pub envelope: Envelope<B>,
    pub span: Span,
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

/// What became of one command of a batch.
struct Done<T> {
    /// Its reply, published when the stage publishes replies.
    reply: Reply,
    /// What applying it left, `None` when it was answered from the inbox.
    then: Option<T>,
}

/// A stage bound to its database and reply channel: the consumer loop's handler of its topic.
pub struct StageHandler<S> {
    stage: S,
    pool: PgPool,
    replies: Option<Replies>,
    /// The process's timer relays, woken when the stage sets timers.
    timers: Option<TimersSet>,
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
            timers: None,
        }
    }

    /// Wakes `timers` after each commit, when the stage [sets timers](Stage::SETS_TIMERS).
    pub(crate) fn waking(mut self, timers: TimersSet) -> Self {
        self.timers = (!S::SETS_TIMERS.is_empty()).then_some(timers);
        self
    }

    fn timers_set(&self) {
        if let Some(timers) = &self.timers {
            timers.wake(S::SETS_TIMERS);
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

    fn decode(delivery: &Delivery<'_>) -> Result<Decoded<S::Body>, HandleError> {
        let envelope = Envelope::<S::Body>::decode(delivery.payload)
            .map_err(|e| Error::Undecodable(e.to_string()).into_handle_error())?;
        let span = apply_span(S::NAME, &envelope, delivery.attempt);
        Ok(Decoded { envelope, span })
    }

    /// Applies the batch once, in one transaction (its `db.transaction` span, from begin to
    /// commit; each command's own statements run in the command's span, which its lines and
    /// the stage's fields need): each command answered before is answered from the inbox, the
    /// others applied and their outcomes recorded.
    async fn apply_once(&self, batch: &[Decoded<S::Body>]) -> Result<Vec<Done<S::Then>>, Error> {
        let transaction = tracing::info_span!(
            "db.transaction",
            otel.kind = "client",
            db.system.name = "postgresql",
        );
        self.apply_in_transaction(batch)
            .instrument(transaction)
            .await
    }

    async fn apply_in_transaction(
        &self,
        batch: &[Decoded<S::Body>],
    ) -> Result<Vec<Done<S::Then>>, Error> {
        let mut cx = Context::new(self.pool.begin().await?, S::NAME);
        let mut done: Vec<Option<Done<S::Then>>> = batch.iter().map(|_| None).collect();
        let mut fresh = Vec::new();
        // A command twice in one batch (a producer's retry) is applied once.
        let mut first_of: HashMap<Uuid, usize> = HashMap::new();
        let mut repeats = Vec::new();
        for (i, command) in batch.iter().enumerate() {
            if let Some(first) = first_of.get(&command.envelope.id) {
                repeats.push((i, *first));
                continue;
            }
            first_of.insert(command.envelope.id, i);
            let stored = if S::INBOX {
                inbox::take(&mut cx.tx, Self::entry(&command.envelope))
                    .instrument(command.span.clone())
                    .await?
            } else {
                None
            };
            match stored {
                Some(reply) => {
                    tracing::info!(command_id = %command.envelope.id, "already answered; replying from the inbox");
                    done[i] = Some(Done { reply, then: None });
                }
                None => fresh.push(i),
            }
        }
        if fresh.is_empty() {
            cx.tx.rollback().await?;
        } else {
            let commands: Vec<&Decoded<S::Body>> = fresh.iter().map(|&i| &batch[i]).collect();
            let applied = self.stage.apply_batch(&mut cx, &commands).await?;
            if applied.len() != fresh.len() {
                return Err(Error::Contract(format!(
                    "the {} stage answered {} outcomes for {} commands",
                    S::NAME,
                    applied.len(),
                    fresh.len()
                )));
            }
            let mut tx = cx.finish().await?;
            for (i, applied) in fresh.into_iter().zip(applied) {
                if S::INBOX {
                    inbox::applied(&mut tx, batch[i].envelope.id, &applied.outcome).await?;
                }
                done[i] = Some(Done {
                    reply: Reply::Applied {
                        outcome: applied.outcome,
                    },
                    then: Some(applied.then),
                });
            }
            fail::fail_point!("stage.before_commit");
            tx.commit().await?;
            self.timers_set();
            fail::fail_point!("stage.after_commit");
        }
        for (i, first) in repeats {
            // The first copy was answered above (an earlier index).
            if let Some(reply) = done[first].as_ref().map(|d| d.reply.clone()) {
                done[i] = Some(Done { reply, then: None });
            }
        }
        // Every command got its answer above; one missing would shift the replies onto the
        // wrong commands.
        done.into_iter()
            .map(|d| {
                d.ok_or_else(|| Error::Contract("a command of the batch went unanswered".into()))
            })
            .collect()
    }

    fn publish(&self, command_id: Uuid, reply: &Reply) {
        if !S::REPLIES {
            return;
        }
        if let Some(replies) = &self.replies {
            replies.publish(command_id, reply);
        }
    }
}

#[async_trait]
impl<S: Stage> Handler for StageHandler<S> {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        self.handle_batch(std::slice::from_ref(delivery)).await
    }

    fn batch_limit(&self) -> usize {
        S::BATCH_LIMIT
    }

    fn batch_linger(&self) -> Duration {
        S::BATCH_LINGER
    }

    async fn handle_batch(&self, deliveries: &[Delivery<'_>]) -> Result<(), HandleError> {
        let batch = deliveries
            .iter()
            .map(Self::decode)
            .collect::<Result<Vec<_>, _>>()?;
        let applying = match batch.as_slice() {
            [one] => self.apply_once(&batch).instrument(one.span.clone()).await,
            _ => {
                let span =
                    tracing::info_span!("stage.batch", stage = S::NAME, commands = batch.len());
                self.apply_once(&batch).instrument(span).await
            }
        };
        let (answers, thens): (Vec<_>, Vec<_>) = applying
            .map_err(Error::into_handle_error)?
            .into_iter()
            .map(|done| (done.reply, done.then))
            .unzip();
        if let (true, Some(replies)) = (S::REPLIES, &self.replies) {
            let ids = batch.iter().map(|command| command.envelope.id);
            replies.publish_all(ids.zip(&answers));
        }
        let mut after = Ok(());
        for (command, then) in batch.iter().zip(thens) {
            after = self
                .stage
                .after_commit(&command.envelope, then)
                .instrument(command.span.clone())
                .await;
            if after.is_err() {
                break;
            }
        }
        // The after-commit steps may have set timers of their own (a retry's, when a call
        // failed), also those before one that failed.
        self.timers_set();
        after.map_err(Error::into_handle_error)
    }

    /// A dead-lettered command (the consumer logged it) counts as a task failure once reported;
    /// its reply is recorded in the inbox (so a redelivery and a waiter
    /// that missed the message find it) and published. A message that does not decode has no
    /// tenant to record it under; its reply is only published, to the id in its headers. A
    /// stage without an inbox records nothing (the message stays on the dead-letter topic for
    /// an operator) and publishes the dead letter if it publishes replies at all, so a waiting
    /// route answers now rather than at the end of its wait.
    async fn dead_lettered(
        &self,
        delivery: &Delivery<'_>,
        reason: &str,
    ) -> Result<(), HandleError> {
        let dead = Reply::DeadLettered {
            reason: reason.to_owned(),
        };
        let decoded = Envelope::<S::Body>::decode(delivery.payload);
        let owner = match &decoded {
            Ok(command) => Owner::Of(command.tenant),
            Err(_) => owner_of_undecoded(delivery.payload),
        };
        // Counted once reported: the consumer calls again while the inbox cannot be written.
        let counted = || task_failures::count(owner, S::NAME, Reason::DeadLettered);
        if !S::INBOX {
            if let Some(id) = message_id(delivery) {
                self.publish(id, &dead);
            }
            counted();
            return Ok(());
        }
        match decoded {
            Ok(command) => {
                let reply = inbox::dead_lettered(&self.pool, Self::entry(&command), reason)
                    .await
                    .map_err(Error::into_handle_error)?;
                self.publish(command.id, &reply);
            }
            Err(_) => {
                if let Some(id) = message_id(delivery) {
                    self.publish(id, &dead);
                }
            }
        }
        counted();
        Ok(())
    }
}

/// The tenant of a message whose body does not read (a body version newer than this build, say),
/// when its envelope names one.
fn owner_of_undecoded(payload: &[u8]) -> Owner {
    #[derive(serde::Deserialize)]
    struct TenantOnly {
        tenant: Option<Uuid>,
    }
    match serde_json::from_slice::<TenantOnly>(payload) {
        Ok(envelope) => Owner::Of(envelope.tenant),
        Err(_) => Owner::Unknown,
    }
}

/// The id a message's headers carry: a message that does not decode is still answered by it.
fn message_id(delivery: &Delivery<'_>) -> Option<Uuid> {
    delivery
        .header("id")
        .and_then(|id| std::str::from_utf8(id).ok())
        .and_then(|id| Uuid::try_parse(id).ok())
}
