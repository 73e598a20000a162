//! One type per command, carrying the type of its reply. A route submits an `Install` and reads
//! back an [`Installed`](crate::installs::Installed); the installs stage applies an `Install`
//! and answers an `Installed`: neither names the other's JSON, and no answer of another kind can
//! arrive. A topic's commands travel as one enum, its [`Message`] body, written once per topic
//! by [`topic_commands!`]: the enum, the partition key of each, and the one dispatch from a body
//! to the stage's [`Apply`] of the command it holds.

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::reply::{Encoded, Outcome};
use crate::{Error, Message};

/// A command (or an event) and what it answers.
pub trait Command: Into<Self::Body> + Send + Sync + 'static {
    /// The body of its topic: every command of the topic.
    type Body: Message;
    /// What a stage answers when it applied one: the record as it now is, shaped as the route
    /// answers it; `()` when nobody reads more than that it applied.
    type Reply: Serialize + DeserializeOwned + Send + 'static;
    /// The partition key: the aggregate it changes (`tenant` is `None` for the platform's own
    /// records).
    fn key(&self, tenant: Option<Uuid>) -> Vec<u8>;
}

/// What applying one command came to: its outcome (the reply), and what it leaves for the
/// stage's work after the commit.
#[derive(Debug)]
pub struct Applied<R, T = ()> {
    pub outcome: Outcome<R>,
    pub then: T,
}

impl<R> From<Outcome<R>> for Applied<R> {
    fn from(outcome: Outcome<R>) -> Self {
        Applied { outcome, then: () }
    }
}

impl<R: Serialize, T> Applied<R, T> {
    /// The outcome in its topic's reply format `v`, as the inbox stores it and a reply carries it.
    pub fn encode(self, v: u16) -> Result<Answered<T>, Error> {
        Ok(Answered {
            outcome: self.outcome.encode(v)?,
            then: self.then,
        })
    }
}

/// A command applied, its outcome [encoded](Applied::encode) for the inbox and the reply.
#[derive(Debug)]
pub struct Answered<T = ()> {
    pub outcome: Encoded,
    pub then: T,
}

/// What a stage applies commands in (the pipeline's transaction, tenant and actor): it names the
/// stage's error.
pub trait Scope: Send {
    type Error: Send;
}

/// A stage's application of one command type inside the scope `Cx` it runs in; `T` is what
/// applying leaves for the stage's work after the commit (the same for every command of the
/// stage; nothing by default).
#[async_trait]
pub trait Apply<C: Command, Cx: Scope, T: Send = ()>: Send + Sync {
    async fn apply(&self, cx: &mut Cx, command: &C) -> Result<Applied<C::Reply, T>, Cx::Error>;
}

/// A topic's body handed to the [`Apply`] of the command it holds, its outcome encoded.
/// Implemented once per topic by [`topic_commands!`] (or [`one_command!`] for a topic of a
/// single type) for every stage that applies each of its commands.
#[async_trait]
pub trait Dispatch<S, Cx: Scope, T: Send>: Message {
    async fn dispatch(&self, stage: &S, cx: &mut Cx) -> Result<Answered<T>, Cx::Error>;
}

/// Declares a topic's body: an enum with one variant per command type (serde tag `type`, the
/// variant in snake case, the command's fields beside it), its [`Message`] impl (topic, command
/// and reply format versions, each command's key), its [`Dispatch`], and each command's
/// [`Command`] impl: `Install => Installed` is a command and its reply, keyed as the topic's
/// `keyed |command, tenant|` clause says. A variant without a reply is a command of another
/// topic still read from this one (its `Command` impl is its topic's).
macro_rules! topic_commands {
    (
        $(#[$meta:meta])*
        pub enum $body:ident on $topic:path, version $version:literal, replies $replies:literal,
            keyed |$it:ident, $tenant:ident| $key:expr;
        {
            $( $(#[$vmeta:meta])* $command:ident $(=> $reply:ty)? ),+ $(,)?
        }
    ) => {
        $($(
            impl $crate::Command for $command {
                type Body = $body;
                type Reply = $reply;

                fn key(&self, $tenant: Option<uuid::Uuid>) -> Vec<u8> {
                    let $it = self;
                    $key
                }
            }
        )?)+

        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        pub enum $body {
            $( $(#[$vmeta])* $command($command), )+
        }

        impl $crate::Message for $body {
            const TOPIC: $crate::Topic = $topic;
            const VERSION: u16 = $version;
            const REPLY_VERSION: u16 = $replies;

            fn key(&self, tenant: Option<uuid::Uuid>) -> Vec<u8> {
                match self {
                    $( $body::$command(command) => $crate::Command::key(command, tenant), )+
                }
            }
        }

        $(
            impl From<$command> for $body {
                fn from(command: $command) -> Self {
                    $body::$command(command)
                }
            }
        )+

        #[async_trait::async_trait]
        impl<S, Cx, T> $crate::Dispatch<S, Cx, T> for $body
        where
            Cx: $crate::Scope,
            Cx::Error: From<$crate::Error>,
            T: Send,
            S: Sync $( + $crate::Apply<$command, Cx, T> )+,
        {
            async fn dispatch(
                &self,
                stage: &S,
                cx: &mut Cx,
            ) -> Result<$crate::Answered<T>, Cx::Error> {
                let v = <Self as $crate::Message>::REPLY_VERSION;
                match self {
                    $(
                        $body::$command(command) => {
                            let applied = <S as $crate::Apply<$command, Cx, T>>::apply(
                                stage, cx, command,
                            )
                            .await?;
                            Ok(applied.encode(v)?)
                        }
                    )+
                }
            }
        }
    };
}

/// A topic whose body is one type, which is its only command (the vendor events, the call
/// outcomes, the outbound events): its [`Message`] impl and its [`Dispatch`].
macro_rules! one_command {
    ($command:ident on $topic:path, version $version:literal, replies $replies:literal) => {
        impl $crate::Message for $command {
            const TOPIC: $crate::Topic = $topic;
            const VERSION: u16 = $version;
            const REPLY_VERSION: u16 = $replies;

            fn key(&self, tenant: Option<uuid::Uuid>) -> Vec<u8> {
                $crate::Command::key(self, tenant)
            }
        }

        #[async_trait::async_trait]
        impl<S, Cx, T> $crate::Dispatch<S, Cx, T> for $command
        where
            Cx: $crate::Scope,
            Cx::Error: From<$crate::Error>,
            T: Send,
            S: Sync + $crate::Apply<$command, Cx, T>,
        {
            async fn dispatch(
                &self,
                stage: &S,
                cx: &mut Cx,
            ) -> Result<$crate::Answered<T>, Cx::Error> {
                let applied = <S as $crate::Apply<$command, Cx, T>>::apply(stage, cx, self).await?;
                Ok(applied.encode(<Self as $crate::Message>::REPLY_VERSION)?)
            }
        }
    };
}

pub(crate) use {one_command, topic_commands};
