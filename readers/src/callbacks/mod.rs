//! App callback sessions (SPEC §2.3): the list `GET /app-callbacks` answers ([`list`]), what
//! the vendor webhook routes look up before any module code runs ([`webhook`]), and the session
//! an applicant continues with the vendor ([`handoff`]); both find a [`Target`], and the version
//! that started it ([`crate::apps::stored_version`]).

pub mod handoff;
mod list;
mod target;
mod total;
pub mod webhook;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

pub use list::{Filter, list};
pub use target::Target;
/// Where a callback session stands (SPEC §2.3), as the stage writes it.
pub use topics::callbacks::SessionStatus;

use crate::redaction::{Visibility, redact_text, redact_values};

/// One session as the list answers it (SPEC §2.3).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub app_name: String,
    pub version_id: Uuid,
    pub action: String,
    pub external_id: String,
    pub workflow_run_id: Option<Uuid>,
    pub step_id: Option<String>,
    pub status: String,
    pub output: Option<Value>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

impl Session {
    /// The session as a caller with `visibility` sees it: without `runs:context` every value
    /// inside `output` and the error are `[redacted]`.
    pub fn seen_with(self, visibility: Visibility) -> Self {
        match visibility {
            Visibility::Full => self,
            Visibility::Redacted => Session {
                output: self.output.map(redact_values),
                error: redact_text(self.error),
                ..self
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn without_runs_context_output_values_and_the_error_are_redacted_keys_kept() {
        let session = Session {
            id: Uuid::now_v7(),
            tenant_id: Uuid::now_v7(),
            app_name: "kyc".into(),
            version_id: Uuid::now_v7(),
            action: "verify".into(),
            external_id: "s-1".into(),
            workflow_run_id: None,
            step_id: None,
            status: "failed".into(),
            output: Some(json!({"verified": false, "checks": [{"name": "Ada"}]})),
            error: Some("declined: passport expired".into()),
            created_at: Utc::now(),
            completed_at: None,
        };
        let seen = session.clone().seen_with(Visibility::Redacted);
        assert_eq!(
            seen.output,
            Some(json!({"verified": "[redacted]", "checks": [{"name": "[redacted]"}]}))
        );
        assert_eq!(seen.error.as_deref(), Some("[redacted]"));
        assert_eq!(session.clone().seen_with(Visibility::Full), session);
        for status in ["pending", "completed", "failed", "timed_out"] {
            assert_eq!(
                SessionStatus::parse(status).map(SessionStatus::as_str),
                Some(status)
            );
        }
        assert_eq!(SessionStatus::parse("settled"), None);
    }
}
