//! Request bodies: read up to a limit (413 beyond it), JSON parsed with the position of a
//! syntax error.

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::Value;

use crate::{Error, Issue};

/// Largest JSON request of the call routes (an input, config and secrets).
pub const JSON_LIMIT: usize = 8 * 1024 * 1024;

pub async fn read(request: Request<Incoming>, limit: usize) -> Result<Bytes, Error> {
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(Error::PayloadTooLarge { limit });
    }
    match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => {
            Err(Error::PayloadTooLarge { limit })
        }
        Err(error) => Err(Error::BadRequest(vec![Issue::new(
            "",
            format!("the body could not be read: {error}"),
        )])),
    }
}

pub async fn json(request: Request<Incoming>) -> Result<Value, Error> {
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
