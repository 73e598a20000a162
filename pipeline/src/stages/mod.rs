//! The stages, one per concern, each the single writer of its topic's keys: [`apps`] (the
//! versions' lifecycle, the platform catalogue), [`settings`] (the tenant-wide settings),
//! [`approvals`] (what deciding any approval request is: four-eyes, the decision),
//! [`installs`] (installs, their secrets, test-call audits), [`definitions`] (versions of
//! workflows and rules, publishing), [`runs`] (workflow runs and their app calls),
//! [`callbacks`] (vendor webhook events settling the runs' callback sessions), [`circuits`]
//! (each app's circuit, moved by its calls' outcomes), [`documents`] (a subject's documents),
//! [`cases`] (cases decided and their SLA deadlines), [`backtests`] (backtests recorded, then
//! run), [`webhook_endpoints`] (tenants' webhook endpoints, deliveries retried by hand),
//! [`outbound`] (outbound events recorded with their webhook deliveries, notifications) and
//! [`notifications`] (read marks); [`version_lock`] orders a version's status changes after the
//! installs that read its status. [`Consuming`] runs each stage's consumer, reporting its state
//! on `/healthz`.

mod approvals;
pub(crate) mod apps;
pub(crate) mod backtests;
pub(crate) mod callbacks;
pub(crate) mod cases;
pub(crate) mod circuits;
pub(crate) mod definitions;
pub(crate) mod documents;
pub(crate) mod installs;
pub(crate) mod notifications;
pub(crate) mod outbound;
pub(crate) mod runs;
pub(crate) mod settings;
mod version_lock;
pub(crate) mod webhook_endpoints;

use std::time::Duration;

use sqlx::PgPool;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use topics::{Cluster, Consumer, ConsumerOptions, Handler, Message, RetryPolicy};

use crate::replies::Replies;
use crate::stage::{Stage, StageHandler};
use crate::timers::TimersSet;
use crate::workers::{Worker, WorkerState, Workers};

/// What every stage's consumer shares: the cluster, the database, the reply channel, the
/// `/healthz` registry and the stop signal.
#[derive(Debug, Clone)]
pub(crate) struct Consuming {
    pub(crate) cluster: Cluster,
    pub(crate) pool: PgPool,
    pub(crate) replies: Replies,
    pub(crate) workers: Workers,
    pub(crate) stop: CancellationToken,
    /// The worker's one producer, which the stages' dead letters go out on too.
    pub(crate) producer: topics::Producer,
    /// This worker's static name in every stage's group (`KAFKA_GROUP_INSTANCE_ID`).
    pub(crate) instance_id: Option<String>,
    /// The timer relays the stages that set timers wake.
    pub(crate) timers: TimersSet,
}

impl Consuming {
    /// Consumes `S`'s topic as the stage's consumer group until the stop; the stage says
    /// whether it publishes replies ([`Stage::REPLIES`](crate::Stage::REPLIES)).
    pub(crate) fn spawn<S: Stage>(&self, stage: S) -> JoinHandle<()> {
        self.spawn_on(stage, <S::Body as Message>::TOPIC.name, S::NAME)
    }

    /// Consumes the topic `S`'s commands had before it was renamed, as the consumer group the
    /// stage had then (`name`), so that what was not applied there yet is applied once: for a
    /// release, ingresses of the one before write there while the switch goes on (the
    /// pipelines upgrade first, docs/decisions.md).
    pub(crate) fn spawn_former<S: Stage>(
        &self,
        stage: S,
        topic: topics::Topic,
        name: &str,
    ) -> JoinHandle<()> {
        self.spawn_on(stage, topic.name, name)
    }

    fn spawn_on<S: Stage>(&self, stage: S, topic: &'static str, name: &str) -> JoinHandle<()> {
        let handler = StageHandler::new(stage, self.pool.clone(), Some(self.replies.clone()))
            .waking(self.timers.clone());
        let worker = self.workers.register(topic);
        let options = ConsumerOptions {
            cluster: self.cluster.clone(),
            group_id: format!("pipeline-{name}"),
            topic: topic.to_owned(),
            client_id: format!("pipeline-{name}"),
            commit_interval: Duration::from_millis(500),
            retry: RetryPolicy::default(),
            // Each stage is a group of its own, so one name serves them all.
            instance_id: self.instance_id.clone(),
        };
        let dead_letters = self.producer.clone();
        tokio::spawn(consume(
            handler,
            options,
            dead_letters,
            worker,
            self.stop.clone(),
        ))
    }
}

/// Consumes with `handler` as `options` say until `stop`, retrying the consumer's creation
/// while the broker is away.
async fn consume(
    handler: impl Handler + 'static,
    options: ConsumerOptions,
    dead_letters: topics::Producer,
    worker: Worker,
    stop: CancellationToken,
) {
    let topic = options.topic.as_str();
    let consumer = loop {
        match Consumer::new(&options, dead_letters.clone()) {
            Ok(consumer) => break consumer,
            Err(error) => {
                worker.set(WorkerState::Retrying);
                tracing::warn!(topic, %error, "consumer not created yet; retrying");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    };
    worker.set(WorkerState::Running);
    if let Err(error) = consumer.run(handler, stop.cancelled_owned()).await {
        tracing::error!(topic, %error, "stage stopped");
    }
    worker.set(WorkerState::Stopped);
}
