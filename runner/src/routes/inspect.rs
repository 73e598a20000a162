//! `POST /v1/inspect`: applies the module rules (SPEC §4.11) to uploaded bytes, runs the
//! `manifest` export with every host function refusing, validates the manifest, writes its
//! `memoryMiB` into the module, and answers the capped module, its hash and the manifest.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{Value, json};
use service::http::{Body, response};

use super::body;
use crate::call::run::run;
use crate::call::{CallContext, Export};
use crate::engine::MAX_MEMORY_BYTES;
use schema::module::{MAX_MODULE_BYTES, Sha256};

use crate::inspect;
use crate::module_cache::check_off_thread;
use crate::state::State;
use crate::{Error, Refusal};

/// Deadline of the `manifest` export (SPEC §8).
pub(crate) const MANIFEST_DEADLINE: Duration = Duration::from_secs(5);

pub(crate) async fn handle(
    state: &State,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    let bytes = body::read(request, MAX_MODULE_BYTES).await?;
    let _admitted = state.admission.admit(None)?;
    let bytes = Arc::new(bytes.to_vec());
    let shape = check_off_thread(bytes.clone()).await?;
    let compiled = state.modules.compile(&bytes).await?;
    let context = CallContext::refusing(Export::Manifest, Instant::now() + MANIFEST_DEADLINE);
    let engine = state.modules.engine().clone();
    let outcome = run(
        engine,
        Arc::new(compiled),
        context,
        b"{}".to_vec(),
        MAX_MEMORY_BYTES,
    )
    .await;
    let answer = outcome.answer?;
    let manifest_json: Value = serde_json::from_slice(&answer)
        .map_err(|_| Error::BadOutput("the manifest is not one JSON document".into()))?;
    let manifest =
        inspect::parse_manifest(&manifest_json).map_err(|issues| Error::InvalidModule {
            refusal: Refusal::InvalidModule,
            message: "the manifest is invalid".into(),
            issues,
        })?;
    inspect::require_handles(&shape, &manifest)?;
    let capped = inspect::cap_memory(&bytes, manifest.memory_mib)?;
    let sha256 = Sha256::of(&capped);
    Ok(response::json(
        StatusCode::OK,
        &json!({
            "sha256": sha256,
            "manifest": manifest_json,
            "moduleBase64": BASE64.encode(&capped),
            "size": capped.len(),
        }),
    ))
}
