//! Every topic of the platform: its name, partition count and how messages are keyed. The key
//! decides the partition, and one partition has one consumer, so each key has a single writer.
//!
//! A partition is the unit of concurrency: the consumer runs one lane per partition, in order
//! within it, so a topic's partition count bounds how many of its commands apply at once.
//! Topics are created with these counts (and the configured replication) when absent
//! ([`crate::admin`]); Kafka cannot take partitions away, and adding some moves keys to other
//! partitions, so an existing topic keeps what it has.

use uuid::Uuid;

/// How a topic's messages are keyed: the aggregate whose commands must apply in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicKey {
    /// `tenant/app-name` (`platform/app-name` for the platform's own versions): app versions,
    /// installs, circuits (and the tenant-wide settings a 0.1 ingress still writes here, keyed by
    /// the tenant alone).
    TenantApp,
    /// `tenant/kind/key`: a definition's versions.
    Definition,
    /// The workflow run.
    Run,
    /// `tenant/subject`: a subject's documents.
    Subject,
    /// The callback session.
    CallbackSession,
    /// The case.
    Case,
    /// The backtest.
    Backtest,
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
}

pub const APPS: Topic = Topic {
    name: "apps.commands",
    partitions: 2,
    key: TopicKey::TenantApp,
    carries: "upload, publish, approve, reject and withdraw of app versions; the platform catalogue",
};

pub const SETTINGS: Topic = Topic {
    name: "settings.commands",
    partitions: 2,
    key: TopicKey::Tenant,
    carries: "the tenant-wide settings: what publishing needs (approvals), the scheduled audit export",
};

pub const INSTALLS: Topic = Topic {
    name: "installs.commands",
    partitions: 4,
    key: TopicKey::TenantApp,
    carries: "install, configure, uninstall, secrets, test calls",
};

pub const DEFINITIONS: Topic = Topic {
    name: "definitions.commands",
    partitions: 2,
    key: TopicKey::Definition,
    carries: "new versions of workflows, rules, rule sets and collection flows; publishing",
};

pub const RUNS: Topic = Topic {
    name: "runs.commands",
    partitions: 4,
    key: TopicKey::Run,
    carries: "workflow runs: start, cancel, and the timers that resume them; their app calls",
};

pub const CASES: Topic = Topic {
    name: "cases.commands",
    partitions: 2,
    key: TopicKey::Case,
    carries: "cases opened and decided, and their SLA deadlines passing",
};

pub const BACKTESTS: Topic = Topic {
    name: "backtests.commands",
    partitions: 2,
    key: TopicKey::Backtest,
    carries: "backtests requested (each then run by one pipeline worker under a lease)",
};

pub const WEBHOOK_ENDPOINTS: Topic = Topic {
    name: "webhook_endpoints.commands",
    partitions: 2,
    key: TopicKey::Tenant,
    carries: "tenants' webhook endpoints created, changed, rotated and deleted; deliveries retried by hand",
};

/// [`WEBHOOK_ENDPOINTS`] under the name it had until 0.2 (`endpoints.commands`): ingresses of
/// the release before write there while a deployment switches (the pipelines upgrade first),
/// and the webhook endpoints stage applies what they wrote from there too. Goes in the release
/// after.
pub const FORMER_ENDPOINTS: Topic = Topic {
    name: "endpoints.commands",
    partitions: 2,
    key: TopicKey::Tenant,
    carries: "webhook_endpoints.commands under its name until 0.2, for ingresses of 0.1 while a deployment switches",
};

pub const NOTIFICATIONS: Topic = Topic {
    name: "notifications.commands",
    partitions: 2,
    key: TopicKey::Tenant,
    carries: "notifications marked read",
};

pub const DOCUMENTS: Topic = Topic {
    name: "documents.commands",
    partitions: 2,
    key: TopicKey::Subject,
    carries: "documents added to a subject",
};

/// The webhook route answers once an event is on the log, not once it is applied; the stage
/// applies a partition's queued events as one transaction, so four lanes take thousands of
/// events a second.
pub const CALLBACKS: Topic = Topic {
    name: "callbacks.events",
    partitions: 4,
    key: TopicKey::CallbackSession,
    carries: "vendor webhook events completing asynchronous calls",
};

pub const CIRCUITS: Topic = Topic {
    name: "circuits.events",
    partitions: 12,
    key: TopicKey::TenantApp,
    carries: "call outcomes that open and close an app's circuit",
};

pub const OUTBOUND: Topic = Topic {
    name: "outbound.events",
    partitions: 4,
    key: TopicKey::Tenant,
    carries: "outbound webhook events and notifications (SPEC §6.2), from the outbox",
};

pub const TIMERS: Topic = Topic {
    name: "timers.events",
    partitions: 12,
    key: TopicKey::CallbackSession,
    carries: "callback deadlines that fire",
};

pub const DEAD_LETTER: Topic = Topic {
    name: "dead-letter",
    partitions: 3,
    key: TopicKey::Original,
    carries: "messages a stage could never apply, with the reason in headers",
};

/// The whole catalogue, created at start-up when absent.
pub const ALL: &[Topic] = &[
    APPS,
    SETTINGS,
    INSTALLS,
    DEFINITIONS,
    RUNS,
    CASES,
    BACKTESTS,
    WEBHOOK_ENDPOINTS,
    FORMER_ENDPOINTS,
    NOTIFICATIONS,
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

/// Key of a `Tenant` topic, and of a tenant-wide record on a `TenantApp` topic (no `/`, so never
/// an app's key).
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
