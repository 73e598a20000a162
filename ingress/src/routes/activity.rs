//! `GET /activity` (SPEC §2.2, §4.1): the tenant's newest `case.decided` and `case.sla.breached`
//! events, and with `definitions:read` the definitions' publish and approval events too; `limit`
//! at most 50, default 5. Each item names its actor from the user directory and links into the
//! console (`CONSOLE_URL`; `null` without one).

use http::{Response, StatusCode};
use readers::activity::{self, CASE_ACTIONS, DEFINITION_ACTIONS};
use serde::Serialize;
use service::http::{Body, response};

use crate::auth::Permission;
use crate::call::Call;
use crate::error::Error;
use crate::query::Query;

/// SPEC §8.
const DEFAULT_LIMIT: i64 = 5;
const MAX_LIMIT: i64 = 50;

#[derive(Debug, Serialize)]
struct Feed {
    items: Vec<activity::Item>,
}

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    query.finish()?;
    let mut actions: Vec<&str> = CASE_ACTIONS.to_vec();
    if principal.has(Permission::DefinitionsRead) {
        actions.extend(DEFINITION_ACTIONS);
    }
    let tenant = readers::Tenant::new(principal.tenant);
    let console = state.config.console_url.as_deref();
    let items = activity::newest(&state.reads.pool, tenant, &actions, limit, console).await?;
    Ok(response::json(StatusCode::OK, &Feed { items }))
}
