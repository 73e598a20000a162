//! `GET /users` (README "The user directory"; `users:read`, admins): the people and services of
//! the tenant the API has seen tokens of, by name, with their roles, permissions and when they
//! were first and last seen.

use http::{Response, StatusCode};
use readers::Page;
use service::http::{Body, response};

use crate::auth::Principal;
use crate::error::Error;
use crate::query::{MAX_OFFSET, Query};
use crate::state::State;

const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 200;

pub(crate) async fn list(
    state: &State,
    principal: &Principal,
    raw_query: Option<&str>,
) -> Result<Response<Body>, Error> {
    let mut query = Query::parse(raw_query);
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    let offset = query.integer("offset", 0, MAX_OFFSET, 0);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = readers::users::list(&state.pool, tenant, Page { limit, offset }).await?;
    Ok(response::json(StatusCode::OK, &page))
}
