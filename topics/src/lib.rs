//! The wire contract between ingress and the pipeline stages: the topic [`catalogue`], the
//! [`cluster`] it lives on, the [`envelope`] every command and event travels in, the typed
//! commands of each topic ([`apps`], [`installs`], [`definitions`], [`runs`], [`cases`],
//! [`backtests`], [`circuits`], [`documents`], the vendor events of [`callbacks`]), how a secret
//! value travels ([`sealed`]), the token that lets an app call read documents ([`call_token`]),
//! the [`producer`] (`acks=all`, idempotent), topic creation ([`admin`]), the [`reply`] every
//! command gets, and the [`consumer`] loop that stores a Kafka offset only after the handler's
//! effect is committed, in order per partition.

pub mod admin;
pub mod apps;
pub mod backtests;
pub mod call_token;
pub mod callbacks;
pub mod cases;
pub mod catalogue;
pub mod circuits;
mod client_log;
pub mod client_stats;
pub mod cluster;
mod command;
pub mod consumer;
pub mod definitions;
pub mod documents;
pub mod envelope;
pub mod error;
pub mod installs;
pub mod labels;
pub mod notifications;
pub mod outbound;
pub mod producer;
pub mod reply;
pub mod runs;
pub mod sealed;
pub mod settings;
pub mod webhook_endpoints;

pub use catalogue::{Topic, TopicKey};
pub use cluster::{Cluster, Replication};
pub use command::{Answered, Applied, Apply, Command, Dispatch, Scope};
pub use consumer::{Consumer, ConsumerOptions, Delivery, HandleError, Handler, RetryPolicy};
pub use envelope::{Envelope, Header, Message, Principal, PrincipalKind};
pub use error::Error;
pub use producer::Producer;
pub use reply::{Encoded, Heard, Outcome, Refusal, RefusalCode, Reply};
