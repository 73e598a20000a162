//! Cases (docs/cases-activity-audit.md "Cases"; SPEC names only `POST /cases/:id/decide`): `POST
//! /cases` `{type, title, subjectId?, priority = medium, slaHours = 24}` opens one (201), `GET
//! /cases` lists the tenant's newest first (`status` `open` or `decided`, `limit`, `offset`, capped
//! total), `GET /cases/:id` reads one, `POST /cases/:id/decide` `{outcome, comment?}` decides
//! an open one (409 `conflict` once decided). The cases stage, the case's single writer, applies
//! each change.

use chrono::Utc;
use http::{Response, StatusCode};
use serde::Deserialize;
use service::http::{Body, response};
use topics::cases::{Decide, Open, Opening, Outcome, Priority};
use topics::definitions::{MAX_CASE_TITLE_CHARS, MAX_SLA_HOURS, is_key};
use uuid::Uuid;

use crate::body;
use crate::call::Call;
use crate::commands;
use crate::comment;
use crate::error::{Error, Issue, Location};
use crate::path;
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OpenBody {
    #[serde(rename = "type")]
    case_type: String,
    title: String,
    #[serde(default, deserialize_with = "body::given")]
    subject_id: Option<body::Id>,
    #[serde(default = "medium")]
    priority: Priority,
    #[serde(default = "a_day", deserialize_with = "body::whole")]
    sla_hours: u32,
}

fn medium() -> Priority {
    Priority::Medium
}

fn a_day() -> u32 {
    24
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DecideBody {
    outcome: Outcome,
    #[serde(default)]
    comment: Option<String>,
}

pub(crate) async fn open(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let opened: OpenBody = call.json().await?;
    let mut issues = Vec::new();
    if !is_key(&opened.case_type) {
        let message = "must be 1 to 100 lowercase letters, digits, '_' or '-', starting with a letter or digit";
        issues.push(Issue::new(Location::Body, "/type", message));
    }
    let title_chars = opened.title.trim().chars().count();
    if title_chars == 0 || opened.title.chars().count() > MAX_CASE_TITLE_CHARS {
        let message = format!("must be 1 to {MAX_CASE_TITLE_CHARS} characters, not all blank");
        issues.push(Issue::new(Location::Body, "/title", message));
    }
    if !(1..=MAX_SLA_HOURS).contains(&opened.sla_hours) {
        let message = format!("must be from 1 to {MAX_SLA_HOURS}");
        issues.push(Issue::new(Location::Body, "/slaHours", message));
    }
    if !issues.is_empty() {
        return Err(Error::Validation(issues));
    }
    let command = Open {
        case_id: Uuid::now_v7(),
        opening: Opening {
            case_type: opened.case_type,
            title: opened.title,
            subject_id: opened.subject_id.map(|id| id.0),
            priority: opened.priority,
            sla_due_at: Utc::now() + chrono::Duration::hours(i64::from(opened.sla_hours)),
        },
    };
    let case = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::CREATED, &case))
}

pub(crate) async fn decide(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, id) = (call.state, call.origin(), call.param("id"));
    let case_id = path::id("id", id)?;
    let tenant = readers::Tenant::new(origin.caller.tenant);
    // A case of another tenant (or none) is 404 here, before anything is sent.
    readers::cases::get(&state.reads.pool, tenant, case_id)
        .await?
        .ok_or(Error::NotFound)?;
    let DecideBody { outcome, comment } = call.json().await?;
    comment::check(comment.as_deref())?;
    let command = Decide {
        case_id,
        outcome,
        comment,
    };
    let case = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::OK, &case))
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id) = (call.state, call.principal, call.param("id"));
    let case_id = path::id("id", id)?;
    let tenant = readers::Tenant::new(principal.tenant);
    let case = readers::cases::get(&state.reads.pool, tenant, case_id)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &case))
}

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let open = match query.one("status").as_deref() {
        None => None,
        Some("open") => Some(true),
        Some("decided") => Some(false),
        Some(_) => {
            query.reject("status", "must be open or decided");
            None
        }
    };
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = readers::cases::list(&state.reads.pool, tenant, open, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}
