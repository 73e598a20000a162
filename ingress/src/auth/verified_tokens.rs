//! Tokens already verified, remembered until they expire, so a caller's second request costs a
//! map look-up instead of a signature check, a base64 decode and a JSON parse of its claims.
//!
//! The key is the whole token, so only the very bytes whose signature was checked are answered
//! from here; a token is kept no longer than its `exp` (the verifier would still accept it for
//! the leeway after that, and does, by checking it again). Refusals are never kept: a caller
//! cannot fill the memory with tokens that are not valid, and the memory kept for valid ones is
//! bounded by [`MAX_BYTES`].

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use foldhash::quality::RandomState;
use moka::Expiry;

use super::principal::Principal;

/// Upper bound on the memory of remembered tokens (tokens and principals).
const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// What a principal and its bookkeeping take beside the token, roughly.
const ENTRY_OVERHEAD: usize = 256;

/// A verified token's principal and when the token expires (`exp`, seconds since the epoch).
#[derive(Debug, Clone)]
struct Verified {
    principal: Principal,
    exp: u64,
}

/// Verified tokens by their text.
#[derive(Debug)]
pub(crate) struct VerifiedTokens {
    tokens: moka::sync::Cache<Arc<str>, Verified, RandomState>,
}

impl Default for VerifiedTokens {
    fn default() -> Self {
        Self {
            tokens: moka::sync::Cache::builder()
                .max_capacity(MAX_BYTES)
                .weigher(|token: &Arc<str>, _: &Verified| {
                    u32::try_from(token.len() + ENTRY_OVERHEAD).unwrap_or(u32::MAX)
                })
                .expire_after(UntilExp)
                // Keys are whole tokens: foldhash reads them several times faster than SipHash.
                .build_with_hasher(RandomState::default()),
        }
    }
}

impl VerifiedTokens {
    /// The principal of `token` when it was verified before and has not expired.
    pub(crate) fn get(&self, token: &str) -> Option<Principal> {
        let verified = self.tokens.get(token)?;
        // Expiry runs on moka's clock; this check keeps the answer exact to the second.
        (verified.exp > unix_now()).then_some(verified.principal)
    }

    /// Remembers a token the verifier accepted, unless it expires within the second.
    pub(crate) fn insert(&self, token: &str, principal: &Principal, exp: u64) {
        if time_to_live(exp, unix_now()).is_some() {
            let verified = Verified {
                principal: principal.clone(),
                exp,
            };
            self.tokens.insert(Arc::from(token), verified);
        }
    }
}

/// Each entry lives until its token's `exp`.
struct UntilExp;

impl Expiry<Arc<str>, Verified> for UntilExp {
    fn expire_after_create(
        &self,
        _token: &Arc<str>,
        verified: &Verified,
        _created_at: Instant,
    ) -> Option<Duration> {
        // `insert` keeps only tokens with time to live; one that ran out meanwhile goes at once.
        Some(time_to_live(verified.exp, unix_now()).unwrap_or(Duration::ZERO))
    }
}

/// How long a token with `exp` may be remembered at `now` (both seconds since the epoch).
fn time_to_live(exp: u64, now: u64) -> Option<Duration> {
    exp.checked_sub(now)
        .filter(|seconds| *seconds > 0)
        .map(Duration::from_secs)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::claims::Kind;
    use crate::auth::principal::tests::claims;

    fn principal() -> Principal {
        Principal::from_claims(claims(Kind::Human)).expect("valid claims")
    }

    #[test]
    fn a_token_is_remembered_until_its_exp_and_no_longer() {
        assert_eq!(time_to_live(100, 40), Some(Duration::from_secs(60)));
        assert_eq!(time_to_live(100, 100), None);
        assert_eq!(time_to_live(100, 160), None);
    }

    #[test]
    fn only_the_same_token_is_answered() {
        let tokens = VerifiedTokens::default();
        let principal = principal();
        tokens.insert("aaa.bbb.ccc", &principal, unix_now() + 600);
        assert_eq!(tokens.get("aaa.bbb.ccc"), Some(principal));
        assert_eq!(tokens.get("aaa.bbb.ccd"), None);
        assert_eq!(tokens.get("aaa.bbb"), None);
    }

    #[test]
    fn an_expired_token_is_not_remembered() {
        let tokens = VerifiedTokens::default();
        tokens.insert("old", &principal(), unix_now().saturating_sub(1));
        tokens.insert("now", &principal(), unix_now());
        assert_eq!(tokens.get("old"), None);
        assert_eq!(tokens.get("now"), None);
    }
}
