//! `GET /apps/approvals?open=` (SPEC §4.7): publish requests of the tenant's own versions,
//! open ones (the default) oldest first, decided ones newest decision first.

use http::{Response, StatusCode};
use readers::Page;
use readers::apps::approvals;
use service::http::{Body, response};

use crate::auth::Principal;
use crate::error::Error;
use crate::query::{MAX_OFFSET, Query};
use crate::state::State;

/// Page size when `limit` is absent, and the largest (as `GET /approvals`, SPEC §4.5).
const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 200;

pub(crate) async fn list(
    state: &State,
    principal: &Principal,
    raw_query: Option<&str>,
) -> Result<Response<Body>, Error> {
    let mut query = Query::parse(raw_query);
    let open = query.boolean("open", true);
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    let offset = query.integer("offset", 0, MAX_OFFSET, 0);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = approvals::list(&state.pool, tenant, open, Page { limit, offset }).await?;
    Ok(response::json(StatusCode::OK, &page))
}
