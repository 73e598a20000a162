//! The path of `/v1/invoke`, `/v1/webhooks/handle` and `/v1/handoff`: admit the call, get the
//! compiled module, run the export (a wasmtime async call on this task) with the install's
//! context, then check the module's answer against its export's envelope.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use service::http::{Body, HttpError, response};
use tracing::Instrument;
use uuid::Uuid;

use super::body;
use crate::call::run::{CallOutcome, run};
use crate::call::{CallContext, Export, Outbound};
use crate::contract::{self, Definition};
use crate::documents::DocumentAccess;
use crate::engine::{Compiled, MAX_MEMORY_BYTES};
use crate::secrets::Secrets;
use crate::state::State;
use crate::{Error, Issue};
use outbound::ApprovedHosts;
use schema::module::Sha256;

/// Memory of a module whose caller did not say and which declares no maximum of its own
/// (SPEC §2.8 default).
pub(crate) const DEFAULT_MEMORY_BYTES: usize = 64 * 1024 * 1024;

/// The fields every call request carries (schema `contract.json`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Install {
    pub module: Sha256,
    pub app: AppRef,
    pub call: CallRef,
    pub config: Map<String, Value>,
    #[serde(default)]
    pub secrets: HashMap<String, String>,
    #[serde(default)]
    pub hosts: Vec<String>,
    #[serde(default, rename = "memoryMiB")]
    pub memory_mib: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct AppRef {
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallRef {
    pub id: String,
    pub tenant_id: Uuid,
}

/// What distinguishes one call route from another.
#[derive(Debug)]
pub(crate) struct Route {
    pub export: Export,
    pub request: Definition,
    pub answer: Definition,
    /// Fields of the request the export receives, as they are (absent ones are left out).
    pub input_fields: &'static [&'static str],
    /// The deadline: fixed, or `None` to take the request's `timeoutMs`.
    pub deadline: Option<Duration>,
}

/// One call to make.
#[derive(Debug)]
struct Plan {
    export: Export,
    install: Install,
    /// The JSON document the export receives, serialised.
    input: Vec<u8>,
    timeout: Duration,
    /// When the request arrived: a call's `durationMs` runs from here to its answer.
    arrived: Instant,
    /// When the request arrived plus `timeout`: the attempt's whole time, module fetch and
    /// compilation included (SPEC §2.9 `timeoutMs`).
    deadline: Instant,
    answer: Definition,
    call_token: Option<String>,
}

/// Serves one call route: the body is checked against the route's request definition, the
/// export gets the route's input fields.
pub(crate) async fn handle(
    state: &State,
    request: Request<Incoming>,
    route: &Route,
) -> Result<Response<Body>, Error> {
    let arrived = Instant::now();
    let body = body::json(request).await?;
    contract::check(route.request, &body).map_err(Error::BadRequest)?;
    // Read from the borrowed document: cloning it would copy the whole input once more.
    let install = Install::deserialize(&body)
        .map_err(|e| Error::BadRequest(vec![Issue::new("", e.to_string())]))?;
    // The export's document, written straight from the request's fields (no copies).
    let input = export_document(&body, route.input_fields)?;
    let timeout = route
        .deadline
        .or_else(|| body["timeoutMs"].as_u64().map(Duration::from_millis))
        .ok_or_else(|| Error::BadRequest(vec![Issue::new("/timeoutMs", "is required")]))?;
    let plan = Plan {
        export: route.export,
        install,
        input,
        timeout,
        arrived,
        deadline: arrived + timeout,
        answer: route.answer,
        call_token: body["callToken"].as_str().map(str::to_owned),
    };
    execute(state, plan).await
}

/// `{field: value, ...}` of the request's `fields` that are present, serialised.
fn export_document(body: &Value, fields: &[&str]) -> Result<Vec<u8>, Error> {
    use serde::ser::{SerializeMap, Serializer};
    let mut bytes = Vec::with_capacity(1024);
    let mut serializer = serde_json::Serializer::new(&mut bytes);
    let write = |serializer: &mut serde_json::Serializer<&mut Vec<u8>>| {
        let mut map = serializer.serialize_map(None)?;
        for field in fields {
            if let Some(value) = body.get(*field) {
                map.serialize_entry(field, value)?;
            }
        }
        map.end()
    };
    write(&mut serializer).map_err(|e| Error::Internal(format!("export document: {e}")))?;
    Ok(bytes)
}

/// Runs the call inside its span: every line it leads to, the module's loading included,
/// names the tenant, the app and the call.
async fn execute(state: &State, plan: Plan) -> Result<Response<Body>, Error> {
    // The request's own lines (its access line) name the call too.
    let request = tracing::Span::current();
    request.record(
        "svc.tenant_id",
        tracing::field::display(plan.install.call.tenant_id),
    );
    request.record("svc.app.name", plan.install.app.name.as_str());
    request.record("svc.app.call_id", plan.install.call.id.as_str());
    let span = tracing::info_span!(
        "app.call",
        svc.tenant_id = %plan.install.call.tenant_id,
        svc.app.name = %plan.install.app.name,
        svc.app.call_id = %plan.install.call.id,
        export = plan.export.name(),
    );
    run_admitted(state, plan).instrument(span).await
}

