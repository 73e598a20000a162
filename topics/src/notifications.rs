//! Read marks of the tenant's notifications (README "Notifications"), on
//! [`catalogue::NOTIFICATIONS`], keyed by tenant: a reader marks some, or every one they can
//! see up to a moment, read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Message, Topic, catalogue};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// `reader` has read the tenant's notifications `ids` (those it can see).
    MarkRead {
        reader: String,
        admin: bool,
        ids: Vec<Uuid>,
    },
    /// `reader` has read every notification it can see created up to `until`.
    MarkAllRead {
        reader: String,
        admin: bool,
        until: DateTime<Utc>,
    },
}

/// How many notifications became read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marked {
    pub marked: i64,
}

impl Message for Command {
    const TOPIC: Topic = catalogue::NOTIFICATIONS;
    const VERSION: u16 = 1;
    type Answer = Marked;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
}
