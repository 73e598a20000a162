//! `GET /app-invocations` and `GET /app-invocations/:id` (SPEC 4.3, 4.4).

use bytes::Bytes;
use http::{Response, StatusCode};
use readers::invocations::{self, InvocationFilter, InvocationStatus};
use readers::redaction::Visibility;
use readers::{Page, Tenant};
use uuid::Uuid;

use crate::auth::{Permission, Principal};
use crate::call::Call;
use crate::error::{Error, Location};
use crate::query::{MAX_OFFSET, Query};
use crate::read_cache::Key;
use crate::state::State;
use service::http::{Body, response};

/// Page size when `limit` is absent (SPEC leaves it open; documented in the README).
pub(crate) const DEFAULT_LIMIT: i64 = 50;
/// Largest page.
pub(crate) const MAX_LIMIT: i64 = 500;

pub(crate) fn visibility(principal: &Principal) -> Visibility {
    if principal.has(Permission::RunsContext) {
        Visibility::Full
    } else {
        Visibility::Redacted
    }
}

/// Parses and validates the query of the list route.
pub(crate) fn parse_list_query(raw: Option<&str>) -> Result<(InvocationFilter, Page), Error> {
    let mut query = Query::parse(raw);
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    let offset = query.integer("offset", 0, MAX_OFFSET, 0);
    let workflow_run_id = query.uuid("workflowRunId");
    let app_name = query.app_name("appName");
    let mut statuses = Vec::new();
    for raw in query.all("status") {
        match InvocationStatus::parse(&raw) {
            Some(status) if !statuses.contains(&status) => statuses.push(status),
            Some(_) => {}
            None => query.reject("status", "must be one of success, error, timeout, pending"),
        }
    }
    let from = query.date_time("from");
    let to = query.date_time("to");
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        query.reject("to", "must not be before from");
    }
    query.finish()?;
    Ok((
        InvocationFilter {
            workflow_run_id,
            app_name,
            statuses,
            from,
            to,
        },
        Page { limit, offset },
    ))
}

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let (filter, page) = parse_list_query(raw_query)?;
    let tenant = Tenant::new(principal.tenant);
    let shown = visibility(principal);
    // The query as sent names the answer (it parsed, so it holds nothing else): two spellings
    // of one query are two entries, which costs memory, never correctness.
    let request = format!("invocations:list?{}", raw_query.unwrap_or_default());
    let key = state.reads.cache.key(principal.tenant, shown, request);
    if let Some(answer) = key.as_ref().and_then(|key| state.reads.cache.get(key)) {
        return Ok(response::json_bytes(StatusCode::OK, answer));
    }
    let found = invocations::list(&state.reads.pool, tenant, &filter, page).await?;
    let body = found.map(|record| record.visible_to(shown));
    Ok(cached_json(state, key, &body))
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id) = (call.state, call.principal, call.param("id"));
    let id = Uuid::try_parse(id)
        .map_err(|_| Error::validation(Location::Path, "id", "must be a UUID"))?;
    let tenant = Tenant::new(principal.tenant);
    let shown = visibility(principal);
    let key = state
        .reads
        .cache
        .key(principal.tenant, shown, format!("invocations:get:{id}"));
    if let Some(answer) = key.as_ref().and_then(|key| state.reads.cache.get(key)) {
        return Ok(response::json_bytes(StatusCode::OK, answer));
    }
    let record = invocations::get(&state.reads.pool, tenant, id)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(cached_json(state, key, &record.visible_to(shown)))
}

/// Serialises a 200 answer, keeping it in the read cache under `key` when there is one.
fn cached_json<T: serde::Serialize>(state: &State, key: Option<Key>, value: &T) -> Response<Body> {
    let Ok(bytes) = serde_json::to_vec(value) else {
        return response::json(StatusCode::OK, value); // answers the logged 500
    };
    let bytes = Bytes::from(bytes);
    if let Some(key) = key {
        state.reads.cache.insert(key, bytes.clone());
    }
    response::json_bytes(StatusCode::OK, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue_paths(raw: &str) -> Vec<String> {
        match parse_list_query(Some(raw)) {
            Err(Error::Validation(issues)) => issues.into_iter().map(|i| i.path).collect(),
            other => panic!("expected validation error for {raw}, got {other:?}"),
        }
    }

    #[test]
    fn defaults_and_full_filters() {
        let (filter, page) = parse_list_query(None).expect("empty query");
        assert_eq!(
            page,
            Page {
                limit: DEFAULT_LIMIT,
                offset: 0
            }
        );
        assert_eq!(filter, InvocationFilter::default());
        let run = Uuid::new_v4();
        let raw = format!(
            "limit=10&offset=5&workflowRunId={run}&appName=kyc-check&status=error&status=timeout&status=error&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00.5Z"
        );
        let (filter, page) = parse_list_query(Some(&raw)).expect("valid");
        assert_eq!(
            page,
            Page {
                limit: 10,
                offset: 5
            }
        );
        assert_eq!(filter.workflow_run_id, Some(run));
        assert_eq!(filter.app_name.as_deref(), Some("kyc-check"));
        assert_eq!(
            filter.statuses,
            vec![InvocationStatus::Error, InvocationStatus::Timeout]
        );
    }

    #[test]
    fn each_bad_parameter_is_named() {
        assert_eq!(issue_paths("limit=0"), vec!["limit"]);
        assert_eq!(issue_paths("limit=501"), vec!["limit"]);
        assert_eq!(issue_paths("offset=-1"), vec!["offset"]);
        assert_eq!(issue_paths("status=done"), vec!["status"]);
        assert_eq!(issue_paths("from=2026-13-01"), vec!["from"]);
        assert_eq!(issue_paths("to=tomorrow"), vec!["to"]);
        assert_eq!(issue_paths("workflowRunId=123"), vec!["workflowRunId"]);
        assert_eq!(issue_paths("appName=KYC"), vec!["appName"]);
        assert_eq!(
            issue_paths("from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z"),
            vec!["to"]
        );
        assert_eq!(
            issue_paths("limit=x&offset=y&colour=red"),
            vec!["limit", "offset", "colour"]
        );
    }
}
