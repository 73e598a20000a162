//! Read marks of the tenant's notifications (docs/outbound-webhooks.md "Notifications"), on
//! [`catalogue::NOTIFICATIONS`], keyed by tenant: a reader marks some, or every one they can
//! see up to a moment, read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::command::topic_commands;
use crate::{Command, catalogue};

topic_commands! {
    /// The read marks of a tenant's notifications.
    pub enum NotificationsCommand on catalogue::NOTIFICATIONS, version 1, replies 1 {
        MarkRead,
        MarkAllRead,
    }
}

/// `reader` has read the tenant's notifications `ids` (those it can see).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkRead {
    pub reader: String,
    pub admin: bool,
    pub ids: Vec<Uuid>,
}

impl Command for MarkRead {
    type Body = NotificationsCommand;
    type Reply = Marked;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
}

/// `reader` has read every notification it can see created up to `until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkAllRead {
    pub reader: String,
    pub admin: bool,
    pub until: DateTime<Utc>,
}

impl Command for MarkAllRead {
    type Body = NotificationsCommand;
    type Reply = Marked;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
}

/// How many notifications became read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marked {
    pub marked: i64,
}
