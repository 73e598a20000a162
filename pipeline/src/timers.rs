//! The timer relay: a due row of a timer table (a run's retry delay or callback deadline, a
//! case's SLA deadline) becomes a command on its topic, acknowledged by the broker before the
//! row is deleted, so a timer outlives any restart and fires at least once; the stage that
//! gets a second one finds nothing to do. Several pipelines share the work (`FOR UPDATE SKIP
//! LOCKED`). Each table says how it is read ([`Timers`]).

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::future::try_join_all;
use sqlx::PgPool;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use topics::{Envelope, Message, Principal, Producer};
use uuid::Uuid;

use crate::Error;
use crate::job::Job;
use crate::workers::{Worker, WorkerState};

/// The longest a relay sleeps without looking: what bounds how late a timer fires that no
/// stage of this process woke it for (set by another pipeline that stopped before relaying
/// it, or moved by hand). No longer than the shortest delay a timer is moved to by hand in the
/// tests (2 s), so such a timer is seen by the time it is due.
const IDLE: Duration = Duration::from_secs(2);
/// The least time between two looks that a wake-up asks for: under a burst of settled
/// callbacks every batch wakes the relay, and one look per gap serves them all. A timer due
/// now fires at most this late (the fixed 250 ms poll before).
const GAP: Duration = Duration::from_millis(50);
/// How long a relay waits after a failed look before the next.
const RETRY: Duration = Duration::from_secs(1);
/// How long a relay waits when every due timer was locked by another transaction: another
/// pipeline's relay (which may hold them through a broker outage) or a stage deleting them.
const LOCKED: Duration = Duration::from_millis(250);
/// Timers relayed per transaction.
const BATCH: i64 = 256;

/// A table of timers and the command each one fires.
pub(crate) trait Timers: Send + Sync + 'static {
    type Command: Message;
    /// The principal the commands act as.
    const ACTOR: &'static str;
    /// Seconds until the earliest timer is due (zero or less: due now; infinite for a timer
    /// moved to `±infinity` by hand), NULL when there is none (one index probe, read without a
    /// lock).
    const NEXT_DUE: &'static str;
    /// Selects up to `$1` due rows as `(row id, tenant, target, traceparent)`, locked, skipping
    /// locked ones; the command continues the trace its `traceparent` names (NULL: none).
    const DUE: &'static str;
    /// Deletes the rows whose ids are `$1`.
    const SPENT: &'static str;

    /// The command a due timer of `target` fires.
    fn command(target: Uuid) -> Self::Command;
}

/// The timer tables a stage may set timers in ([`crate::Stage::SETS_TIMERS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerTable {
    /// `run_timers`: a retry's delay, a callback's deadline, a resume due now.
    Runs,
    /// `case_timers`: an open case's SLA deadline.
    Cases,
}

/// Wakes this process's timer relays. A stage that may have set timers wakes the relays of
/// their tables once its transaction committed ([`crate::Stage::SETS_TIMERS`]), so a relay
/// need not poll for timers it could not know of: between wake-ups it sleeps until the
/// earliest timer it saw is due, or [`IDLE`]. At rest that is one look per table every 2 s,
/// where a poll every 250 ms made eight statements a second (BENCHMARKS.md "Twice the
/// webhooks", fourth stop: "At rest").
#[derive(Debug, Clone, Default)]
pub(crate) struct TimersSet {
    runs: Arc<Notify>,
    cases: Arc<Notify>,
}

impl TimersSet {
    /// After a commit that may have set timers in `tables`: their relays look again (once per
    /// [`GAP`]).
    pub(crate) fn wake(&self, tables: &[TimerTable]) {
        // A permit is kept when the relay is not waiting, so a wake-up during a look is not
        // lost: the relay looks once more.
        for table in tables {
            match table {
                TimerTable::Runs => self.runs.notify_one(),
                TimerTable::Cases => self.cases.notify_one(),
            }
        }
    }

