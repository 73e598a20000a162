//! One file per resource; each handler takes what it needs and returns a response or an
//! [`crate::error::Error`].

pub(crate) mod activity;
pub(crate) mod app_approvals;
pub(crate) mod app_call_documents;
pub(crate) mod app_callbacks;
pub(crate) mod app_install;
pub(crate) mod app_invocations;
pub(crate) mod app_modules;
pub(crate) mod app_secrets;
pub(crate) mod app_test;
pub(crate) mod app_uploads;
pub(crate) mod app_versions;
pub(crate) mod approval_decisions;
pub(crate) mod approval_detail;
pub(crate) mod approval_settings;
pub(crate) mod approvals;
pub(crate) mod apps;
pub(crate) mod apps_health;
pub(crate) mod audit_events;
pub(crate) mod audit_export;
pub(crate) mod audit_export_schedule;
pub(crate) mod backtests;
pub(crate) mod cases;
pub(crate) mod collection_submissions;
pub(crate) mod definitions;
pub(crate) mod documents;
pub(crate) mod notifications;
pub(crate) mod openapi;
pub(crate) mod users;
pub(crate) mod webhook_deliveries;
pub(crate) mod webhook_endpoints;
pub(crate) mod webhook_event_types;
pub(crate) mod webhooks;
pub(crate) mod workflow_runs;
