//! The scheduled audit export (docs/cases-activity-audit.md "The audit log"): `GET
//! /audit-exports/schedule` (`audit:read`; the defaults until set), `PUT /audit-exports/schedule`
//! `{enabled, intervalHours = 24, format = ndjson}` (`audit:export`, admins; through the
//! settings stage like the other tenant-wide settings) and `GET /audit-exports/runs` (`audit:read`):
//! each window written to object storage, or why it was not.

use http::{Response, StatusCode};
use readers::audit_exports;
use serde::Deserialize;
use service::http::{Body, response};
use topics::settings::ExportFormat;
use topics::settings::{AuditExportSchedule, SetAuditExportSchedule};

use crate::body;
use crate::call::Call;
use crate::commands;
use crate::error::{Error, Location};
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

/// The longest window a file covers: a week.
const MAX_INTERVAL_HOURS: i32 = 168;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScheduleBody {
    enabled: bool,
    #[serde(default = "a_day", deserialize_with = "body::whole")]
    interval_hours: i32,
    #[serde(default = "ndjson")]
    format: ExportFormat,
}

fn a_day() -> i32 {
    24
}

fn ndjson() -> ExportFormat {
    ExportFormat::Ndjson
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal) = (call.state, call.principal);
    let tenant = readers::Tenant::new(principal.tenant);
    let schedule = audit_exports::schedule(&state.reads.pool, tenant)
        .await?
        .unwrap_or_else(AuditExportSchedule::unset);
    Ok(response::json(StatusCode::OK, &schedule))
}

pub(crate) async fn put(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let body: ScheduleBody = call.json().await?;
    if !(1..=MAX_INTERVAL_HOURS).contains(&body.interval_hours) {
        let message = format!("must be from 1 to {MAX_INTERVAL_HOURS}");
        return Err(Error::validation(Location::Body, "/intervalHours", message));
    }
    let command = SetAuditExportSchedule {
        enabled: body.enabled,
        interval_hours: body.interval_hours,
        format: body.format,
    };
    let stored = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::OK, &stored))
}

pub(crate) async fn runs(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = audit_exports::runs(&state.reads.pool, tenant, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}
