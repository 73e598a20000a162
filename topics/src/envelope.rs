//! The envelope every command and event travels in. The body is a typed enum (serde tag `type`)
//! owned by the topic it travels on; `v` is the body's schema version, so a consumer can refuse
//! a message written by a newer producer instead of misreading it.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Error, Topic};

/// Who asked for the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    Human,
    Machine,
    Applicant,
    /// The platform itself: timers, relays, start-up catalogue.
    System,
}

/// The principal of a command: kind, id (a token's `sub`; for applicants, the submission) and
/// display name (the token's `name`), which audit rows keep as the actor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub kind: PrincipalKind,
    pub id: String,
    #[serde(default)]
    pub name: String,
}

impl Principal {
    /// The platform itself, acting as `id` (for example `catalogue`).
    pub fn system(id: &str) -> Self {
        Self {
            kind: PrincipalKind::System,
            id: id.to_owned(),
            name: id.to_owned(),
        }
    }
}

/// A body that travels on one topic of the catalogue.
pub trait Message: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The topic it travels on.
    const TOPIC: Topic;
    /// Schema version of the body; bump on any incompatible change.
    const VERSION: u16;
    /// Format version of its commands' replies ([`crate::reply::Encoded`]); bump on any
    /// incompatible change of a reply type.
    const REPLY_VERSION: u16;
    /// The partition key: the aggregate this body changes (`tenant` is `None` for the
    /// platform's own records).
    fn key(&self, tenant: Option<Uuid>) -> Vec<u8>;
}

/// A command or event with its context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<B> {
    /// UUID v7: unique, and ordered by creation time.
    pub id: Uuid,
    /// The tenant whose records the body changes; `None` (serialised `null`) for the platform's
    /// own records, such as the versions of the release's catalogue.
    pub tenant: Option<Uuid>,
    pub principal: Principal,
    pub request_id: String,
    /// W3C trace context of the producing span, so one trace runs ingress → stage → runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    pub time: DateTime<Utc>,
    /// Schema version of `body`.
    pub v: u16,
    pub body: B,
}

/// An envelope's context without its body ([`Envelope::header`]).
pub type Header = Envelope<()>;

impl<B: Message> Envelope<B> {
    /// A new envelope with a fresh UUID v7 and the current time.
    pub fn new(
        tenant: Option<Uuid>,
        principal: Principal,
        request_id: impl Into<String>,
        traceparent: Option<String>,
        body: B,
    ) -> Self {
        Self {
            id: Uuid::now_v7(),
            tenant,
            principal,
            request_id: request_id.into(),
            traceparent,
            time: Utc::now(),
            v: B::VERSION,
            body,
        }
    }

    pub fn key(&self) -> Vec<u8> {
        self.body.key(self.tenant)
    }

    /// The envelope without its body: who asked, when, under which ids.
    pub fn header(&self) -> Header {
        Envelope {
            id: self.id,
            tenant: self.tenant,
            principal: self.principal.clone(),
            request_id: self.request_id.clone(),
            traceparent: self.traceparent.clone(),
            time: self.time,
            v: self.v,
            body: (),
        }
    }

    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        serde_json::to_vec(self).map_err(Error::Encode)
    }

    /// Decodes an envelope, refusing a body version newer than this build knows.
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let envelope: Self = serde_json::from_slice(bytes).map_err(Error::Decode)?;
        if envelope.v > B::VERSION {
            return Err(Error::Decode(serde::de::Error::custom(format!(
                "body version {} is newer than this build's {}",
                envelope.v,
                B::VERSION
            ))));
        }
        Ok(envelope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Probe {
        Ping { n: u32 },
    }

    impl Message for Probe {
        const TOPIC: Topic = catalogue::APPS;
        const VERSION: u16 = 1;
        const REPLY_VERSION: u16 = 1;
        fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
            catalogue::tenant_app_key(tenant, "probe")
        }
    }

    fn principal() -> Principal {
        Principal {
            kind: PrincipalKind::Human,
            id: "u-1".into(),
            name: "Ada".into(),
        }
    }

    #[test]
    fn round_trips_with_tagged_body_and_v7_id() {
        let envelope = Envelope::new(
            Some(Uuid::from_u128(7)),
            principal(),
            "req-1",
            None,
            Probe::Ping { n: 3 },
        );
        assert_eq!(envelope.id.get_version_num(), 7);
        let bytes = envelope.encode().expect("encodes");
        let json: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(json["body"]["type"], "ping");
        assert_eq!(json["requestId"], "req-1");
        assert_eq!(json["v"], 1);
        assert_eq!(json["tenant"], Uuid::from_u128(7).to_string());
        assert_eq!(
            Envelope::<Probe>::decode(&bytes).expect("decodes"),
            envelope
        );
    }

    #[test]
    fn refuses_a_newer_body_version_and_garbage() {
        let mut envelope = Envelope::new(None, principal(), "r", None, Probe::Ping { n: 1 });
        envelope.v = 2;
        let bytes = serde_json::to_vec(&envelope).expect("json");
        assert!(Envelope::<Probe>::decode(&bytes).is_err());
        envelope.v = 1;
        let platform = serde_json::to_value(&envelope).expect("json");
        assert!(
            platform["tenant"].is_null(),
            "the platform's records say so"
        );
        assert!(Envelope::<Probe>::decode(b"{not json").is_err());
    }
}
