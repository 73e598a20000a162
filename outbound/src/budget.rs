//! The per-call allowance of vendor requests (SPEC §8: 25 per call). One budget lives in a call's
//! host state and is shared by the kernel `http_request` and the platform `http_send`, so a module
//! cannot double its allowance by using both.

use crate::error::OutboundError;
use crate::limits::MAX_REQUESTS_PER_CALL;

/// Counts the vendor requests of one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestBudget {
    used: u32,
}

impl RequestBudget {
    /// Takes one request from the allowance; refused once the call has sent its 25. Redirects a
    /// request follows are part of that request, not extra takes.
    pub fn try_take(&mut self) -> Result<(), OutboundError> {
        if self.used >= MAX_REQUESTS_PER_CALL {
            return Err(OutboundError::TooManyRequests);
        }
        self.used += 1;
        Ok(())
    }

    /// Requests taken so far.
    pub fn used(&self) -> u32 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_exactly_twenty_five_requests() {
        let mut budget = RequestBudget::default();
        for taken in 1..=25 {
            budget.try_take().expect("within the allowance");
            assert_eq!(budget.used(), taken);
        }
        let refused = budget.try_take().expect_err("the 26th is refused");
        assert_eq!(refused, OutboundError::TooManyRequests);
        assert_eq!(refused.code(), "too_many_requests");
        assert_eq!(budget.used(), 25, "a refused take is not counted");
    }
}
