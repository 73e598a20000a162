//! Deliveries to the tenant's webhook endpoints (SPEC §6.2; docs/outbound-webhooks.md),
//! admins: `GET /webhook-deliveries` (filters `status`, repeatable: `pending`, `succeeded`,
//! `failed`, `exhausted`; `endpointId`; `eventType`; newest first, capped total),
//! `GET /webhook-deliveries/:id` (with its attempts), and `POST /webhook-deliveries/:id/retry`
//! (202: due now; README says how many attempts it keeps).

use http::{Response, StatusCode};
use readers::webhook_deliveries::{self, Filter, STATUSES};
use service::http::{Body, response};
use topics::webhook_endpoints::RetryDelivery;

use crate::call::Call;
use crate::commands;
use crate::error::Error;
use crate::path;
use crate::query::{LIST_LIMIT, LIST_MAX_LIMIT, Query};

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let mut filter = Filter::default();
    for status in query.all("status") {
        if STATUSES.contains(&status.as_ref()) {
            filter.statuses.push(status.into_owned());
        } else {
            query.reject("status", "must be pending, succeeded, failed or exhausted");
        }
    }
    filter.endpoint_id = query.uuid("endpointId");
    match query.one("eventType") {
        Some(kind) if topics::outbound::is_event_type(&kind) => {
            filter.event_type = Some(kind.into_owned());
        }
        Some(_) => query.reject("eventType", "must be an event type of the catalogue"),
        None => {}
    }
    let page = query.page(LIST_LIMIT, LIST_MAX_LIMIT);
    query.finish()?;
    let tenant = readers::Tenant::new(principal.tenant);
    let page = webhook_deliveries::list(&state.reads.pool, tenant, &filter, page).await?;
    Ok(response::json(StatusCode::OK, &page))
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id) = (call.state, call.principal, call.param("id"));
    let delivery_id = path::id("id", id)?;
    let tenant = readers::Tenant::new(principal.tenant);
    let delivery = webhook_deliveries::get(&state.reads.pool, tenant, delivery_id)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &delivery))
}

pub(crate) async fn retry(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, id) = (call.state, call.origin(), call.param("id"));
    let delivery_id = path::id("id", id)?;
    commands::submit(&state.commands, origin, RetryDelivery { delivery_id }).await?;
    let tenant = readers::Tenant::new(origin.caller.tenant);
    let delivery = webhook_deliveries::get(&state.reads.pool, tenant, delivery_id)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::ACCEPTED, &delivery))
}
