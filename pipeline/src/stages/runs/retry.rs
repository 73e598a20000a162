//! When a failed app call is tried again (SPEC §2.9 `retry`, §8 "Action retry", "Step retry"):
//!
//! - the action's own policy first: `maxAttempts` attempts in all (absent: one), the delay after
//!   attempt *n* `backoffMs` × *n*; every attempt carries the idempotency key the platform
//!   derives from the run and the step, so a non-idempotent action may be retried too;
//! - then the step's, for a `call_app` step: three attempts of the whole call (each with the
//!   action's attempts again), 2 s apart and doubling, within the step's two-minute deadline;
//! - an attempt that could not end before the deadline (its delay plus the action's
//!   `timeoutMs`) is not started.
//!
//! Only a failure another attempt may fix is retried: the runner could not run the call
//! (`busy`, `unreachable`, `module_unavailable`, `internal`), the call timed out or trapped, or
//! the module answered an error with `retryable: true`. A call the install refuses (disabled,
//! missing secret, blocked module), an input or output its schema rejects and a module that is
//! not runnable fail at once.

use std::time::Duration;

use serde_json::Value;

/// Step attempts of a `call_app` step.
pub(crate) const STEP_ATTEMPTS: i32 = 3;
/// The delay after the first failed step attempt, doubling after each.
const STEP_FIRST_DELAY: Duration = Duration::from_secs(2);
/// How long a step may take, retries included.
pub(crate) const STEP_DEADLINE: Duration = Duration::from_secs(120);

/// An action's timing and retry policy, from its manifest entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ActionPolicy {
    pub(crate) timeout: Duration,
    pub(crate) max_attempts: i32,
    pub(crate) backoff: Duration,
}

impl ActionPolicy {
    pub(crate) fn of(action: &Value) -> Self {
        let retry = &action["retry"];
        Self {
            timeout: Duration::from_millis(action["timeoutMs"].as_u64().unwrap_or(15_000)),
            max_attempts: retry["maxAttempts"]
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .unwrap_or(1)
                .max(1),
            backoff: Duration::from_millis(retry["backoffMs"].as_u64().unwrap_or(0)),
        }
    }
}

/// Where a call stands after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attempts {
    /// The step attempt the failed attempt belonged to (from 1).
    pub(crate) step_attempt: i32,
    /// Action attempts made in that step attempt, the failed one included.
    pub(crate) action_attempts: i32,
    /// Whether the step retries (`call_app` steps; an app rule's call only has the action's).
    pub(crate) step_retries: bool,
}

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// The action's next attempt, after the delay.
    Action { after: Duration },
    /// The step's next attempt, after the delay: the action's attempts start over.
    Step { after: Duration },
    /// No more attempts: the call failed.
    GiveUp,
}

/// The next attempt after a failure (`retryable`: another attempt may fix it), given the time
/// `left` before the step's deadline.
pub(crate) fn after_failure(
    policy: ActionPolicy,
    attempts: Attempts,
    retryable: bool,
    left: Duration,
) -> Next {
    if !retryable {
        return Next::GiveUp;
    }
    let fits = |after: Duration| after + policy.timeout <= left;
    if attempts.action_attempts < policy.max_attempts {
        let after = policy.backoff * attempts.action_attempts.unsigned_abs();
        return if fits(after) {
            Next::Action { after }
        } else {
            Next::GiveUp
        };
    }
    if attempts.step_retries && attempts.step_attempt < STEP_ATTEMPTS {
        let after = STEP_FIRST_DELAY * 2u32.pow(attempts.step_attempt.unsigned_abs() - 1);
        if fits(after) {
            return Next::Step { after };
        }
    }
    Next::GiveUp
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const MINUTES: Duration = Duration::from_secs(120);

    fn attempts(step_attempt: i32, action_attempts: i32) -> Attempts {
        Attempts {
            step_attempt,
            action_attempts,
            step_retries: true,
        }
    }

    #[test]
    fn the_policy_reads_the_manifest_with_one_attempt_when_absent() {
        let absent = ActionPolicy::of(&json!({}));
        assert_eq!(
            absent,
            ActionPolicy {
                timeout: Duration::from_secs(15),
                max_attempts: 1,
                backoff: Duration::ZERO
            }
        );
        let set = ActionPolicy::of(
            &json!({"timeoutMs": 500, "retry": {"maxAttempts": 3, "backoffMs": 200}}),
        );
        assert_eq!((set.max_attempts, set.backoff.as_millis()), (3, 200));
    }

    #[test]
    fn the_action_retries_first_with_backoff_times_the_attempt_number() {
        let policy = ActionPolicy::of(&json!({"retry": {"maxAttempts": 3, "backoffMs": 200}}));
        assert_eq!(
            after_failure(policy, attempts(1, 1), true, MINUTES),
            Next::Action {
                after: Duration::from_millis(200)
            }
        );
        assert_eq!(
            after_failure(policy, attempts(1, 2), true, MINUTES),
            Next::Action {
                after: Duration::from_millis(400)
            }
        );
    }

    #[test]
    fn then_the_step_retries_two_seconds_apart_and_doubling() {
        let policy = ActionPolicy::of(&json!({"timeoutMs": 1000}));
        assert_eq!(
            after_failure(policy, attempts(1, 1), true, MINUTES),
            Next::Step {
                after: Duration::from_secs(2)
            }
        );
        assert_eq!(
            after_failure(policy, attempts(2, 1), true, MINUTES),
            Next::Step {
                after: Duration::from_secs(4)
            }
        );
        assert_eq!(
            after_failure(policy, attempts(3, 1), true, MINUTES),
            Next::GiveUp
        );
        let rule = Attempts {
            step_retries: false,
            ..attempts(1, 1)
        };
        assert_eq!(after_failure(policy, rule, true, MINUTES), Next::GiveUp);
    }

    #[test]
    fn no_attempt_starts_that_could_not_end_before_the_deadline() {
        let policy = ActionPolicy::of(&json!({"timeoutMs": 60000}));
        assert_eq!(
            after_failure(policy, attempts(1, 1), true, Duration::from_secs(62)),
            Next::Step {
                after: Duration::from_secs(2)
            }
        );
        assert_eq!(
            after_failure(policy, attempts(1, 1), true, Duration::from_secs(61)),
            Next::GiveUp
        );
    }

    #[test]
    fn a_failure_another_attempt_cannot_fix_is_not_retried() {
        let policy = ActionPolicy::of(&json!({"retry": {"maxAttempts": 5, "backoffMs": 0}}));
        assert_eq!(
            after_failure(policy, attempts(1, 1), false, MINUTES),
            Next::GiveUp
        );
    }
}
