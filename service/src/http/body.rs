//! Request bodies under a size limit, the same way on every listener.
//!
//! A body over its limit is still read, up to [`DRAIN_BYTES`] or [`DRAIN_TIME`], before the 413
//! goes out: closing a connection the client is still writing to resets it, and the client
//! loses the answer it was about to read. A client that asked `Expect: 100-continue` is refused
//! on its head alone: reading would send `100 Continue`, inviting the very body being refused.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http::header::{CONTENT_LENGTH, EXPECT};
use http_body_util::BodyExt;
use hyper::body::Body;

/// How much of an oversized body is read and thrown away so that its sender reads the 413.
pub const DRAIN_BYTES: u64 = 64 * 1024 * 1024;
/// How long a listener keeps reading an oversized body for the same reason.
pub const DRAIN_TIME: Duration = Duration::from_secs(10);

/// Why a body was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the body is over {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the body could not be read: {0}")]
    Unreadable(String),
}

/// Refuses a body whose declared length is over `limit`, after draining it; `Ok` otherwise
/// (nothing read).
pub async fn refuse_declared<B>(
    headers: &HeaderMap,
    body: &mut B,
    limit: usize,
) -> Result<(), Refused>
where
    B: Body + Unpin,
{
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        if !awaits_continue(headers) {
            discard(body).await;
        }
        return Err(Refused::TooLarge { limit });
    }
    Ok(())
}

/// The whole body, at most `limit` bytes (one chunk is answered without a copy).
pub async fn read<B>(headers: &HeaderMap, mut body: B, limit: usize) -> Result<Bytes, Refused>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    refuse_declared(headers, &mut body, limit).await?;
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut length = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| Refused::Unreadable(error.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        length += data.len();
        if length > limit {
            discard(&mut body).await;
            return Err(Refused::TooLarge { limit });
        }
        chunks.push(data);
    }
    Ok(join(chunks, length))
}

fn awaits_continue(headers: &HeaderMap) -> bool {
    headers
        .get(EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

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

/// Reads and throws away the rest of `body`, within [`DRAIN_BYTES`] and [`DRAIN_TIME`].
async fn discard<B>(body: &mut B)
where
    B: Body + Unpin,
{
    let drain = async {
        let mut drained = 0u64;
        while drained < DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    drained += frame
                        .data_ref()
                        .map_or(0, |d| bytes::Buf::remaining(d) as u64);
                }
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use http_body_util::{Full, StreamBody};

    use super::*;

    fn declaring(length: u64) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
        headers
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        let body = Full::new(Bytes::from_static(b"0123456789"));
        assert_eq!(
            read(&declaring(10), body, 10).await,
            Ok(Bytes::from_static(b"0123456789"))
        );
    }

    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused() {
        let body = Full::new(Bytes::from_static(b"0123456789a"));
        assert_eq!(
            read(&declaring(11), body, 10).await,
            Err(Refused::TooLarge { limit: 10 })
        );
    }

    #[tokio::test]
    async fn a_streamed_body_is_refused_when_it_crosses_the_limit_and_drained() {
        let (sent, seen) = std::sync::mpsc::channel();
        let chunks = (0..5)
            .inspect(move |_| {
                let _ = sent.send(());
            })
            .map(|_| {
                Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from_static(
                    b"0123",
                )))
            });
        let counted = futures::stream::iter(chunks);
        let body = StreamBody::new(counted);
        assert_eq!(
            read(&HeaderMap::new(), body, 10).await,
            Err(Refused::TooLarge { limit: 10 })
        );
        assert_eq!(
            seen.try_iter().count(),
            5,
            "every chunk was read, the rest thrown away"
        );
    }

    #[tokio::test]
    async fn several_chunks_are_joined() {
        let chunks = ["ab", "cd", "e"].map(|c| {
            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from_static(
                c.as_bytes(),
            )))
        });
        let body = StreamBody::new(futures::stream::iter(chunks));
        assert_eq!(
            read(&HeaderMap::new(), body, 10).await,
            Ok(Bytes::from_static(b"abcde"))
        );
    }
}
