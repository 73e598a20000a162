//! `RecordTest`: the audit row `app.tested` of a test call (SPEC §4.7 rule 7), the only record
//! a test call leaves: the action, how it ended and how long it took, never its input or
//! output.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::installs::{Answer, Command};
use topics::{Envelope, Outcome};
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};

/// What the test call did.
#[derive(Debug)]
pub(super) struct Test<'a> {
    pub(super) version_id: Uuid,
    pub(super) action: &'a str,
    pub(super) status: &'a str,
    pub(super) duration_ms: f64,
}

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    name: &str,
    test: Test<'_>,
) -> Result<Outcome<Answer>, Error> {
    let event = AuditEvent {
        action: "app.tested",
        subject_type: "app_install",
        subject_id: name.to_owned(),
        payload: json!({
            "app": name,
            "versionId": test.version_id,
            "action": test.action,
            "status": test.status,
            "durationMs": test.duration_ms,
        }),
    };
    audit::record(tx, command, event).await?;
    Ok(Outcome::done(Answer::TestRecorded))
}
