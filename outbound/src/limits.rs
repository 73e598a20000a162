//! The numbers that bound vendor HTTP (SPEC §8 "HTTP requests per call", "HTTP response").

use std::time::Duration;

/// Largest response body handed to a module.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// Largest request body a module may send; the same as a response, so a module cannot use the
/// runner to push more than it could receive.
pub const MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;
/// Vendor requests one call may make.
pub(crate) const MAX_REQUESTS_PER_CALL: u32 = 25;
/// Redirects followed for one request, all to the original scheme, host and port.
pub(crate) const MAX_REDIRECTS: usize = 5;
/// Timeout of a request that names none.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest timeout a request may ask for.
pub(crate) const MAX_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The timeout of one vendor request: the module's wish (default 10 s, at most 30 s), cut to what
/// is left of the call's deadline so a request never outlives the call that made it.
pub fn request_timeout(requested_ms: Option<u64>, remaining: Duration) -> Duration {
    let wanted = requested_ms.map_or(DEFAULT_REQUEST_TIMEOUT, Duration::from_millis);
    wanted.min(MAX_REQUEST_TIMEOUT).min(remaining)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLENTY: Duration = Duration::from_secs(60);

    #[test]
    fn defaults_to_ten_seconds() {
        assert_eq!(request_timeout(None, PLENTY), Duration::from_secs(10));
    }

    #[test]
    fn honours_a_shorter_or_longer_wish_up_to_thirty_seconds() {
        assert_eq!(
            request_timeout(Some(250), PLENTY),
            Duration::from_millis(250)
        );
        assert_eq!(
            request_timeout(Some(20_000), PLENTY),
            Duration::from_secs(20)
        );
        assert_eq!(
            request_timeout(Some(120_000), PLENTY),
            Duration::from_secs(30)
        );
        assert_eq!(
            request_timeout(Some(u64::MAX), PLENTY),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn never_outlives_the_call() {
        let remaining = Duration::from_millis(1_500);
        assert_eq!(request_timeout(None, remaining), remaining);
        assert_eq!(request_timeout(Some(30_000), remaining), remaining);
        assert_eq!(request_timeout(Some(10), Duration::ZERO), Duration::ZERO);
    }
}
