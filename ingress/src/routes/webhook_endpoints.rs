//! Tenants' webhook endpoints (docs/outbound-webhooks.md; SPEC §6.2 shows no route), admins:
//! `POST /webhook-endpoints` `{url, eventTypes?, description?, enabled?}` (201, with the signing
//! secret shown this once), `GET /webhook-endpoints`, `GET /webhook-endpoints/:id`,
//! `PATCH /webhook-endpoints/:id` (what the body names changes), `DELETE` (with its
//! deliveries), and `POST /webhook-endpoints/:id/rotate-secret` (the new secret, shown once; the
//! previous one signs beside it for 24 hours).
//!
//! The API checks what it can alone: the URL passes the outbound rules of deliveries
//! (`outbound::endpoint_hosts`: https, a public host or address, loopback only in
//! development), event types are the catalogue's, the secret store is configured. The secret
//! is generated and sealed here; only the sealed value travels and rests. The webhook endpoints
//! stage decides the rest (the endpoint exists, the tenant's limit).

use http::{Response, StatusCode};
use outbound::{SigningSecret, endpoint_hosts};
use readers::webhook_endpoints;
use serde::{Deserialize, Serialize};
use service::http::{Body, response};
use topics::outbound::is_event_type;
use topics::sealed::Sealed;
use topics::webhook_endpoints::{self as command, Endpoint, secret_binding};
use uuid::Uuid;

use crate::body;
use crate::call::Call;
use crate::commands::{self, Origin};
use crate::error::{Error, Issue, Location};
use crate::path;
use crate::state::State;

const MAX_URL_BYTES: usize = 2048;
const MAX_DESCRIPTION_CHARS: usize = 500;
const MAX_EVENT_TYPES: usize = 50;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Create {
    url: String,
    #[serde(default)]
    event_types: Vec<String>,
    #[serde(default)]
    description: String,
    #[serde(default = "enabled_default")]
    enabled: bool,
}

fn enabled_default() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Update {
    #[serde(default, deserialize_with = "body::given")]
    url: Option<String>,
    #[serde(default, deserialize_with = "body::given")]
    event_types: Option<Vec<String>>,
    #[serde(default, deserialize_with = "body::given")]
    description: Option<String>,
    #[serde(default, deserialize_with = "body::given")]
    enabled: Option<bool>,
}

/// An endpoint with the secret just generated for it: the one answer that shows it.
#[derive(Serialize)]
struct WithSecret {
    #[serde(flatten)]
    endpoint: Endpoint,
    secret: String,
}

pub(crate) async fn create(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let created: Create = call.json().await?;
    let mut issues = Vec::new();
    check_url(state, &created.url, &mut issues);
    check_event_types(&created.event_types, &mut issues);
    check_description(&created.description, &mut issues);
    if !issues.is_empty() {
        return Err(Error::Validation(issues));
    }
    let endpoint_id = Uuid::now_v7();
    let (secret, sealed) = new_secret(state, origin, endpoint_id)?;
    let command = command::Create {
        endpoint_id,
        url: created.url,
        event_types: deduplicated(created.event_types),
        description: created.description,
        enabled: created.enabled,
        secret: sealed,
    };
    let endpoint = commands::submit(&state.commands, origin, command).await?;
    let shown = WithSecret { endpoint, secret };
    Ok(response::json(StatusCode::CREATED, &shown))
}

pub(crate) async fn update(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, id) = (call.state, call.origin(), call.param("id"));
    let endpoint_id = path::id("id", id)?;
    let update: Update = call.json().await?;
    let mut issues = Vec::new();
    if let Some(url) = &update.url {
        check_url(state, url, &mut issues);
    }
    if let Some(event_types) = &update.event_types {
        check_event_types(event_types, &mut issues);
    }
    if let Some(description) = &update.description {
        check_description(description, &mut issues);
    }
    if !issues.is_empty() {
        return Err(Error::Validation(issues));
    }
    let command = command::Update {
        endpoint_id,
        url: update.url,
        event_types: update.event_types.map(deduplicated),
        description: update.description,
        enabled: update.enabled,
    };
    let endpoint = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::OK, &endpoint))
}