    /// What wakes the run timers' relay.
    pub(crate) fn runs(&self) -> Arc<Notify> {
        self.runs.clone()
    }

    /// What wakes the case timers' relay.
    pub(crate) fn cases(&self) -> Arc<Notify> {
        self.cases.clone()
    }
}

/// What one look at a timer table came to.
enum Look {
    /// This many due timers were relayed (zero: every due one was locked by another
    /// transaction).
    Relayed(usize),
    /// None is due; the earliest is this far off (`None`: there is no timer at all).
    Due(Option<Duration>),
}

/// The job: relays `T`'s due timers until stopped, looking when woken and when the earliest
/// timer is due.
pub(crate) struct TimerRelay<T> {
    pub(crate) pool: PgPool,
    pub(crate) producer: Producer,
    /// Notified by the stages that set a timer of `T`.
    pub(crate) woken: Arc<Notify>,
    pub(crate) worker: Worker,
    pub(crate) timers: PhantomData<fn() -> T>,
}

impl<T: Timers> Job for TimerRelay<T> {
    fn run(self, stop: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        relay::<T>(self.pool, self.producer, self.woken, self.worker, stop)
    }
}

async fn relay<T: Timers>(
    pool: PgPool,
    producer: Producer,
    woken: Arc<Notify>,
    worker: Worker,
    stop: CancellationToken,
) {
    loop {
        let looked = Instant::now();
        let wait = match look::<T>(&pool, &producer).await {
            Ok(look) => {
                worker.set(WorkerState::Running);
                match look {
                    // The rest of a full batch, or what is due next, is read again at once.
                    Look::Relayed(n) if n > 0 => Duration::ZERO,
                    // Another relay is relaying them, or a stage deleting them.
                    Look::Relayed(_) => LOCKED,
                    Look::Due(next) => next.map_or(IDLE, |next| next.min(IDLE)),
                }
            }
            Err(error) => {
                worker.set(WorkerState::Retrying);
                tracing::warn!(%error, actor = T::ACTOR, "timers not relayed; retrying");
                RETRY
            }
        };
        if stop.is_cancelled() {
            break;
        }
        if wait.is_zero() {
            continue;
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(wait) => {}
            () = woken.notified() => {
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep_until(looked + GAP) => {}
                }
            }
        }
    }
    worker.set(WorkerState::Stopped);
}

/// Looks at `T`'s table: relays what is due, or says when the next timer is.
async fn look<T: Timers>(pool: &PgPool, producer: &Producer) -> Result<Look, Error> {
    let next: Option<f64> = sqlx::query_scalar(T::NEXT_DUE).fetch_one(pool).await?;
    match next {
        Some(seconds) if seconds <= 0.0 => relay_due::<T>(pool, producer).await.map(Look::Relayed),
        // A timer a millisecond off is looked for again a millisecond later; one at +infinity
        // (moved by hand) is not due within IDLE.
        Some(seconds) => Ok(Look::Due(Some(
            Duration::try_from_secs_f64(seconds.max(0.001)).unwrap_or(IDLE),
        ))),
        None => Ok(Look::Due(None)),
    }
}

async fn relay_due<T: Timers>(pool: &PgPool, producer: &Producer) -> Result<usize, Error> {
    let mut tx = pool.begin().await?;
    let due: Vec<(Uuid, Uuid, Uuid, Option<String>)> = sqlx::query_as(T::DUE)
        .bind(BATCH)
        .fetch_all(&mut *tx)
        .await?;
    if due.is_empty() {
        return Ok(0);
    }
    try_join_all(due.iter().map(|(_, tenant, target, traceparent)| {
        let command = Envelope::new(
            Some(*tenant),
            Principal::system(T::ACTOR),
            Uuid::now_v7().to_string(),
            traceparent.clone(),
            T::command(*target),
        );
        async move { producer.send(&command).await }
    }))
    .await?;
    let ids: Vec<Uuid> = due.iter().map(|(id, ..)| *id).collect();
    sqlx::query(T::SPENT).bind(&ids).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(due.len())
}
