//! Why an outbound request (a module's vendor request, a webhook delivery) failed. Messages
//! reach the module, the delivery's attempt history and logs, so they name hosts and header
//! names at most: never a header value, a URL query or a body, which may hold secrets.

use std::error::Error as StdError;

use crate::resolve::NoPublicAddress;

/// An outbound request refused or not completed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    /// The target is not approved or not allowed by the address policy.
    #[error("not allowed: {0}")]
    NotAllowed(String),
    /// The request itself is malformed (method, URL, header).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The request or response body is over its limit.
    #[error("body over {} bytes", crate::limits::MAX_RESPONSE_BYTES)]
    TooLarge,
    /// The call already sent its allowance of requests.
    #[error(
        "more than {} requests in one call",
        crate::limits::MAX_REQUESTS_PER_CALL
    )]
    TooManyRequests,
    /// The exchange did not finish within its timeout.
    #[error("timed out")]
    Timeout,
    /// Connecting, sending or reading failed.
    #[error("transport: {0}")]
    Transport(String),
}

impl OutboundError {
    /// Stable code handed to the module.
    pub fn code(&self) -> &'static str {
        match self {
            OutboundError::NotAllowed(_) => "not_allowed",
            OutboundError::InvalidRequest(_) => "invalid_request",
            OutboundError::TooLarge => "too_large",
            OutboundError::TooManyRequests => "too_many_requests",
            OutboundError::Timeout => "timeout",
            OutboundError::Transport(_) => "transport",
        }
    }

    /// Maps a reqwest failure. Our resolver's refusal surfaces as a connect error deep in the
    /// source chain, and is a policy refusal rather than a network fault.
    pub(crate) fn from_reqwest(err: reqwest::Error) -> Self {
        if err.is_timeout() {
            return OutboundError::Timeout;
        }
        if let Some(refusal) = find_source::<NoPublicAddress>(&err) {
            return OutboundError::NotAllowed(refusal.to_string());
        }
        OutboundError::Transport(describe(err))
    }
}

/// The error and its causes, without the URL reqwest attaches (its query may hold an API key).
fn describe(err: reqwest::Error) -> String {
    let err = err.without_url();
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The first cause of type `E`. An `io::Error` reports its payload's *source* rather than the
/// payload itself, so its payload is looked at explicitly.
fn find_source<'a, E: StdError + 'static>(err: &'a (dyn StdError + 'static)) -> Option<&'a E> {
    let mut current = Some(err);
    while let Some(cause) = current {
        if let Some(found) = cause.downcast_ref::<E>() {
            return Some(found);
        }
        let payload = cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<E>());
        if payload.is_some() {
            return payload;
        }
        current = cause.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let cases = [
            (OutboundError::NotAllowed("x".into()), "not_allowed"),
            (OutboundError::InvalidRequest("x".into()), "invalid_request"),
            (OutboundError::TooLarge, "too_large"),
            (OutboundError::TooManyRequests, "too_many_requests"),
            (OutboundError::Timeout, "timeout"),
            (OutboundError::Transport("x".into()), "transport"),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code);
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Box<dyn StdError + Send + Sync>);

    #[test]
    fn finds_a_cause_deep_in_the_chain() {
        let outer = Outer(Box::new(Outer(Box::new(NoPublicAddress::new(
            "api.example.com",
        )))));
        let found = find_source::<NoPublicAddress>(&outer).expect("found");
        assert!(found.to_string().contains("api.example.com"));
    }

    #[test]
    fn finds_a_cause_wrapped_in_an_io_error() {
        let io = std::io::Error::other(NoPublicAddress::new("api.example.com"));
        let outer = Outer(Box::new(io));
        assert!(find_source::<NoPublicAddress>(&outer).is_some());
    }

    #[test]
    fn other_causes_are_not_mistaken_for_a_refusal() {
        let outer = Outer(Box::new(std::io::Error::other("connection refused")));
        assert!(find_source::<NoPublicAddress>(&outer).is_none());
    }
}
