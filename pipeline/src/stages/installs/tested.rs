//! `RecordTest`: the audit row `app.tested` of a test call (SPEC §4.7 rule 7), the only record
//! a test call leaves: the action, how it ended and how long it took, never its input or
//! output.

use async_trait::async_trait;
use serde_json::json;
use topics::installs::RecordTest;
use topics::{Applied, Apply, Outcome};

use super::InstallsStage;
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::Context;

#[async_trait]
impl Apply<RecordTest, Context> for InstallsStage {
    async fn apply(&self, cx: &mut Context, test: &RecordTest) -> Result<Applied<()>, Error> {
        let event = AuditEvent {
            action: "app.tested",
            subject_type: "app_install",
            subject_id: test.name.clone(),
            payload: json!({
                "app": test.name,
                "versionId": test.version_id,
                "action": test.action,
                "status": test.status,
                "durationMs": test.duration_ms,
            }),
        };
        cx.audit(event);
        Ok(Outcome::done(()).into())
    }
}
