//! `GET /apps/approvals?open=` (SPEC §4.7): publish requests of the tenant's own versions,
//! open ones (the default) oldest first, decided ones newest decision first.

use http::{Response, StatusCode};
use readers::apps::approvals;
use service::http::{Body, response};

use crate::auth::Principal;
use crate::error::Error;
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};
use crate::state::State;

pub(crate) async fn list(
    state: &State,
    principal: &Principal,
    raw_query: Option<&str>,
) -> Result<Response<Body>, Error> {
    let mut query = Query::parse(raw_query);
    let open = query.boolean("open", true);
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = approvals::list(&state.pool, tenant, open, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}
