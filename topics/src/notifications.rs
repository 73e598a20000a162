//! Read marks of the tenant's notifications (docs/outbound-webhooks.md "Notifications"), on
//! [`catalogue::NOTIFICATIONS`], keyed by tenant: a reader marks some, or every one they can
//! see up to a moment, read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;

topic_commands! {
    /// The read marks of a tenant's notifications.
    pub enum NotificationsCommand on catalogue::NOTIFICATIONS, version 1, replies 1,
        keyed |_command, tenant| catalogue::tenant_key(tenant);
    {
        MarkRead => Marked,
        MarkAllRead => Marked,
    }
}

/// `reader` has read the tenant's notifications `ids` (those it can see).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkRead {
    pub reader: String,
    pub admin: bool,
    pub ids: Vec<Uuid>,
}

/// `reader` has read every notification it can see created up to `until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkAllRead {
    pub reader: String,
    pub admin: bool,
    pub until: DateTime<Utc>,
}

/// How many notifications became read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marked {
    pub marked: i64,
}
