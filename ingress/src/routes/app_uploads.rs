//! `POST /apps/uploads` (SPEC §3.1, §4.7 rules 5-6, §4.11): the module's bytes as
//! `application/wasm`, read up to 32 MiB (413 past it, the rest never kept); inspected by the
//! runner (its refusal is a 400 `validation_error` with `details.code`, its failure a 502
//! `runner_<code>`); the capped module stored under its hash; then the upload command, whose
//! stage creates the `uploaded` version or answers 409 `conflict` for a name and version the
//! tenant already has.

use http::header::{CONTENT_TYPE, LOCATION};
use http::{HeaderValue, Response, StatusCode};
use runner::client::{Inspection, RunnerCode, RunnerFailure};
use schema::module::MAX_MODULE_BYTES;
use serde_json::Value;
use service::http::{Body, response};
use topics::apps::{Module, Upload};
use uuid::Uuid;

use crate::body;
use crate::call::Call;
use crate::commands;
use crate::error::{Error, Issue, Location};
use crate::object_store::{ObjectStore, StoreError};

pub(crate) async fn upload(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, parts, request) = (call.state, call.origin(), &call.parts, call.body);
    let (runner, objects) = state.apps.ready()?;
    if !is_wasm(parts.headers.get(CONTENT_TYPE)) {
        return Err(Error::UnsupportedMediaType {
            expected: "application/wasm",
        });
    }
    let bytes = body::read(&parts.headers, request, MAX_MODULE_BYTES).await?;
    let inspection = runner
        .inspect(bytes, origin.request_id)
        .await
        .map_err(refusal_or_failure)?;
    let Inspection {
        sha256,
        manifest,
        module,
    } = inspection;
    let size_bytes = module.len() as u64;
    objects
        .put(&ObjectStore::module_key(&sha256), module.to_vec())
        .await
        .map_err(|error| match error {
            StoreError::Unavailable(why) => Error::Unavailable(format!("object storage: {why}")),
            StoreError::NotFound => Error::Unavailable("object storage: no bucket".into()),
        })?;
    let name = text(&manifest, "name")?;
    let command = Upload {
        version_id: Uuid::now_v7(),
        version: text(&manifest, "version")?,
        module: Module {
            sha256: sha256.to_string(),
            size_bytes,
            manifest,
        },
        name: name.clone(),
    };
    let version = commands::submit(&state.commands, origin, command).await?;
    let mut answer = response::json(StatusCode::CREATED, &version);
    let location = format!("/apps/{name}/versions/{}", version.id);
    if let Ok(value) = HeaderValue::from_str(&location) {
        answer.headers_mut().insert(LOCATION, value);
    }
    Ok(answer)
}

/// `application/wasm`, parameters allowed.
fn is_wasm(content_type: Option<&HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/wasm"))
}

/// A module the runner refused is the caller's problem (400, SPEC §4.11); anything else the
/// runner's (502 `runner_<code>`).
fn refusal_or_failure(failure: RunnerFailure) -> Error {
    if !matches!(
        failure.code,
        RunnerCode::InvalidModule | RunnerCode::MissingExport
    ) {
        return Error::InspectFailed(failure);
    }
    let details = failure.details.unwrap_or(Value::Null);
    let code = details["code"]
        .as_str()
        .unwrap_or(failure.code.as_str())
        .to_owned();
    let issues = details["issues"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|issue| {
            Issue::new(
                Location::Body,
                issue["path"].as_str().unwrap_or_default(),
                issue["message"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    Error::ModuleRefused {
        code,
        message: failure.message,
        issues,
    }
}

/// A text field of an inspected manifest (the runner checked it is there).
fn text(manifest: &Value, field: &str) -> Result<String, Error> {
    manifest[field]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Error::Internal(format!("the inspected manifest has no {field}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_wasm_is_taken() {
        let wasm = HeaderValue::from_static("application/wasm");
        let with_params = HeaderValue::from_static("Application/WASM; charset=binary");
        let json = HeaderValue::from_static("application/json");
        assert!(is_wasm(Some(&wasm)));
        assert!(is_wasm(Some(&with_params)));
        assert!(!is_wasm(Some(&json)));
        assert!(!is_wasm(None));
    }

    #[test]
    fn runner_refusals_become_validation_errors_with_their_code_and_issues() {
        let refused = RunnerFailure {
            code: RunnerCode::InvalidModule,
            message: "The manifest is invalid.".into(),
            details: Some(json!({
                "code": "invalid_module",
                "issues": [{"path": "/version", "message": "not a semantic version"}]
            })),
            usage: None,
            duration_ms: None,
        };
        match refusal_or_failure(refused) {
            Error::ModuleRefused { code, issues, .. } => {
                assert_eq!(code, "invalid_module");
                assert_eq!(
                    issues,
                    vec![Issue::new(
                        Location::Body,
                        "/version",
                        "not a semantic version"
                    )]
                );
            }
            other => panic!("{other:?}"),
        }
        let busy = RunnerFailure {
            code: RunnerCode::Busy,
            message: "busy".into(),
            details: None,
            usage: None,
            duration_ms: None,
        };
        assert!(matches!(refusal_or_failure(busy), Error::InspectFailed(_)));
    }
}
