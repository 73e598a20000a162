//! `GET /approvals` (SPEC §4.5): the tenant's definition approval requests, open ones (the
//! default) oldest first, decided ones newest decision first; `kind`, `mine=true` (the caller's
//! own), `stale=true` (requested over a day ago; `false`, like `mine=false`, filters nothing),
//! `limit` (at most 200, default 50), `offset`.

use http::{Response, StatusCode};
use readers::approvals::{self, Filter};
use service::http::{Body, response};
use topics::definitions::Kind;

use crate::call::Call;
use crate::error::Error;
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let open = match query.one("status").as_deref() {
        None | Some("open") => true,
        Some("decided") => false,
        Some(_) => {
            query.reject("status", "must be open or decided");
            true
        }
    };
    let kind = query.one("kind").and_then(|kind| match Kind::parse(&kind) {
        Some(kind) => Some(kind.as_str().to_owned()),
        None => {
            query.reject(
                "kind",
                "must be one of workflow, rule, rule_set, collection_flow",
            );
            None
        }
    });
    let mine = query.boolean("mine", false);
    let stale = query.boolean("stale", false);
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let filter = Filter {
        open,
        kind,
        requested_by: mine.then(|| principal.sub.to_string()),
        stale,
    };
    let tenant = readers::Tenant::new(principal.tenant);
    let page = approvals::list(&state.reads.pool, tenant, &filter, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}
