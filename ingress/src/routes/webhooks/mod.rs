//! `POST /webhooks/apps/:app` (platform apps) and `POST /webhooks/apps/:app/tenants/:tenantId`
//! (a tenant's own apps): vendor webhooks completing asynchronous calls (SPEC §4.8), public, no
//! token, counted against the client address, bodies up to 256 KiB handed to the module raw.
//!
//! In the order SPEC §4.8 sets:
//! 1. the external id, from `?externalId=` or where the publisher's newest published version
//!    declares it ([`declared`]); no module code runs before the tenant is known;
//! 2. the session it names, and so the tenant, the install and the version that started it;
//! 3. that version's `handle_webhook`, with the install's config, secrets and hosts
//!    ([`request`] is what the module reads), unless the version declares where the event id
//!    is and that event was recorded already (a repeat is answered without the module);
//! 4. the event, produced to `callbacks.events` (keyed by session; `acks=all`); the callbacks
//!    stage records it and settles the session, first wins, and answers every later copy of
//!    the event `duplicate`; the vendor is answered what the stage decided ([`answers`]), so an
//!    answer never says an event settled a session it did not.

mod answers;
mod declared;
#[cfg(fuzzing)]
pub mod fuzzing;
mod request;

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use http::{Response, StatusCode};
use hyper::body::Incoming;
use readers::apps::stored_version::StoredVersion;
use readers::callbacks::Target;
use readers::callbacks::webhook::{self, Publisher};
use runner::client::{CallAnswer, RunnerCode, RunnerFailure};
use serde::Deserialize;
use serde_json::{Value, json};
use service::http::Body;
use topics::callbacks::{Event, EventStatus};
use topics::{Envelope, Principal};
use uuid::Uuid;

use crate::error::Error;
use crate::session_call;
use crate::state::State;
use crate::version_schemas::{SchemaOf, VersionSchemas};

/// Largest webhook body (SPEC §8).
pub(crate) const BODY_LIMIT: usize = 256 * 1024;

/// The event a module answered (contract `webhookModuleAnswer`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModuleEvent {
    external_id: String,
    event_id: String,
    status: EventStatus,
    output: Option<Value>,
    error: Option<String>,
}

/// Receives one webhook for `app` (of the platform, or of the tenant `tenant` names).
pub(crate) async fn receive(
    state: &State,
    (app, tenant): (&str, Option<&str>),
    parts: &http::request::Parts,
    body: Incoming,
    request_id: &str,
) -> Result<Response<Body>, Error> {
    let Ok(_permit) = state.webhooks.in_flight.clone().try_acquire_owned() else {
        return Err(Error::Overloaded {
            retry_after_seconds: 1,
        });
    };
    let runner = state.apps.runner.as_ref().ok_or(Error::AppsUnavailable)?;
    let publisher = publisher(app, tenant)?;
    let body = crate::body::read(&parts.headers, body, BODY_LIMIT).await?;
    let query = parts.uri.query();

    let arrived = declared::Arrived::new(&parts.headers, query, &body);
    let external_id = match arrived.url_external_id()? {
        Some(id) => id,
        None => {
            let source = state
                .webhooks
                .external_id_sources
                .of(&state.reads.pool, publisher, app)
                .await?;
            match source {
                Some(declared) => arrived.declared_external_id(&declared)?,
                None => None,
            }
            .ok_or(Error::MissingExternalId)?
        }
    };

    let named = webhook::find(&state.reads.pool, publisher, app, &external_id)
        .await?
        .ok_or(Error::NotFound)?;
    let target = named.target;
    // From here the request is the session's tenant's: its span and lines say so.
    let span = tracing::Span::current();
    span.record("svc.tenant_id", tracing::field::display(target.tenant_id));
    span.record("svc.app.name", app);
    if named.shared_with_another_tenant {
        // Vendors give each account its ids; two tenants' sessions with one id cannot be told
        // apart here, and either tenant's module would run with the other's event.
        tracing::warn!(
            app,
            "a platform webhook's external id names sessions of several tenants"
        );
        return Err(Error::Conflict(
            "The external id names sessions of more than one tenant.".into(),
        ));
    }
    if !target.installed {
        return Err(Error::AppNotInstalled);
    }
    let version = state
        .apps
        .stored_versions
        .get(&state.reads.pool, target.version_id)
        .await?;
    if state.apps.is_blocked(&version.sha256) {
        return Err(Error::AppBlocked);
    }
    // A repeat whose event id the version lets us read is answered without running the module.
    if let Some(event_id) = arrived.event_id(&version.manifest)
        && state
            .webhooks
            .recorded
            .contains(target.tenant_id, &target.app_name, &event_id)
            .await
    {
        return Ok(answers::duplicate());
    }

    let module_request = request::of(&parts.method, &parts.headers, query, &body);
    let answered = handle(
        state,
        runner,
        (&target, &version),
        module_request,
        request_id,
    )
    .await?;
    let event = match read_answer(answered)? {
        Some(event) => event,
        None => {
            return Ok(answers::json_answer(
                StatusCode::ACCEPTED,
                json!({"received": false, "ignored": true}),
            ));
        }
    };
    if event.external_id != target.external_id {
        tracing::warn!(
            app,
            "the module's event names another external id than the webhook"
        );
        return Err(Error::AppWebhookFailed {
            reason: "bad_output",
        });
    }
    let event = checked(event, (&target, &version), &state.apps.version_schemas);
    storable(&event)?;
    record(state, &target, event, request_id).await
}

