//! Commands of a subject's documents (docs/documents.md), on [`catalogue::DOCUMENTS`], keyed by
//! tenant and subject. The API stores the bytes in object storage under their sha256 before it
//! produces the command, so the command carries only what the bytes are.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;

/// Largest document: what a call may read (the runner refuses larger ones, SPEC §8).
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

topic_commands! {
    /// The commands of a subject's documents.
    pub enum DocumentsCommand on catalogue::DOCUMENTS, version 1, replies 1,
        keyed |command, tenant| catalogue::tenant_subject_key(tenant, command.subject_id);
    {
        Add => Document,
    }
}

/// A document of `subject_id`, its bytes already stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Add {
    pub document_id: Uuid,
    pub subject_id: Uuid,
    pub name: String,
    pub content_type: String,
    pub size_bytes: u64,
    /// Hex SHA-256 of the bytes: their name in object storage.
    pub sha256: String,
}

/// A document as its routes answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    pub id: Uuid,
    pub subject_id: Uuid,
    pub name: String,
    pub content_type: String,
    pub size_bytes: i64,
    pub sha256: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

/// A document as a call lists it (runner ABI `document_list`).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::Command;

    #[test]
    fn a_subjects_documents_share_a_key() {
        let tenant = Some(Uuid::now_v7());
        let subject = Uuid::now_v7();
        let add = |name: &str| Add {
            document_id: Uuid::now_v7(),
            subject_id: subject,
            name: name.into(),
            content_type: "application/pdf".into(),
            size_bytes: 3,
            sha256: "0".repeat(64),
        };
        assert_eq!(add("a.pdf").key(tenant), add("b.pdf").key(tenant));
        assert_ne!(
            add("a.pdf").key(tenant),
            add("a.pdf").key(Some(Uuid::now_v7()))
        );
        let wire = serde_json::to_value(DocumentsCommand::from(add("a.pdf"))).expect("serialises");
        assert_eq!(wire["type"], "add");
    }
}
