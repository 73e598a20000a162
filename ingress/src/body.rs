//! Request bodies: a route's size limit is enforced on the declared length before a handler
//! runs (`service::http::body` drains an oversized body first, so the client still sending it
//! reads the 413 instead of a reset).

use http::HeaderMap;
use service::http::body::{self, Refused};

use crate::error::{Error, Location};

/// Body limit of the routes that take JSON (SPEC leaves it open; documented in the README).
pub(crate) const JSON_LIMIT: usize = 1024 * 1024;

/// Fails with 413 when the declared length is over `limit`.
pub(crate) async fn refuse_declared_oversize<B>(
    headers: &HeaderMap,
    body: &mut B,
    limit: usize,
) -> Result<(), Error>
where
    B: hyper::body::Body + Unpin,
{
    body::refuse_declared(headers, body, limit)
        .await
        .map_err(|refused| match refused {
            Refused::TooLarge { limit } => Error::PayloadTooLarge { limit },
            Refused::Unreadable(why) => {
                Error::validation(Location::Body, "", format!("body could not be read: {why}"))
            }
        })
}
