//! Per-caller rate limiting (SPEC §8): `API_RATE_LIMIT_PER_MINUTE` requests a minute per caller
//! per instance, GCRA from governor. A caller is a tenant user or service user, an applicant's
//! submission, or on public routes the client address.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter as Gcra};
use http::HeaderValue;
use http::header::{HeaderMap, HeaderName};
use uuid::Uuid;

// Header names made once, not parsed from text on every answer.
const LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// Who a request is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Caller {
    /// A human or machine user of a tenant.
    User { tenant: Uuid, sub: Arc<str> },
    /// An applicant's submission: every tab of the applicant shares it.
    Submission(Uuid),
    /// An unauthenticated client.
    Address(IpAddr),
}

/// The outcome of counting one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Allowed {
        limit: u32,
        remaining: u32,
        reset_seconds: u64,
    },
    Limited {
        limit: u32,
        retry_after_seconds: u64,
        reset_seconds: u64,
    },
}

impl Decision {
    /// `x-ratelimit-*` headers of a counted response.
    pub(crate) fn write_headers(&self, headers: &mut HeaderMap) {
        let (limit, remaining, reset) = match *self {
            Decision::Allowed {
                limit,
                remaining,
                reset_seconds,
            } => (limit, remaining, reset_seconds),
            Decision::Limited {
                limit,
                reset_seconds,
                ..
            } => (limit, 0, reset_seconds),
        };
        headers.insert(LIMIT, HeaderValue::from(limit));
        headers.insert(REMAINING, HeaderValue::from(remaining));
        headers.insert(RESET, HeaderValue::from(reset));
    }
}

type Limiter<C> = Gcra<Caller, DashMapStateStore<Caller>, C, StateInformationMiddleware>;

/// The per-instance limiter; `None` inside when the limit is 0 (off). The clock is the system's
/// except in tests, which advance a fake one instead of waiting.
#[derive(Debug)]
pub(crate) struct RateLimiter<C: Clock = DefaultClock> {
    limiter: Option<Limiter<C>>,
    per_minute: u32,
}

impl RateLimiter {
    pub(crate) fn new(per_minute: u32) -> Self {
        Self::with_clock(per_minute, DefaultClock::default())
    }
}

impl<C: Clock> RateLimiter<C> {
    fn with_clock(per_minute: u32, clock: C) -> Self {
        let limiter = NonZeroU32::new(per_minute).map(|n| {
            Gcra::dashmap_with_clock(Quota::per_minute(n), clock)
                .with_middleware::<StateInformationMiddleware>()
        });
        Self {
            limiter,
            per_minute,
        }
    }

    /// Counts one request of `caller`. `None` when limiting is off.
    pub(crate) fn check(&self, caller: &Caller) -> Option<Decision> {
        let limiter = self.limiter.as_ref()?;
        let limit = self.per_minute;
        let per_request = Duration::from_secs(60) / limit;
        Some(match limiter.check_key(caller) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                let used = u64::from(limit.saturating_sub(remaining));
                Decision::Allowed {
                    limit,
                    remaining,
                    reset_seconds: ceil_seconds(per_request * used as u32),
                }
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(limiter.clock().now());
                Decision::Limited {
                    limit,
                    retry_after_seconds: ceil_seconds(wait).max(1),
                    reset_seconds: ceil_seconds(per_request * limit),
                }
            }
        })
    }

    /// Forgets callers whose bucket is full again, so idle callers cost no memory.
    pub(crate) fn forget_idle(&self) {
        if let Some(limiter) = &self.limiter {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

fn ceil_seconds(duration: Duration) -> u64 {
    let secs = duration.as_secs();
    if duration.subsec_nanos() > 0 {
        secs + 1
    } else {
        secs
    }
}

#[cfg(test)]
mod tests {
    use governor::clock::FakeRelativeClock;

    use super::*;

    fn limiter(per_minute: u32) -> (RateLimiter<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        (RateLimiter::with_clock(per_minute, clock.clone()), clock)
    }

    fn user(sub: &str) -> Caller {
        Caller::User {
            tenant: Uuid::from_u128(1),
            sub: sub.into(),
        }
    }

    #[test]
    fn counts_down_then_limits_with_retry_after() {
        let (limiter, clock) = limiter(3);
        let caller = user("a");
        for expected in [2, 1, 0] {
            match limiter.check(&caller) {
                Some(Decision::Allowed {
                    limit: 3,
                    remaining,
                    ..
                }) => assert_eq!(remaining, expected),
                other => panic!("expected allowed, got {other:?}"),
            }
        }
        match limiter.check(&caller) {
            Some(Decision::Limited {
                retry_after_seconds,
                ..
            }) => assert_eq!(retry_after_seconds, 20, "one request every 20 s"),
            other => panic!("expected limited, got {other:?}"),
        }
        clock.advance(Duration::from_secs(19));
        assert!(matches!(
            limiter.check(&caller),
            Some(Decision::Limited { .. })
        ));
        clock.advance(Duration::from_secs(1));
        assert!(
            matches!(
                limiter.check(&caller),
                Some(Decision::Allowed { remaining: 0, .. })
            ),
            "after 20 s one request is allowed again"
        );
    }

    #[test]
    fn callers_are_counted_apart() {
        let (limiter, _clock) = limiter(1);
        assert!(matches!(
            limiter.check(&user("a")),
            Some(Decision::Allowed { .. })
        ));
        assert!(matches!(
            limiter.check(&user("b")),
            Some(Decision::Allowed { .. })
        ));
        assert!(matches!(
            limiter.check(&Caller::Submission(Uuid::from_u128(9))),
            Some(Decision::Allowed { .. })
        ));
        assert!(matches!(
            limiter.check(&user("a")),
            Some(Decision::Limited { .. })
        ));
    }

    #[test]
    fn zero_turns_limiting_off() {
        let (limiter, _clock) = limiter(0);
        assert_eq!(limiter.check(&user("a")), None);
    }

    #[test]
    fn headers_are_written() {
        let mut headers = HeaderMap::new();
        Decision::Allowed {
            limit: 600,
            remaining: 599,
            reset_seconds: 1,
        }
        .write_headers(&mut headers);
        assert_eq!(headers["x-ratelimit-limit"], "600");
        assert_eq!(headers["x-ratelimit-remaining"], "599");
        assert_eq!(headers["x-ratelimit-reset"], "1");
    }
}
