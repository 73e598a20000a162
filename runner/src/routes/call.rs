//! The path of `/v1/invoke`, `/v1/webhooks/handle` and `/v1/handoff`: admit the call, get the
//! compiled module, run the export on a blocking thread with the install's context, then check
//! the module's answer against its export's envelope.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::call::run::{CallOutcome, run};
use crate::call::{CallContext, CallLabels, Export, Outbound};
use crate::contract::{self, Definition};
use crate::documents::DocumentAccess;
use crate::outbound::ApprovedHosts;
use crate::response::{self, Body};
use crate::secrets::Secrets;
use crate::state::State;
use crate::{Error, Issue};

/// Memory of a module whose caller did not say (SPEC §2.8 default).
pub const DEFAULT_MEMORY_MIB: u32 = 64;

/// The fields every call request carries (schema `contract.json`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Install {
    pub module: String,
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
pub struct AppRef {
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRef {
    pub id: String,
    pub tenant_id: Uuid,
}

/// One call to make.
#[derive(Debug)]
pub struct Plan {
    pub export: Export,
    pub install: Install,
    /// The JSON document the export receives.
    pub input: Value,
    pub timeout: Duration,
    pub answer: Definition,
    pub call_token: Option<String>,
}

/// Checks `body` against `definition` and reads it as `T`.
pub fn parse<T: serde::de::DeserializeOwned>(
    definition: Definition,
    body: &Value,
) -> Result<T, Error> {
    contract::check(definition, body).map_err(Error::BadRequest)?;
    serde_json::from_value(body.clone())
        .map_err(|e| Error::BadRequest(vec![Issue::new("", e.to_string())]))
}

pub async fn execute(state: &State, plan: Plan) -> Result<Response<Body>, Error> {
    let admitted = state.admission.admit(Some(plan.install.call.tenant_id))?;
    let compiled = state.modules.get(&plan.install.module).await?;
    let labels = CallLabels {
        tenant_id: Some(plan.install.call.tenant_id),
        app_name: plan.install.app.name.clone(),
        call_id: plan.install.call.id.clone(),
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
        labels: labels.clone(),
        config: plan.install.config,
        secrets: Secrets::new(plan.install.secrets),
        outbound: Some(Outbound {
            client: state.outbound.clone(),
            hosts: Arc::new(ApprovedHosts::new(&plan.install.hosts)),
        }),
        documents,
        // The deadline starts once the module is ready: a cold module's fetch and compile do
        // not eat into the action's time.
        deadline: Instant::now() + plan.timeout,
        runtime: tokio::runtime::Handle::current(),
    };
    let input = serde_json::to_vec(&plan.input).unwrap_or_default();
    let memory = plan.install.memory_mib.unwrap_or(DEFAULT_MEMORY_MIB) as usize * 1024 * 1024;
    let engine = state.modules.engine().clone();
    let outcome = tokio::task::spawn_blocking(move || {
        let _admitted = admitted;
        run(&engine, &compiled, context, &input, memory)
    })
    .await
    .map_err(|e| Error::Internal(format!("call thread: {e}")))?;
    let result = answer(plan.answer, &outcome);
    record(&labels, plan.export, &outcome, &result);
    let answer = result?;
    Ok(response::json(
        StatusCode::OK,
        &json!({
            "answer": answer,
            "usage": outcome.usage,
            "durationMs": outcome.duration.as_secs_f64() * 1000.0,
        }),
    ))
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

fn record(
    labels: &CallLabels,
    export: Export,
    outcome: &CallOutcome,
    result: &Result<Value, Error>,
) {
    let label = match result {
        Ok(answer) => match answer["status"].as_str() {
            Some("ok") | Some("event") | Some("ignored") => "ok",
            Some("pending") => "pending",
            _ => "error",
        },
        Err(error) => error.code(),
    };
    metrics::histogram!(
        "svc.app.call.duration",
        "app" => labels.app_name.clone(),
        "export" => export.name(),
        "outcome" => label,
    )
    .record(outcome.duration.as_secs_f64() * 1000.0);
    let tenant = labels.tenant_id.map(|t| t.to_string()).unwrap_or_default();
    match result {
        Ok(_) => {
            tracing::debug!(tenantId = %tenant, appName = %labels.app_name, callId = %labels.call_id, export = export.name(), outcome = label, "call answered")
        }
        Err(error) => {
            tracing::warn!(tenantId = %tenant, appName = %labels.app_name, callId = %labels.call_id, export = export.name(), outcome = label, %error, "call failed")
        }
    }
}
