//! The one response writer of every listener: JSON answers, the error envelope, and the headers
//! every answer carries (`x-request-id`; `Cache-Control: no-store` unless the route set its own,
//! SPEC §8 rule 5).
//!
//! Handlers build answers without knowing the request id; [`finish`], which every listener
//! calls last, adds it. An answer that could not be serialised is marked, and `finish` gives it
//! the envelope of an internal error carrying the real request id.

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use serde::Serialize;

use super::envelope::{ErrorEnvelope, HttpError};
use super::request_id;

/// The body of every answer: a full buffer or a stream (module downloads).
pub type Body = BoxBody<Bytes, std::io::Error>;

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

/// Marks an answer whose body could not be serialised (see [`finish`]).
#[derive(Debug, Clone, Copy)]
struct Unserialisable;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A JSON answer.
pub fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(status, bytes.into()),
        Err(error) => unserialisable(&error),
    }
}

/// A JSON answer already serialised (e.g. by a read cache).
pub fn json_bytes(status: StatusCode, bytes: Bytes) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

/// The content type of Prometheus text exposition.
pub const EXPOSITION: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A plain-text 200 (the metrics exposition).
pub fn text(body: impl Into<Bytes>, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(full(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The error envelope of `error`, with the headers it implies.
pub fn error(error: &impl HttpError, request_id: &str) -> Response<Body> {
    let mut response = match serde_json::to_vec(&ErrorEnvelope::of(error, request_id)) {
        Ok(bytes) => json_bytes(error.status(), bytes.into()),
        Err(failure) => unserialisable(&failure),
    };
    error.headers(response.headers_mut());
    response
}

fn unserialisable(error: &serde_json::Error) -> Response<Body> {
    tracing::error!(%error, "answer did not serialise");
    let mut response = json_bytes(StatusCode::INTERNAL_SERVER_ERROR, Bytes::new());
    response.extensions_mut().insert(Unserialisable);
    response
}

/// The body of an internal error, written by hand so that it cannot fail. Request ids are
/// letters, digits, `.`, `_`, `-` or a UUID ([`request_id`]), so they need no escaping.
fn internal_error_body(request_id: &str) -> Bytes {
    format!(
        r#"{{"error":{{"code":"internal","message":"Internal error.","requestId":"{request_id}"}}}}"#
    )
    .into()
}

/// Headers every answer carries, and the envelope of an answer that did not serialise.
pub fn finish(response: &mut Response<Body>, request_id: &str) {
    if response
        .extensions_mut()
        .remove::<Unserialisable>()
        .is_some()
    {
        *response.body_mut() = full(internal_error_body(request_id));
    }
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert(request_id::HEADER, value);
    }
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, NO_STORE);
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use serde::ser::Error as _;
    use serde_json::Value;

    use super::*;
    use crate::http::Unrouted;

    async fn body_of(response: Response<Body>) -> Value {
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        serde_json::from_slice(&bytes).expect("JSON")
    }

    struct Refuses;

    impl Serialize for Refuses {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(S::Error::custom("refuses"))
        }
    }

    #[tokio::test]
    async fn an_answer_that_does_not_serialise_becomes_an_internal_error_with_the_request_id() {
        let mut response = json(StatusCode::OK, &Refuses);
        finish(&mut response, "req-42");
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(response.headers()[request_id::HEADER], "req-42");
        let body = body_of(response).await;
        assert_eq!(body["error"]["code"], "internal");
        assert_eq!(body["error"]["requestId"], "req-42");
    }

    #[tokio::test]
    async fn errors_carry_their_headers_and_every_answer_the_common_ones() {
        let mut response = error(
            &Unrouted::MethodNotAllowed {
                allow: "GET, HEAD".into(),
            },
            "r-1",
        );
        finish(&mut response, "r-1");
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()[http::header::ALLOW], "GET, HEAD");
        assert_eq!(response.headers()[CACHE_CONTROL], "no-store");
        assert_eq!(body_of(response).await["error"]["requestId"], "r-1");
    }

    #[test]
    fn a_route_keeps_its_own_cache_control() {
        let mut response = json(StatusCode::OK, &1);
        response
            .headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("max-age=60"));
        finish(&mut response, "r");
        assert_eq!(response.headers()[CACHE_CONTROL], "max-age=60");
    }
}
