//! `GET /apps/health?windowMinutes=` (SPEC §4.7): the tenant's apps' calls over a recent
//! window, open circuits and installs on blocked modules, from rollups (`readers::apps::health`).

use http::{Response, StatusCode};
use readers::apps::health::{self, DEFAULT_WINDOW_MINUTES, WINDOW_MINUTES};

use crate::call::Call;
use crate::error::Error;
use crate::query::Query;
use service::http::{Body, response};

pub(crate) async fn report(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let window = query.integer(
        "windowMinutes",
        *WINDOW_MINUTES.start(),
        *WINDOW_MINUTES.end(),
        DEFAULT_WINDOW_MINUTES,
    );
    query.finish()?;
    let blocked: Vec<&str> = state
        .config
        .blocked_modules
        .iter()
        .map(|sha| sha.as_str())
        .collect();
    let tenant = readers::Tenant::new(principal.tenant);
    let report = health::report(&state.reads.pool, tenant, window, &blocked).await?;
    Ok(response::json(StatusCode::OK, &report))
}
