//! Request bodies: read up to a limit (413 beyond it, after the oversized body is drained so its
//! sender reads the answer: `telemetry::request_body`), JSON parsed with the position of a
//! syntax error.

use bytes::Bytes;
use http::Request;
use hyper::body::Incoming;
use serde_json::Value;
use service::http::body::{self as request_body, Refused};

use crate::{Error, Issue};

/// Largest JSON request of the call routes (an input, config and secrets).
pub(crate) const JSON_LIMIT: usize = 8 * 1024 * 1024;

pub(crate) async fn read(request: Request<Incoming>, limit: usize) -> Result<Bytes, Error> {
    let (parts, body) = request.into_parts();
    request_body::read(&parts.headers, body, limit)
        .await
        .map_err(|refused| match refused {
            Refused::TooLarge { limit } => Error::PayloadTooLarge { limit },
            Refused::Unreadable(why) => Error::BadRequest(vec![Issue::new(
                "",
                format!("the body could not be read: {why}"),
            )]),
        })
}

pub(crate) async fn json(request: Request<Incoming>) -> Result<Value, Error> {
    let bytes = read(request, JSON_LIMIT).await?;
    serde_json::from_slice(&bytes).map_err(|error| {
        Error::BadRequest(vec![Issue::new(
            "",
            format!(
                "not valid JSON (line {}, column {})",
                error.line(),
                error.column()
            ),
        )])
    })
}
