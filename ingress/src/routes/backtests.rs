//! Backtests (SPEC §2.7, §3.5; docs/definitions-and-runs.md "Backtests"; SPEC shows no route):
//! `POST /backtests` names one version, `{ruleKey, ruleVersion}`, `{ruleSetKey, ruleSetVersion}` or
//! `{workflowKey, workflowVersion}`, and `sample {lastDays 1-180 = 30, limit 1-5000 = 1000}`,
//! and answers 202 with the backtest `queued` (404 for a version that does not exist);
//! `GET /backtests` lists the tenant's newest first (filters `ruleKey`, `ruleSetKey`,
//! `workflowKey`, `version`, `status`); `GET /backtests/:id` reads one, its `progress` moving
//! while it runs. The backtests stage records it, then runs it.

use http::{Response, StatusCode};
use serde::Deserialize;
use service::http::{Body, response};
use topics::backtests::{Sample, Start, Target};
use topics::definitions::is_key;
use uuid::Uuid;

use crate::body;
use crate::call::Call;
use crate::commands;
use crate::error::{Error, Issue, Location};
use crate::path;
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

const LAST_DAYS: (i64, i64, i64) = (1, 180, 30);
const LIMIT: (i64, i64, i64) = (1, 5000, 1000);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StartBody {
    #[serde(default, deserialize_with = "body::given")]
    rule_key: Option<String>,
    #[serde(default, deserialize_with = "body::given_whole")]
    rule_version: Option<i64>,
    #[serde(default, deserialize_with = "body::given")]
    rule_set_key: Option<String>,
    #[serde(default, deserialize_with = "body::given_whole")]
    rule_set_version: Option<i64>,
    #[serde(default, deserialize_with = "body::given")]
    workflow_key: Option<String>,
    #[serde(default, deserialize_with = "body::given_whole")]
    workflow_version: Option<i64>,
    #[serde(default, deserialize_with = "body::object")]
    sample: SampleBody,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SampleBody {
    #[serde(default, deserialize_with = "body::given_whole")]
    last_days: Option<i64>,
    #[serde(default, deserialize_with = "body::given_whole")]
    limit: Option<i64>,
}

pub(crate) async fn start(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let started: StartBody = call.json().await?;
    let mut issues = Vec::new();
    let target = target(&started, &mut issues);
    let last_days = bounded(
        started.sample.last_days,
        LAST_DAYS,
        "/sample/lastDays",
        &mut issues,
    );
    let limit = bounded(started.sample.limit, LIMIT, "/sample/limit", &mut issues);
    let Some(target) = target.filter(|_| issues.is_empty()) else {
        return Err(Error::Validation(issues));
    };
    let command = Start {
        backtest_id: Uuid::now_v7(),
        target,
        sample: Sample { last_days, limit },
    };
    let backtest = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::ACCEPTED, &backtest))
}

/// The one version the body names, or the issues that say why not.
fn target(body: &StartBody, issues: &mut Vec<Issue>) -> Option<Target> {
    let named = [
        ("rule", &body.rule_key, body.rule_version),
        ("ruleSet", &body.rule_set_key, body.rule_set_version),
        ("workflow", &body.workflow_key, body.workflow_version),
    ];
    let mut found = None;
    for (name, key, version) in named {
        match (key, version) {
            (None, None) => {}
            (None, Some(_)) => issues.push(Issue::new(
                Location::Body,
                format!("/{name}Version"),
                format!("needs {name}Key"),
            )),
            (Some(key), version) => {
                if !is_key(key) {
                    issues.push(Issue::new(Location::Body, format!("/{name}Key"), KEY_RULE));
                }
                let version = match version.map(i32::try_from) {
                    Some(Ok(version)) if version > 0 => Some(version),
                    _ => {
                        let message = "a version (an integer from 1) is required with the key";
                        issues.push(Issue::new(
                            Location::Body,
                            format!("/{name}Version"),
                            message,
                        ));
                        None
                    }
                };
                if found.is_some() {
                    let message = "name one version: a rule, a rule set or a workflow";
                    issues.push(Issue::new(Location::Body, format!("/{name}Key"), message));
                }
                found = Some((name, key.clone(), version));
            }
        }
    }
    let Some((name, key, version)) = found else {
        let message = "name a version: ruleKey, ruleSetKey or workflowKey, with its version";
        issues.push(Issue::new(Location::Body, "", message));
        return None;
    };
    let version = version?;
    Some(match name {
        "rule" => Target::Rule { key, version },
        "ruleSet" => Target::RuleSet { key, version },
        _ => Target::Workflow { key, version },
    })
}

const KEY_RULE: &str =
    "must be 1 to 100 lowercase letters, digits, '_' or '-', starting with a letter or digit";

/// `value` within `(min, max)`, `default` when absent.
fn bounded(
    value: Option<i64>,
    (min, max, default): (i64, i64, i64),
    path: &str,
    issues: &mut Vec<Issue>,
) -> i32 {
    let value = value.unwrap_or(default);
    if !(min..=max).contains(&value) {
        issues.push(Issue::new(
            Location::Body,
            path,
            format!("must be from {min} to {max}"),
        ));
        return default as i32;
    }
    value as i32
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id) = (call.state, call.principal, call.param("id"));
    let backtest_id = path::id("id", id)?;
    let tenant = readers::Tenant::new(principal.tenant);
    let backtest = readers::backtests::get(&state.reads.pool, tenant, backtest_id)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &backtest))
}

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let mut filter = readers::backtests::Filter::default();
    for (name, kind) in [
        ("ruleKey", "rule"),
        ("ruleSetKey", "rule_set"),
        ("workflowKey", "workflow"),
    ] {
        if let Some(key) = query.one(name) {
            if !is_key(&key) {
                query.reject(name, KEY_RULE);
            }
            if filter.kind.is_some() {
                query.reject(name, "name one of ruleKey, ruleSetKey and workflowKey");
            }
            filter.kind = Some(kind.to_owned());
            filter.key = Some(key.into_owned());
        }
    }
    let version = query.integer("version", 1, i64::from(i32::MAX), 0);
    filter.version = (version > 0).then_some(version as i32);
    filter.status = match query.one("status").as_deref() {
        None => None,
        Some(status @ ("queued" | "running" | "completed" | "failed")) => Some(status.to_owned()),
        Some(_) => {
            query.reject("status", "must be queued, running, completed or failed");
            None
        }
    };
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = readers::backtests::list(&state.reads.pool, tenant, &filter, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}
