//! Every topic of the platform: its name, partition count and how messages are keyed. The key
//! decides the partition, and one partition has one consumer, so each key has a single writer.
//!
//! A partition is the unit of concurrency (the consumer runs one lane per partition), and also
//! what an idle consumer costs: tansu answers each fetch with a pass over every assigned
//! partition (two queries of its Postgres each), every `fetch.wait.max.ms`. The admin command
//! topics therefore have few: four lanes for installs carry 500 a second, two for the versions'
//! lifecycle (uploads and publishes are rare), where twelve each cost three times as much at
//! rest (BENCHMARKS.md, "Installs through the write path"). For the same reason a topic no
//! route waits on is fetched fifty times less often ([`Topic::fetch_wait`]).

use std::time::Duration;

use uuid::Uuid;

/// The fetch wait of a topic whose messages someone waits on (a route answering with the
/// command's reply): tansu holds every fetch this long
/// even when data arrives meanwhile, so it is what each hop adds to the answer (librdkafka's
/// 500 ms made a command's produce-to-apply ~400 ms; 10 ms makes it ~25 ms).
const AWAITED: Duration = Duration::from_millis(10);

/// The fetch wait of a topic no caller waits on: an idle consumer costs a pass over each of its
/// partitions every fetch, so these pay a fiftieth of it and their messages up to half a second.
const UNAWAITED: Duration = Duration::from_millis(500);

/// How a topic's messages are keyed: the aggregate whose commands must apply in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicKey {
    /// `tenant/app-name` (`platform/app-name` for the platform's own versions): app versions,
    /// installs, circuits. A tenant-wide setting is keyed by the tenant alone.
    TenantApp,
    /// `tenant/kind/key`: a definition's versions.
    Definition,
    /// The workflow run.
    Run,
    /// `tenant/subject`: a subject's documents.
    Subject,
    /// The callback session.
    CallbackSession,
    /// The tenant (`platform` for the platform's own).
    Tenant,
    /// The message's original key, kept when dead-lettered.
    Original,
}

/// A topic of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topic {
    pub name: &'static str,
    pub partitions: i32,
    pub key: TopicKey,
    /// What travels on it, for operators.
    pub carries: &'static str,
    /// How long the broker may hold its consumers' fetches: 10 ms when someone waits on its
    /// messages, 500 ms when no one does (the module doc says why).
    pub fetch_wait: Duration,
}

pub const APPS: Topic = Topic {
    name: "apps.commands",
    partitions: 2,
    key: TopicKey::TenantApp,
    carries: "upload, publish, approve, reject and withdraw of app versions; the platform catalogue; approval settings",
    fetch_wait: AWAITED,
};

pub const INSTALLS: Topic = Topic {
    name: "installs.commands",
    partitions: 4,
    key: TopicKey::TenantApp,
    carries: "install, configure, uninstall, secrets, test calls",
    fetch_wait: AWAITED,
};

pub const DEFINITIONS: Topic = Topic {
    name: "definitions.commands",
    partitions: 2,
    key: TopicKey::Definition,
    carries: "new versions of workflows, rules, rule sets and collection flows; publishing",
    fetch_wait: AWAITED,
};

pub const RUNS: Topic = Topic {
    name: "runs.commands",
    partitions: 4,
    key: TopicKey::Run,
    carries: "workflow runs: start, cancel, and the timers that resume them; their app calls",
    fetch_wait: AWAITED,
};

pub const DOCUMENTS: Topic = Topic {
    name: "documents.commands",
    partitions: 2,
    key: TopicKey::Subject,
    carries: "documents added to a subject",
    fetch_wait: AWAITED,
};

/// The webhook route answers once an event is on the log, not once it is applied, and a run
/// resumed half a second later than it could be is nothing beside a vendor's minutes: so the
/// unawaited wait, which costs the broker nothing at rest. Under a burst each fetch still
/// carries up to a megabyte per partition, so four lanes take thousands of events a second.
pub const CALLBACKS: Topic = Topic {
    name: "callbacks.events",
    partitions: 4,
    key: TopicKey::CallbackSession,
    carries: "vendor webhook events completing asynchronous calls",
    fetch_wait: UNAWAITED,
};

pub const CIRCUITS: Topic = Topic {
    name: "circuits.events",
    partitions: 12,
    key: TopicKey::TenantApp,
    carries: "call outcomes that open and close an app's circuit",
    fetch_wait: UNAWAITED,
};

pub const OUTBOUND: Topic = Topic {
    name: "outbound.events",
    partitions: 4,
    key: TopicKey::Tenant,
    carries: "outbound webhook events and notifications (SPEC §6.2), from the outbox",
    fetch_wait: UNAWAITED,
};

pub const TIMERS: Topic = Topic {
    name: "timers.events",
    partitions: 12,
    key: TopicKey::CallbackSession,
    carries: "callback deadlines that fire",
    fetch_wait: UNAWAITED,
};

pub const DEAD_LETTER: Topic = Topic {
    name: "dead-letter",
    partitions: 3,
    key: TopicKey::Original,
    carries: "messages a stage could never apply, with the reason in headers",
    fetch_wait: UNAWAITED,
};

/// The whole catalogue, created at start-up when absent.
pub const ALL: &[Topic] = &[
    APPS,
    INSTALLS,
    DEFINITIONS,
    RUNS,
    DOCUMENTS,
    CALLBACKS,
    CIRCUITS,
    OUTBOUND,
    TIMERS,
    DEAD_LETTER,
];

/// Key of a `TenantApp` topic: the tenant's app, or the platform's (`None`).
pub fn tenant_app_key(tenant: Option<Uuid>, app_name: &str) -> Vec<u8> {
    match tenant {
        Some(tenant) => format!("{tenant}/{app_name}").into_bytes(),
        None => format!("platform/{app_name}").into_bytes(),
    }
}

/// Key of a tenant-wide record on a `TenantApp` topic (no `/`, so never an app's key).
pub fn tenant_key(tenant: Option<Uuid>) -> Vec<u8> {
    match tenant {
        Some(tenant) => tenant.to_string().into_bytes(),
        None => b"platform".to_vec(),
    }
}

/// Key of a `Subject` topic: the tenant's subject.
pub fn tenant_subject_key(tenant: Option<Uuid>, subject: Uuid) -> Vec<u8> {
    match tenant {
        Some(tenant) => format!("{tenant}/{subject}").into_bytes(),
        None => format!("platform/{subject}").into_bytes(),
    }
}

/// Key of a topic keyed by one id (run, callback session).
pub fn id_key(id: Uuid) -> Vec<u8> {
    id.as_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_partitions_positive() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(a.partitions > 0, "{}", a.name);
            for b in &ALL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }

    #[test]
    fn tenant_app_keys_differ_per_tenant_and_app() {
        let t1 = Some(Uuid::from_u128(1));
        let t2 = Some(Uuid::from_u128(2));
        assert_ne!(tenant_app_key(t1, "kyc"), tenant_app_key(t2, "kyc"));
        assert_ne!(tenant_app_key(t1, "kyc"), tenant_app_key(t1, "aml"));
        assert_eq!(tenant_app_key(t1, "kyc"), tenant_app_key(t1, "kyc"));
        assert_eq!(tenant_app_key(None, "kyc"), b"platform/kyc");
        assert_ne!(tenant_key(t1), tenant_app_key(t1, ""));
    }
}
