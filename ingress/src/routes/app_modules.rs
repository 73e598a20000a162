//! `GET /internal/app-modules/:sha256` on the internal listener: the runner fetches a module's
//! bytes, streamed from object storage (SPEC 4.13). Only a module some version publishes, or
//! some install runs, is served, and never one the operator blocked: anything else answers 404,
//! which the runner reports as `module_not_found`.

use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use schema::module::Sha256;

use crate::error::{Error, Location};
use crate::object_store::{ObjectStore, StoreError};
use crate::state::State;
use service::http::Body;

pub(crate) async fn fetch(state: &State, sha256: &str) -> Result<Response<Body>, Error> {
    let sha256: Sha256 = sha256.parse().map_err(|_| {
        Error::validation(
            Location::Path,
            "sha256",
            "must be 64 lowercase hex characters",
        )
    })?;
    if state.apps.is_blocked(sha256.as_str())
        || !readers::apps::modules::is_servable(&state.reads.pool, sha256.as_str()).await?
    {
        return Err(Error::NotFound);
    }
    let store = state
        .apps
        .objects
        .as_ref()
        .ok_or_else(|| Error::Unavailable("no object storage configured".into()))?;
    let object = match store.get(&ObjectStore::module_key(&sha256)).await {
        Ok(object) => object,
        Err(StoreError::NotFound) => return Err(Error::NotFound),
        Err(StoreError::Unavailable(reason)) => return Err(Error::Unavailable(reason)),
    };
    let length = object.length;
    let mut response = Response::new(object.streamed());
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/wasm"));
    if let Some(length) = length {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    }
    Ok(response)
}