/// Whose sessions the route serves; a tenant that is not a uuid has none (404).
fn publisher(app: &str, tenant: Option<&str>) -> Result<Publisher, Error> {
    if !crate::path::is_app_name(app) {
        return Err(Error::NotFound);
    }
    match tenant {
        None => Ok(Publisher::Platform),
        Some(tenant) => Uuid::try_parse(tenant)
            .map(|tenant| Publisher::Tenant(readers::Tenant::new(tenant)))
            .map_err(|_| Error::NotFound),
    }
}

/// Runs the session's version's `handle_webhook` with the install's config, secrets and hosts.
async fn handle(
    state: &State,
    runner: &runner::client::RunnerClient,
    (target, version): (&Target, &StoredVersion),
    module_request: Value,
    request_id: &str,
) -> Result<CallAnswer, Error> {
    let mut request = session_call::request(state, target, version)?;
    request["request"] = module_request;
    let attempt = || runner.handle_webhook(&request, request_id);
    // Only what the runner answers at once is asked again: an unreachable runner may be one
    // that took the whole deadline.
    let answered = attempt
        .retry(runner_retry())
        .when(|failure: &RunnerFailure| {
            matches!(
                failure.code,
                RunnerCode::Busy | RunnerCode::ModuleUnavailable
            )
        })
        .await;
    answered.map_err(|failure| match failure.code {
        // Still busy after the retries: the vendor retries later, nothing was recorded.
        RunnerCode::Busy => Error::Overloaded {
            retry_after_seconds: 1,
        },
        code => Error::AppWebhookFailed {
            reason: code.as_str(),
        },
    })
}

/// A runner that is busy, or fetching the module, is asked again a few times within about a
/// second (a webhook is only read here; recording it happens after).
fn runner_retry() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(20))
        .with_max_delay(Duration::from_millis(400))
        .with_jitter()
        .with_max_times(4)
}

/// The module's event, `None` when it ignored the webhook; a rejection is 401 and an error
/// answer 502.
fn read_answer(answered: CallAnswer) -> Result<Option<ModuleEvent>, Error> {
    let answer = answered.answer;
    match answer["status"].as_str() {
        Some("ignored") => Ok(None),
        Some("rejected") => Err(Error::WebhookRejected),
        Some("event") => serde_json::from_value(answer["event"].clone())
            .map(Some)
            .map_err(|_| Error::AppWebhookFailed {
                reason: "bad_output",
            }),
        _ => Err(Error::AppWebhookFailed { reason: "error" }),
    }
}

