//! `GET /apps/approvals?open=` (SPEC §4.7): publish requests of the tenant's own versions,
//! open ones (the default) oldest first, decided ones newest decision first.

use http::{Response, StatusCode};
use readers::approvals::apps as approvals;
use service::http::{Body, response};

use crate::call::Call;
use crate::error::Error;
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let open = query.boolean("open", true);
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = approvals::list(&state.reads.pool, tenant, open, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}
