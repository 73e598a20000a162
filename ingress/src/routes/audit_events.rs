//! `GET /audit-events` (SPEC §5 `audit:read`; docs/cases-activity-audit.md "The audit log"): the
//! tenant's recorded actions, newest first. Filters: `action` (repeatable), `actor` (a subject),
//! `from` and `to` (inclusive RFC 3339 bounds on `occurredAt`), `limit` (at most 200, default 50),
//! `offset`; `total` stops counting at 100,000 (`totalIsEstimate`).

use http::{Response, StatusCode};
use readers::audit::{self, Filter};
use service::http::{Body, response};

use crate::call::Call;
use crate::error::Error;
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

/// The most `action` values one request names.
const MAX_ACTIONS: usize = 50;
/// The longest action or actor given.
const MAX_VALUE_CHARS: usize = 200;

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let filter = filter(&mut query);
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = audit::list(&state.reads.pool, tenant, &filter, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}

/// The filters the list and the export share; their problems are left in `query`.
pub(super) fn filter(query: &mut Query<'_>) -> Filter {
    let mut actions: Vec<String> = query
        .all("action")
        .into_iter()
        .map(|action| action.into_owned())
        .collect();
    // Counted as given, repeats included: the document's `maxItems` counts them too.
    if actions.len() > MAX_ACTIONS {
        query.reject(
            "action",
            format!("may be given at most {MAX_ACTIONS} times"),
        );
    }
    // An action named twice is one branch, not two (its events would count twice).
    actions.sort();
    actions.dedup();
    if actions
        .iter()
        .any(|a| a.is_empty() || a.chars().count() > MAX_VALUE_CHARS || a.contains('\0'))
    {
        query.reject(
            "action",
            format!("must be 1 to {MAX_VALUE_CHARS} characters"),
        );
    }
    let actor = query.one("actor").map(|actor| actor.into_owned());
    if actor
        .as_ref()
        .is_some_and(|a| a.is_empty() || a.chars().count() > MAX_VALUE_CHARS || a.contains('\0'))
    {
        query.reject(
            "actor",
            format!("must be 1 to {MAX_VALUE_CHARS} characters"),
        );
    }
    let from = query.date_time("from");
    let to = query.date_time("to");
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        query.reject("from", "must not be after to");
    }
    Filter {
        actions,
        actor,
        from,
        to,
    }
}
