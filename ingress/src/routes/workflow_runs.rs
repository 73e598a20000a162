//! Workflow runs (docs/definitions-and-runs.md; SPEC §3.6 names their states):
//! `POST /workflow-runs` `{definitionKey, version?, subjectId?, context}` starts one on the
//! workflow's published version (or `version`) and answers 202 with the run once the runs
//! stage created it (its steps go on after); `GET /workflow-runs/:id` shows the run, its
//! context and each step's outcome; `POST /workflow-runs/:id/cancel` cancels a run that has not
//! ended (409 otherwise). Without `runs:context` context and output values are `[redacted]`.

use http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::{Map, Value};
use service::http::{Body, response};
use topics::definitions::is_key;
use topics::runs::Run;
use topics::runs::{Cancel, Start};
use uuid::Uuid;

use crate::auth::{Permission, Principal};
use crate::body;
use crate::call::Call;
use crate::commands;
use crate::error::{Error, Location};
use crate::path;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartRun {
    definition_key: String,
    #[serde(default, deserialize_with = "body::given_whole")]
    version: Option<i32>,
    #[serde(default, deserialize_with = "body::given")]
    subject_id: Option<body::Id>,
    #[serde(default)]
    context: Map<String, Value>,
}

pub(crate) async fn start(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let start: StartRun = call.json().await?;
    if !is_key(&start.definition_key) {
        return Err(Error::validation(
            Location::Body,
            "/definitionKey",
            "must be 1 to 100 lowercase letters, digits, '_' or '-', starting with a letter or digit",
        ));
    }
    if start.version.is_some_and(|v| v < 1) {
        return Err(Error::validation(
            Location::Body,
            "/version",
            "must be an integer > 0",
        ));
    }
    let command = Start {
        run_id: Uuid::now_v7(),
        definition_key: start.definition_key,
        version: start.version,
        subject_id: start.subject_id.map(|id| id.0),
        context: Value::Object(start.context),
    };
    let run = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(
        StatusCode::ACCEPTED,
        &visible(origin.caller, run),
    ))
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id) = (call.state, call.principal, call.param("id"));
    let id = path::id("id", id)?;
    let mut connection = state.reads.connection().await?;
    let run = readers::runs::get(&mut connection, readers::Tenant::new(principal.tenant), id)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &visible(principal, run)))
}

pub(crate) async fn cancel(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, id) = (call.state, call.origin(), call.param("id"));
    let run_id = path::id("id", id)?;
    let run = commands::submit(&state.commands, origin, Cancel { run_id }).await?;
    Ok(response::json(StatusCode::OK, &visible(origin.caller, run)))
}

fn visible(caller: &Principal, run: Run) -> Run {
    if caller.has(Permission::RunsContext) {
        run
    } else {
        readers::runs::redacted(run)
    }
}
