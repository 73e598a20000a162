//! When a failed delivery is tried again (docs/outbound-webhooks.md): five attempts in all, the
//! first as soon as the event is recorded and the others 5 seconds, 5 minutes, 30 minutes and
//! 2 hours after the failure before them (the start of the schedule Standard Webhooks senders
//! publish). The fifth failure gives the delivery up: `exhausted`, and the tenant's admins are
//! notified. A retry asked for by hand is one attempt more, given up again if it fails.

use std::time::Duration;

/// The wait after failed attempt 1, 2, 3, 4.
const DELAYS: [Duration; 4] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 60 * 60),
];

/// After attempt `attempt` (from 1) of `allowed` failed: how long until the next one, or `None`
/// when the delivery is given up.
pub(super) fn after_failure(attempt: i32, allowed: i32) -> Option<Duration> {
    if attempt >= allowed {
        return None;
    }
    let index = usize::try_from(attempt - 1).unwrap_or(0);
    Some(DELAYS[index.min(DELAYS.len() - 1)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attempts a delivery gets by the schedule (`max_attempts`' default).
    const ATTEMPTS: i32 = 5;

    #[test]
    fn five_attempts_then_given_up() {
        let waits: Vec<_> = (1..=ATTEMPTS)
            .map(|attempt| after_failure(attempt, ATTEMPTS))
            .collect();
        assert_eq!(
            waits,
            [
                Some(Duration::from_secs(5)),
                Some(Duration::from_secs(300)),
                Some(Duration::from_secs(1800)),
                Some(Duration::from_secs(7200)),
                None
            ]
        );
    }

    #[test]
    fn a_retry_by_hand_is_one_attempt_more() {
        assert_eq!(after_failure(6, 6), None);
        assert_eq!(after_failure(2, 6), Some(Duration::from_secs(300)));
    }
}
