//! `GET /users` (docs/definitions-and-runs.md "The user directory"; `users:read`, admins): the
//! people and services of the tenant the API has seen tokens of, by name, with their roles,
//! permissions and when they were first and last seen.

use http::{Response, StatusCode};
use service::http::{Body, response};

use crate::call::Call;
use crate::error::Error;
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = readers::users::list(&state.reads.pool, tenant, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}
