//! Commands of a subject's documents (README "Documents"), on [`catalogue::DOCUMENTS`], keyed by
//! tenant and subject. The API stores the bytes in object storage under their sha256 before it
//! produces the command, so the command carries only what the bytes are.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Message, Topic, catalogue};

/// Largest document: what a call may read (the runner refuses larger ones, SPEC §8).
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// A document of `subject_id`, its bytes already stored.
    Add {
        document_id: Uuid,
        subject_id: Uuid,
        name: String,
        content_type: String,
        size_bytes: u64,
        /// Hex SHA-256 of the bytes: their name in object storage.
        sha256: String,
    },
}

impl Command {
    pub fn subject_id(&self) -> Uuid {
        match self {
            Command::Add { subject_id, .. } => *subject_id,
        }
    }
}

impl Message for Command {
    const TOPIC: Topic = catalogue::DOCUMENTS;
    const VERSION: u16 = 1;
    /// The document added.
    type Answer = readers::documents::Document;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_subject_key(tenant, self.subject_id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subjects_documents_share_a_key() {
        let tenant = Some(Uuid::now_v7());
        let subject = Uuid::now_v7();
        let add = |name: &str| Command::Add {
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
        let wire = serde_json::to_value(add("a.pdf")).expect("serialises");
        assert_eq!(wire["type"], "add");
    }
}