/// A call's `durationMs` (and its invocation record's) is what its deadline covers: from the
/// request's arrival to the answer, the module's fetch and compilation included when the call
/// waited for them, so a timeout records its whole deadline and a cold call its cold start.
async fn run_admitted(state: &State, plan: Plan) -> Result<Response<Body>, Error> {
    let admitted = state.admission.admit(Some(plan.install.call.tenant_id))?;
    let compiled = match module_by(state, &plan.install.module, plan.deadline, plan.timeout).await {
        Ok(compiled) => compiled,
        // The deadline passed while the module loaded: the call used its whole time.
        Err(error @ Error::Timeout { .. }) => {
            let duration_ms = milliseconds(plan.arrived.elapsed());
            record(
                &plan.install.app.name,
                plan.export,
                duration_ms,
                Err(&error),
            );
            return Err(Error::CallFailed {
                error: Box::new(error),
                usage: Default::default(),
                duration_ms,
            });
        }
        Err(other) => return Err(other),
    };
    let documents = match (&plan.call_token, &state.api) {
        (Some(token), Some(api)) => Some(DocumentAccess {
            api: api.clone(),
            call_id: plan.install.call.id.clone(),
            token: token.clone(),
        }),
        _ => None,
    };
    let context = CallContext {
        export: plan.export,
        config: plan.install.config,
        secrets: Secrets::new(plan.install.secrets),
        outbound: Some(Outbound {
            client: state.outbound.clone(),
            hosts: Arc::new(ApprovedHosts::new(&plan.install.hosts)),
        }),
        documents,
        deadline: plan.deadline,
    };
    let input = plan.input;
    // The caller's `memoryMiB`, else the cap inspection wrote into the module.
    let memory = plan
        .install
        .memory_mib
        .map(|mib| mib as usize * 1024 * 1024)
        .or(compiled.memory_maximum)
        .unwrap_or(DEFAULT_MEMORY_BYTES)
        .min(MAX_MEMORY_BYTES);
    let engine = state.modules.engine().clone();
    let outcome = run(engine, compiled, context, input, memory).await;
    drop(admitted);
    let result = answer(plan.answer, &outcome).map_err(|error| match error {
        // The run knows the time it had left; the caller set the call's whole time.
        Error::Timeout { .. } => Error::Timeout {
            deadline_ms: plan.timeout.as_millis() as u64,
        },
        other => other,
    });
    let duration_ms = milliseconds(plan.arrived.elapsed());
    record(
        &plan.install.app.name,
        plan.export,
        duration_ms,
        result.as_ref(),
    );
    let answer = result.map_err(|error| Error::CallFailed {
        error: Box::new(error),
        usage: outcome.usage,
        duration_ms,
    })?;
    Ok(response::json(
        StatusCode::OK,
        &json!({
            "answer": answer,
            "usage": outcome.usage,
            "durationMs": duration_ms,
        }),
    ))
}

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The call's module, waited for until the call's deadline. A module still being fetched or
/// compiled then goes on loading in the background, so that the next attempt finds it ready
/// instead of starting over.
async fn module_by(
    state: &State,
    sha256: &Sha256,
    deadline: Instant,
    timeout: Duration,
) -> Result<Arc<Compiled>, Error> {
    if let Some(ready) = state.modules.ready(sha256).await {
        return Ok(ready);
    }
    let loader = state.clone();
    let sha256 = sha256.clone();
    // The load outlives this call when it runs past the deadline; its lines stay the call's.
    let loading = tokio::spawn(
        async move { loader.modules.get(&sha256).await }.instrument(tracing::Span::current()),
    );
    match tokio::time::timeout_at(deadline.into(), loading).await {
        Ok(joined) => joined.map_err(|e| Error::Internal(format!("module load: {e}")))?,
        Err(_) => Err(Error::Timeout {
            deadline_ms: timeout.as_millis() as u64,
        }),
    }
}

/// The module's answer: one JSON document allowed by its export's envelope.
fn answer(definition: Definition, outcome: &CallOutcome) -> Result<Value, Error> {
    let bytes = outcome.answer.as_ref().map_err(Clone::clone)?;
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| Error::BadOutput("the answer is not one JSON document".into()))?;
    contract::check(definition, &value).map_err(|issues| {
        let first = issues
            .first()
            .map(|i| format!("{} {}", i.path, i.message))
            .unwrap_or_default();
        Error::BadOutput(format!("the answer is not an allowed envelope: {first}"))
    })?;
    Ok(value)
}

fn record(app: &str, export: Export, duration_ms: f64, result: Result<&Value, &Error>) {
    let label = match result {
        Ok(answer) => match answer["status"].as_str() {
            Some("ok") | Some("event") | Some("ignored") => "ok",
            Some("pending") => "pending",
            _ => "error",
        },
        // The spec's outcomes: a failure outside them (a missing export, an internal error)
        // counts as `error`.
        Err(error) => match error.code() {
            code @ ("timeout" | "trapped" | "bad_output") => code,
            _ => "error",
        },
    };
    metrics::histogram!(
        "svc.app.call.duration",
        "app" => app.to_owned(),
        "export" => export.name(),
        "outcome" => label,
    )
    .record(duration_ms);
    match result {
        Ok(_) => tracing::debug!(outcome = label, "call answered"),
        Err(error) => tracing::warn!(outcome = label, %error, "call failed"),
    }
}
