//! The internal listener's document routes (SPEC §4.13), what the runner's `document_list` and
//! `document_read` fetch for a call of an app that declares `needs: ['documents']`:
//! `GET /internal/app-calls/:callId/documents` answers `{items: [{id, name, contentType,
//! size}]}`, the newest documents of the token's tenant and subject (none for a call without a
//! subject, such as a test call); `GET /internal/app-calls/:callId/documents/:id` answers one
//! of them as its bytes with its content type, and 404 for any other document.
//!
//! Both take the call token as the bearer (`topics::call_token`): signed with
//! `APP_CALL_TOKEN_SECRET`, unexpired, and minted for the call the path names. Anything else is
//! 401, with the reason logged (never the token).

use http::{HeaderMap, Response, StatusCode};
use readers::Tenant;
use readers::documents::{self, CallDocument};
use serde::Serialize;
use service::http::{Body, bearer, response};
use topics::call_token::{CallGrant, CallTokenError};

use super::documents::bytes_of;
use crate::error::{AuthFailure, Error};
use crate::path;
use crate::state::State;

/// The list as the runner passes it to the module.
#[derive(Debug, Serialize)]
struct CallDocuments {
    items: Vec<CallDocument>,
}

pub(crate) async fn list(
    state: &State,
    headers: &HeaderMap,
    call: &str,
) -> Result<Response<Body>, Error> {
    let grant = granted(state, headers, call)?;
    let items = match grant.subject {
        Some(subject) => {
            let mut connection = state.reads.connection().await?;
            documents::for_call(&mut connection, Tenant::new(grant.tenant), subject).await?
        }
        None => Vec::new(),
    };
    Ok(response::json(StatusCode::OK, &CallDocuments { items }))
}

pub(crate) async fn read(
    state: &State,
    headers: &HeaderMap,
    (call, id): (&str, &str),
) -> Result<Response<Body>, Error> {
    let grant = granted(state, headers, call)?;
    let id = path::id("id", id)?;
    let subject = grant.subject.ok_or(Error::NotFound)?;
    let tenant = Tenant::new(grant.tenant);
    let mut connection = state.reads.connection().await?;
    let document = documents::get(&mut connection, tenant, subject, id)
        .await?
        .ok_or(Error::NotFound)?;
    drop(connection);
    bytes_of(state, tenant, &document).await
}

/// What the request's call token grants, if it is one for `call`.
fn granted(state: &State, headers: &HeaderMap, call: &str) -> Result<CallGrant, Error> {
    // Without APP_CALL_TOKEN_SECRET nobody passes.
    let Some(key) = state.config.call_tokens.as_deref() else {
        return Err(refused("no_secret", AuthFailure::Invalid));
    };
    let token = bearer::token(headers).map_err(|e| {
        let failure = AuthFailure::from(e);
        refused(failure.as_str(), failure)
    })?;
    key.verify(token, call)
        .map_err(|e| refused(e.as_str(), failure_of(&e)))
}

fn refused(reason: &str, failure: AuthFailure) -> Error {
    tracing::info!(reason, "call token refused");
    Error::Unauthorized(failure)
}

fn failure_of(error: &CallTokenError) -> AuthFailure {
    match error {
        CallTokenError::Expired => AuthFailure::Expired,
        CallTokenError::OtherCall => AuthFailure::BadClaims,
        CallTokenError::Invalid | CallTokenError::WeakSecret | CallTokenError::Unsigned(_) => {
            AuthFailure::Invalid
        }
    }
}
