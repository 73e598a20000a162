//! `svc.workflow.task.failures{tenant, stage, reason}`: what SPEC's runbook calls worker-reported
//! workflow task failures, one of which in five minutes is an alert
//! (`ops/prometheus/alerts.yml`). This worker has no workflow engine replaying history; its
//! equivalents are a command a stage could not apply and parked on the dead-letter topic
//! (`dead_lettered`), and a run whose stored workflow version no longer reads
//! (`version_unreadable`: a change the running code cannot replay against an in-flight run).
//!
//! `tenant` is the command's tenant, `platform` for the platform's own records and `unknown` for
//! a message that does not decode. A redelivered failure may count twice: the alert asks whether
//! any happened, not how many.

use uuid::Uuid;

topics::labels::labels! {
    /// Why a task failed.
    pub(crate) enum Reason {
        DeadLettered = "dead_lettered",
        VersionUnreadable = "version_unreadable",
    }
}

/// Whose task failed, as the `tenant` label says it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Owner {
    /// A decoded command or a run: its tenant, `None` for the platform's records.
    Of(Option<Uuid>),
    /// A message that does not decode.
    Unknown,
}

/// Counts one task failure of `stage`.
pub(crate) fn count(owner: Owner, stage: &'static str, reason: Reason) {
    let tenant = match owner {
        Owner::Of(Some(tenant)) => tenant.to_string(),
        Owner::Of(None) => "platform".to_owned(),
        Owner::Unknown => "unknown".to_owned(),
    };
    metrics::counter!(
        "svc.workflow.task.failures",
        "tenant" => tenant,
        "stage" => stage,
        "reason" => reason.as_str(),
    )
    .increment(1);
}