/// The event as it is recorded: a completed event whose output the action's output schema
/// refuses fails the session instead (the run must never see an output outside its schema).
fn checked(
    event: ModuleEvent,
    (target, version): (&Target, &StoredVersion),
    schemas: &VersionSchemas,
) -> Event {
    let mut event = Event {
        session_id: target.session_id,
        app_name: target.app_name.clone(),
        external_id: event.external_id,
        event_id: event.event_id,
        status: event.status,
        output: event.output,
        error: event.error,
    };
    if event.status == EventStatus::Completed {
        let output = event.output.clone().unwrap_or(Value::Null);
        let output_schema = SchemaOf::Output(&target.action);
        let checked = schemas.check(
            version.id,
            &version.manifest,
            output_schema,
            &output,
            "/output",
        );
        if let Err(issues) = checked {
            let issues: Vec<String> = issues
                .iter()
                .map(|i| format!("{}: {}", i.path, i.message))
                .collect();
            event.status = EventStatus::Failed;
            event.error = Some(format!(
                "validation_error: the event's output does not match the action's output schema ({})",
                issues.join("; ")
            ));
        }
    }
    event
}

/// Largest event recorded: its output and error text together (a module may answer up to
/// 1 MiB; the log takes messages under 1 MB).
const MAX_EVENT_BYTES: usize = 512 * 1024;

/// An event the database can hold and the log can carry, or 502 `bad_output` before anything is
/// claimed or produced: U+0000 fits in no `text` or `jsonb`, and an event that could never be
/// recorded must not be answered 2xx.
fn storable(event: &Event) -> Result<(), Error> {
    let output_bytes = event
        .output
        .as_ref()
        .map_or(0, |output| output.to_string().len());
    let error_bytes = event.error.as_ref().map_or(0, String::len);
    let has_nul = event
        .output
        .as_ref()
        .and_then(schema::storable::nul_at)
        .is_some()
        || event
            .error
            .as_ref()
            .is_some_and(|error| error.contains('\0'))
        || event.event_id.contains('\0');
    if has_nul || output_bytes + error_bytes > MAX_EVENT_BYTES {
        return Err(Error::AppWebhookFailed {
            reason: "bad_output",
        });
    }
    Ok(())
}

/// Produces the event and answers what the stage made of it.
async fn record(
    state: &State,
    target: &Target,
    event: Event,
    request_id: &str,
) -> Result<Response<Body>, Error> {
    let envelope = Envelope::new(
        Some(target.tenant_id),
        Principal::system("vendor-webhook"),
        request_id,
        service::telemetry::traces::current_traceparent(),
        event,
    );
    let waiter = state.commands.replies.wait_for(envelope.id);
    if let Err(error) = state.webhooks.events.send(&envelope).await {
        tracing::warn!(%error, "webhook event not produced");
        return Err(Error::Overloaded {
            retry_after_seconds: 1,
        });
    }
    // Durable from here: the event is on the log and applies, so a repeat of it is a duplicate
    // (a 504 included), unless the stage cannot apply it after all (dead-lettered): then it is
    // forgotten, and the vendor's retry may record it.
    let (tenant, event) = (target.tenant_id, &envelope.body);
    let recorded = &state.webhooks.recorded;
    recorded
        .insert(tenant, &event.app_name, &event.event_id)
        .await;
    let answer = answers::answer_of(state, waiter, tenant, &envelope).await;
    if let Err(error) = &answer
        && !matches!(error, Error::CommandTimeout { .. })
    {
        recorded
            .remove(tenant, &event.app_name, &event.event_id)
            .await;
    }
    Ok(answers::response_to(target.session_id, &answer?))
}
