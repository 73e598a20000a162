//! Call outcomes that move an app's circuit (SPEC §3.7), from the runs stage to the circuits
//! stage, keyed by tenant and app so each circuit has one writer. Only outcomes that can move a
//! circuit travel: a failure that counts, a success after failures, a trial's result.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::command::one_command;
use crate::labels::labels;
use crate::{Command, catalogue};

/// How a call that ran the module went, for its app's circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// `timeout`, `trapped`, `bad_output`, `invalid_module`, `missing_export` (SPEC §7).
    Failure,
    /// The call succeeded (or answered `pending`).
    Success,
    /// Neither (the module answered an error): moves nothing but a trial.
    Neutral,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A call of `app` ended; `trial`: it was the half-open circuit's trial call.
    CallEnded {
        app: String,
        verdict: Verdict,
        trial: bool,
    },
}

labels! {
    /// Where an app's circuit stands (SPEC §3.7).
    pub enum CircuitState {
        Closed = "closed",
        Open = "open",
        HalfOpen = "half_open",
    }
}

/// What a call's outcome left of its app's circuit: the answer to an [`Event`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Circuit {
    pub state: CircuitState,
    /// Consecutive failures counted.
    pub failures: i32,
}

impl Command for Event {
    type Body = Event;
    type Reply = Circuit;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        let Event::CallEnded { app, .. } = self;
        catalogue::tenant_app_key(tenant, app)
    }
}

one_command!(Event on catalogue::CIRCUITS, version 1, replies 1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_keyed_by_tenant_and_app() {
        let tenant = Uuid::now_v7();
        let ended = Event::CallEnded {
            app: "kyc".into(),
            verdict: Verdict::Failure,
            trial: false,
        };
        assert_eq!(
            ended.key(Some(tenant)),
            format!("{tenant}/kyc").into_bytes()
        );
    }
}
