//! Reading a response body without ever holding more than the limit: for a module, a declared
//! length over it is refused before reading, and a streamed body is cut off as soon as it
//! passes it; for a delivery's record, only a prefix is read and the rest left unread.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use http::header::{CONTENT_LENGTH, HeaderMap};

use crate::error::OutboundError;
use crate::limits::MAX_RESPONSE_BYTES;

/// The whole body of `response`, at most `MAX_RESPONSE_BYTES`. `head` says the request was a
/// HEAD, whose `Content-Length` describes a body that is not sent.
pub(crate) async fn read_limited(
    response: reqwest::Response,
    head: bool,
) -> Result<Bytes, OutboundError> {
    let declared = if head {
        None
    } else {
        declared_length(response.headers())
    };
    if declared.is_some_and(|length| length > MAX_RESPONSE_BYTES as u64) {
        return Err(OutboundError::TooLarge);
    }
    let chunks = response
        .bytes_stream()
        .map(|chunk| chunk.map_err(OutboundError::from_reqwest));
    collect_limited(chunks, declared.unwrap_or(0)).await
}

/// Collects chunks until the stream ends or the total passes the limit. `expected` (a declared
/// length) only sizes the first allocation, never past the limit: the vendor may be lying.
async fn collect_limited<S>(mut chunks: S, expected: u64) -> Result<Bytes, OutboundError>
where
    S: Stream<Item = Result<Bytes, OutboundError>> + Unpin,
{
    let capacity = usize::try_from(expected)
        .unwrap_or(MAX_RESPONSE_BYTES)
        .min(MAX_RESPONSE_BYTES);
    let mut body = BytesMut::with_capacity(capacity);
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(OutboundError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// The first `max` bytes of `response`'s body at most; the rest is never read.
pub(crate) async fn read_prefix(
    response: reqwest::Response,
    max: usize,
) -> Result<Bytes, OutboundError> {
    let mut chunks = response.bytes_stream();
    let mut prefix = BytesMut::with_capacity(max);
    while prefix.len() < max {
        let Some(chunk) = chunks.next().await else {
            break;
        };
        let chunk = chunk.map_err(OutboundError::from_reqwest)?;
        let room = max - prefix.len();
        prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok(prefix.freeze())
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use futures::stream;
    use http::HeaderValue;

    use super::*;

    fn chunks(sizes: &[usize]) -> impl Stream<Item = Result<Bytes, OutboundError>> + Unpin {
        let owned: Vec<_> = sizes
            .iter()
            .map(|&n| Ok(Bytes::from(vec![b'x'; n])))
            .collect();
        stream::iter(owned)
    }

    #[tokio::test]
    async fn accepts_a_body_of_exactly_the_limit() {
        let half = MAX_RESPONSE_BYTES / 2;
        let body = collect_limited(chunks(&[half, half]), 0)
            .await
            .expect("at the limit");
        assert_eq!(body.len(), MAX_RESPONSE_BYTES);
    }

    #[tokio::test]
    async fn refuses_one_byte_more_and_stops_reading() {
        let result = collect_limited(chunks(&[MAX_RESPONSE_BYTES, 1]), 0).await;
        assert_eq!(result, Err(OutboundError::TooLarge));
    }

    #[tokio::test]
    async fn a_declared_length_is_not_trusted() {
        let body = collect_limited(chunks(&[3]), u64::MAX)
            .await
            .expect("small body");
        assert_eq!(body.len(), 3);
    }

    #[tokio::test]
    async fn passes_stream_errors_through() {
        let failing = stream::iter(vec![
            Ok(Bytes::from_static(b"ab")),
            Err(OutboundError::Transport("reset".to_owned())),
        ]);
        let result = collect_limited(failing, 0).await;
        assert_eq!(result, Err(OutboundError::Transport("reset".to_owned())));
    }

    #[test]
    fn reads_the_declared_length() {
        let mut headers = HeaderMap::new();
        assert_eq!(declared_length(&headers), None);
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("8388609"));
        assert_eq!(declared_length(&headers), Some(8_388_609));
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("nonsense"));
        assert_eq!(declared_length(&headers), None);
    }
}
