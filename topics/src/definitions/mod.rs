//! Versioned definitions (SPEC §1: `workflow`, `rule`, `rule_set`, `collection_flow`) and the
//! commands that write them, on [`catalogue::DEFINITIONS`], keyed by tenant, kind and key: one
//! writer numbers a key's versions and decides which one is published.
//!
//! SPEC does not show definition bodies beyond what app calls need; these are the smallest
//! bodies that make app calls happen as SPEC describes (docs/definitions-and-runs.md):
//! - a workflow is a list of [`Step`]s: `call_app` and `rule_set`;
//! - a rule is a [`Rule`]: an app rule (`type: app`) or a comparison of the data (`type: field`);
//! - a rule set is a list of rules (inline, or `{rule: key}` naming a published rule);
//! - a collection flow names the workflow its submissions run (`workflow`).
//!
//! The bodies are read and checked in [`body`], and rules decide in [`rules`]; this module
//! holds the commands, what they answer (a version, a request, a comment), and the kind and
//! decision labels.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;
use crate::labels::labels;

labels! {
    /// The kind of a definition.
    pub enum Kind {
        Workflow = "workflow",
        Rule = "rule",
        RuleSet = "rule_set",
        CollectionFlow = "collection_flow",
    }
}

mod body;
pub mod rules;

pub use body::*;

topic_commands! {
    /// Commands of a definition key. The approval commands name the key of the request too, so
    /// a request is decided by its key's single writer: an approve racing a withdraw has one
    /// winner.
    pub enum DefinitionsCommand on catalogue::DEFINITIONS, version 1, replies 2,
        keyed |command, tenant| definition_key(tenant, command.kind, &command.key);
    {
        CreateVersion => Version,
        Publish => PublishReply,
        Decide => ApprovalRequest,
        #[serde(rename = "comment")]
        AddComment => Comment,
    }
}

/// The key of one definition's commands: the tenant's (or the platform's) kind and key.
fn definition_key(tenant: Option<Uuid>, kind: Kind, key: &str) -> Vec<u8> {
    let tenant = tenant.map_or_else(|| "platform".to_owned(), |t| t.to_string());
    format!("{tenant}/{}/{key}", kind.as_str()).into_bytes()
}

/// A new version (the next number), not yet published. The API has read `body` as `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateVersion {
    pub kind: Kind,
    pub key: String,
    pub body: Value,
}

/// Publishes `version`: it becomes the key's published version, or, when the tenant's approval
/// settings require it for the kind, an approval request opens (`comment` is the request's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Publish {
    pub kind: Kind,
    pub key: String,
    pub version: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Decides the key's open request `approval`; answers the request as decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decide {
    pub kind: Kind,
    pub key: String,
    pub approval: Uuid,
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Adds to the discussion of `approval`; answers the comment added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddComment {
    pub kind: Kind,
    pub key: String,
    pub approval: Uuid,
    pub body: String,
}

labels! {
    /// How an approval request is decided (SPEC §3.4).
    pub enum Decision {
        /// Publishes the version (not by the requester under four-eyes).
        Approved = "approved",
        Rejected = "rejected",
        /// The requester's (or an approver's) taking it back; the API checked who may.
        Withdrawn = "withdrawn",
    }
}

/// A version of a definition as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub kind: Kind,
    pub key: String,
    pub version: i32,
    pub body: Value,
    /// This version is the key's published one.
    pub published: bool,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// When it was last made the published version.
    pub published_at: Option<DateTime<Utc>>,
    pub published_by: Option<String>,
}

/// An approval request of a definition version (SPEC §2.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub kind: Kind,
    pub key: String,
    pub version: i32,
    /// The requester's subject.
    pub requested_by: String,
    pub requested_by_name: String,
    pub requested_at: DateTime<Utc>,
    pub comment: Option<String>,
    pub decided_by: Option<String>,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    /// `null` while open.
    pub decision: Option<Decision>,
    pub decision_comment: Option<String>,
}

/// A comment on an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub id: Uuid,
    pub author_id: String,
    pub author_name: String,
    pub body: String,
    pub created_at: DateTime<Utc>,
}

/// What a publish came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PublishReply {
    /// The version is the key's published one.
    Published(Published),
    /// An approval request opened instead.
    Requested(Box<Requested>),
}

/// A version published, with what the checks of its app calls and references found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Published {
    pub definition: Version,
    pub warnings: Vec<Finding>,
}

/// A publish that waits for approval: the request, the version, what its checks found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requested {
    pub approval: ApprovalRequest,
    pub definition: Version,
    pub warnings: Vec<Finding>,
}

/// One thing a publish check found, at a JSON Pointer into the body: a warning beside a
/// published version (`unknown_app`, `app_disabled`, ...), or an issue of a refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub code: String,
    pub path: String,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_added_comment_travels_as_the_comment_it_always_was() {
        let tenant = Some(Uuid::from_u128(1));
        let comment = DefinitionsCommand::from(AddComment {
            kind: Kind::Rule,
            key: "score".into(),
            approval: Uuid::from_u128(2),
            body: "looks right".into(),
        });
        let wire = serde_json::to_value(&comment).expect("serialises");
        assert_eq!(wire["type"], "comment");
        assert_eq!(
            serde_json::from_value::<DefinitionsCommand>(wire).expect("reads back"),
            comment
        );
        let publish = DefinitionsCommand::from(Publish {
            kind: Kind::Rule,
            key: "score".into(),
            version: 2,
            comment: None,
        });
        assert_eq!(
            crate::Message::key(&comment, tenant),
            crate::Message::key(&publish, tenant)
        );
    }
}
