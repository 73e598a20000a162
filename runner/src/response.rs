//! Rendering answers: JSON bodies, the error envelope, the request id on every response.

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::Full;
use serde::Serialize;

use crate::Error;

pub type Body = Full<Bytes>;

pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => with_json(status, bytes),
        Err(error) => {
            tracing::error!(%error, "answer did not serialise");
            error_response(&Error::Internal("serialisation".into()), "")
        }
    }
}

pub fn error_response(error: &Error, request_id: &str) -> Response<Body> {
    let mut response = with_json(
        error.status(),
        serde_json::to_vec(&error.envelope(request_id)).unwrap_or_default(),
    );
    match error.cause() {
        Error::Unauthorized => {
            response.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer"),
            );
        }
        Error::MethodNotAllowed { allow } => {
            response
                .headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static(allow));
        }
        Error::Busy(_) => {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        _ => {}
    }
    response
}

fn with_json(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
