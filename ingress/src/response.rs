//! Building responses: JSON bodies, the error envelope, and the headers every response carries.

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use serde::Serialize;

use crate::error::Error;
use telemetry::request_id;

/// Body of every response: a full buffer, or a stream (module downloads).
pub type Body = BoxBody<Bytes, std::io::Error>;

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A JSON response. Serialising our own types cannot fail; if it did, the answer is a 500.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(status, bytes.into()),
        Err(error) => {
            tracing::error!(%error, "response did not serialise");
            let mut response = Response::new(full(&b"{\"error\":{\"code\":\"internal\",\"message\":\"Internal error.\",\"requestId\":\"\"}}"[..]));
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response.headers_mut().insert(CONTENT_TYPE, JSON);
            response
        }
    }
}

/// A JSON answer already serialised (e.g. by the read cache).
pub fn json_bytes(status: StatusCode, bytes: Bytes) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

/// The error envelope for `error`, with the headers the error implies.
pub fn error(error: &Error, request_id: &str) -> Response<Body> {
    let mut response = json(error.status(), &error.envelope(request_id));
    let headers = response.headers_mut();
    match error {
        Error::MethodNotAllowed { allow } => {
            if let Ok(value) = HeaderValue::from_str(allow) {
                headers.insert(http::header::ALLOW, value);
            }
        }
        Error::RateLimited {
            retry_after_seconds,
        } => {
            headers.insert(
                http::header::RETRY_AFTER,
                HeaderValue::from(*retry_after_seconds),
            );
        }
        Error::Unauthorized(_) => {
            headers.insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer"),
            );
        }
        _ => {}
    }
    response
}

/// Headers every response carries: the request id, and `Cache-Control: no-store` unless the
/// route set its own (SPEC §8 rule 5).
pub fn finish(response: &mut Response<Body>, request_id: &str) {
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert(request_id::HEADER, value);
    }
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, NO_STORE);
    }
}

/// 200 with a plain-text body (metrics exposition).
pub fn text(body: String, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(full(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