pub(crate) async fn rotate_secret(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, id) = (call.state, call.origin(), call.param("id"));
    let endpoint_id = path::id("id", id)?;
    let (secret, sealed) = new_secret(state, origin, endpoint_id)?;
    let command = command::RotateSecret {
        endpoint_id,
        secret: sealed,
    };
    let endpoint = commands::submit(&state.commands, origin, command).await?;
    let shown = WithSecret { endpoint, secret };
    Ok(response::json(StatusCode::OK, &shown))
}

pub(crate) async fn delete(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, id) = (call.state, call.origin(), call.param("id"));
    let endpoint_id = path::id("id", id)?;
    commands::submit(&state.commands, origin, command::Delete { endpoint_id }).await?;
    Ok(response::json(
        StatusCode::OK,
        &serde_json::json!({"id": endpoint_id, "deleted": true}),
    ))
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id) = (call.state, call.principal, call.param("id"));
    let endpoint_id = path::id("id", id)?;
    let tenant = readers::Tenant::new(principal.tenant);
    let endpoint = webhook_endpoints::get(&state.reads.pool, tenant, endpoint_id)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &endpoint))
}

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal) = (call.state, call.principal);
    let tenant = readers::Tenant::new(principal.tenant);
    let items = webhook_endpoints::list(&state.reads.pool, tenant).await?;
    Ok(response::json(
        StatusCode::OK,
        &serde_json::json!({ "items": items }),
    ))
}

/// A fresh signing secret, and the same sealed to the endpoint: sealing needs the store's key
/// (503 `secret_store_unavailable` without it).
fn new_secret(
    state: &State,
    origin: Origin<'_>,
    endpoint_id: Uuid,
) -> Result<(String, Sealed), Error> {
    let keys = state
        .config
        .secret_keys
        .clone()
        .ok_or(Error::SecretStoreUnavailable)?;
    let secret = SigningSecret::generate().reveal();
    let endpoint = endpoint_id.to_string();
    let sealed = keys.seal(secret_binding(origin.caller.tenant, &endpoint), &secret);
    Ok((secret, sealed))
}

fn check_url(state: &State, url: &str, issues: &mut Vec<Issue>) {
    if url.len() > MAX_URL_BYTES {
        let message = format!("must be at most {MAX_URL_BYTES} bytes");
        issues.push(Issue::new(Location::Body, "/url", message));
        return;
    }
    let refusal = match url::Url::parse(url) {
        Ok(parsed) => endpoint_hosts(&parsed, state.config.endpoints_loopback)
            .err()
            .map(|error| error.to_string()),
        Err(error) => Some(format!("not a URL: {error}")),
    };
    if let Some(refusal) = refusal {
        issues.push(Issue::new(Location::Body, "/url", refusal));
    }
}

fn check_event_types(event_types: &[String], issues: &mut Vec<Issue>) {
    if event_types.len() > MAX_EVENT_TYPES {
        let message = format!("at most {MAX_EVENT_TYPES} event types");
        issues.push(Issue::new(Location::Body, "/eventTypes", message));
    }
    for (index, name) in event_types.iter().enumerate() {
        if !is_event_type(name) {
            let message = "not an event type of the catalogue (GET /webhook-event-types)";
            issues.push(Issue::new(
                Location::Body,
                format!("/eventTypes/{index}"),
                message,
            ));
        }
    }
}

fn check_description(description: &str, issues: &mut Vec<Issue>) {
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        let message = format!("must be at most {MAX_DESCRIPTION_CHARS} characters");
        issues.push(Issue::new(Location::Body, "/description", message));
    }
}

/// Each type once, in the order first given.
fn deduplicated(mut event_types: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    event_types.retain(|name| seen.insert(name.clone()));
    event_types
}
