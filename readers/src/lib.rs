//! Read models of the platform, used in-process by ingress.
//!
//! Every query takes a [`Tenant`] first: there is no way to read a record without naming the
//! tenant that owns it, and another tenant's record is simply absent.

pub mod activity;
pub mod approval_settings;
pub mod approvals;
pub mod apps;
pub mod audit;
pub mod audit_exports;
pub mod backtests;
pub mod callbacks;
pub mod cases;
pub mod definitions;
pub mod documents;
pub mod error;
pub mod invocations;
pub mod notifications;
pub mod page;
pub mod redaction;
mod row;
pub mod runs;
pub mod submissions;
pub mod tenant;
pub mod users;
pub mod webhook_deliveries;
pub mod webhook_endpoints;

pub use error::Error;
pub use page::{ListPage, Page};
pub use tenant::Tenant;
