//! Request bodies: read up to a limit (413 beyond it), JSON parsed with the position of a
//! syntax error.
//!
//! A body over its limit is still read, up to [`DRAIN_BYTES`] or [`DRAIN_TIME`], before the 413
//! goes out: closing a connection the client is still writing to resets it, and the client
//! loses the answer it was about to read. A client that asked `Expect: 100-continue` is refused
//! before it sends anything.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::Request;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;

use crate::{Error, Issue};

/// Largest JSON request of the call routes (an input, config and secrets).
pub const JSON_LIMIT: usize = 8 * 1024 * 1024;
/// How much of an oversized body is read and thrown away so that its sender reads the 413.
const DRAIN_BYTES: u64 = 64 * 1024 * 1024;
/// How long the runner keeps reading an oversized body for the same reason.
const DRAIN_TIME: Duration = Duration::from_secs(10);

pub async fn read(request: Request<Incoming>, limit: usize) -> Result<Bytes, Error> {
    let headers = request.headers();
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let awaits_continue = headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let mut body = request.into_body();
    if declared.is_some_and(|n| n > limit as u64) {
        // Reading would send `100 Continue`, inviting the very body being refused.
        if !awaits_continue {
            discard(&mut body).await;
        }
        return Err(Error::PayloadTooLarge { limit });
    }
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut length = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| {
            Error::BadRequest(vec![Issue::new(
                "",
                format!("the body could not be read: {error}"),
            )])
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        length += data.len();
        if length > limit {
            discard(&mut body).await;
            return Err(Error::PayloadTooLarge { limit });
        }
        chunks.push(data);
    }
    Ok(join(chunks, length))
}

/// One chunk is the common case and is answered without a copy.
fn join(mut chunks: Vec<Bytes>, length: usize) -> Bytes {
    if chunks.len() == 1 {
        return chunks.pop().unwrap_or_default();
    }
    let mut joined = BytesMut::with_capacity(length);
    for chunk in chunks {
        joined.extend_from_slice(&chunk);
    }
    joined.freeze()
}

async fn discard(body: &mut Incoming) {
    let drain = async {
        let mut drained = 0u64;
        while drained < DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => drained += frame.data_ref().map_or(0, |d| d.len() as u64),
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
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
