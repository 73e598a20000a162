//! The app's circuit as a call sees it (SPEC §3.7; the circuits stage moves it): a closed
//! circuit lets calls out; an open one fails them at once with `app_circuit_open`, recorded
//! like any attempt but never sent; 30 s after it opened, one call across every pipeline
//! claims the trial (a compare-and-set to `half_open`) and goes out. What a call that ran the
//! module says about its app travels to the circuits stage only when it can move the circuit:
//! a counted failure, a success after failures, a trial's result.

use sqlx::PgPool;
use topics::circuits::Verdict;
use uuid::Uuid;

use super::attempt::{Attempted, Ended, Reached};
use super::target::Circuit;
use crate::Error;

/// Whether a call goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It goes out; `trial`: as the half-open circuit's one trial.
    Go { trial: bool },
    /// The circuit is open.
    Refused,
}

pub(crate) async fn admit(
    pool: &PgPool,
    tenant: Uuid,
    app: &str,
    circuit: Circuit,
) -> Result<Admission, Error> {
    match circuit {
        Circuit::Closed { .. } => Ok(Admission::Go { trial: false }),
        Circuit::Open { trial_due: false } => Ok(Admission::Refused),
        Circuit::Open { trial_due: true } => {
            let claimed = sqlx::query(
                "UPDATE app_circuits SET state = 'half_open', trial_started_at = now(), \
                 updated_at = now() \
                 WHERE tenant_id = $1 AND app_name = $2 \
                   AND ((state = 'open' AND opened_at <= now() - interval '30 seconds') \
                     OR (state = 'half_open' \
                         AND trial_started_at <= now() - interval '2 minutes'))",
            )
            .bind(tenant)
            .bind(app)
            .execute(pool)
            .await?;
            Ok(if claimed.rows_affected() == 1 {
                tracing::info!(app, "circuit half-open: trial call");
                Admission::Go { trial: true }
            } else {
                Admission::Refused
            })
        }
    }
}

/// The attempt of a call an open circuit refused: recorded, retried like a runner that is
/// away (the circuit may close meanwhile).
pub(crate) fn refused() -> Attempted {
    let message = "the app's circuit is open".to_owned();
    Attempted {
        reached: Some(Reached {
            status: "error",
            output: None,
            error: Some(format!("app_circuit_open: {message}")),
            duration_ms: 0.0,
            usage: None,
            counts_against_circuit: false,
        }),
        ended: Ended::Failed {
            code: "app_circuit_open".into(),
            message,
            retryable: true,
        },
    }
}

/// What the attempt tells the circuits stage, when it can move the circuit.
pub(crate) fn verdict(attempted: &Attempted, circuit: Circuit, trial: bool) -> Option<Verdict> {
    let reached = attempted.reached.as_ref()?;
    let failures = match circuit {
        Circuit::Closed { failures } => failures,
        Circuit::Open { .. } => 1,
    };
    if reached.counts_against_circuit {
        return Some(Verdict::Failure);
    }
    match &attempted.ended {
        Ended::Succeeded(_) | Ended::Pending(_) if trial || failures > 0 => Some(Verdict::Success),
        Ended::Failed { .. } if trial => Some(Verdict::Neutral),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn reached(counts: bool) -> Option<Reached> {
        Some(Reached {
            status: "error",
            output: None,
            error: None,
            duration_ms: 1.0,
            usage: Some(Value::Null),
            counts_against_circuit: counts,
        })
    }

    fn failed(counts: bool) -> Attempted {
        Attempted {
            ended: Ended::Failed {
                code: "timeout".into(),
                message: String::new(),
                retryable: true,
            },
            reached: reached(counts),
        }
    }

    fn succeeded() -> Attempted {
        Attempted {
            ended: Ended::Succeeded(json!({})),
            reached: reached(false),
        }
    }

    const CLEAN: Circuit = Circuit::Closed { failures: 0 };

    #[test]
    fn only_outcomes_that_can_move_the_circuit_travel() {
        assert_eq!(verdict(&failed(true), CLEAN, false), Some(Verdict::Failure));
        assert_eq!(
            verdict(&failed(false), CLEAN, false),
            None,
            "an error answer"
        );
        assert_eq!(
            verdict(&succeeded(), CLEAN, false),
            None,
            "nothing to reset"
        );
        let failing = Circuit::Closed { failures: 2 };
        assert_eq!(
            verdict(&succeeded(), failing, false),
            Some(Verdict::Success)
        );
        let unreached = Attempted {
            reached: None,
            ..failed(false)
        };
        assert_eq!(
            verdict(&unreached, failing, false),
            None,
            "busy never counts"
        );
    }

    #[test]
    fn a_trial_always_reports() {
        let open = Circuit::Open { trial_due: true };
        assert_eq!(verdict(&succeeded(), open, true), Some(Verdict::Success));
        assert_eq!(verdict(&failed(false), open, true), Some(Verdict::Neutral));
        assert_eq!(verdict(&failed(true), open, true), Some(Verdict::Failure));
    }

    #[test]
    fn a_refused_call_is_recorded_and_retried_but_never_counted() {
        let attempted = refused();
        assert_eq!(
            verdict(&attempted, Circuit::Open { trial_due: false }, false),
            None
        );
        assert!(
            matches!(attempted.ended, Ended::Failed { retryable: true, ref code, .. } if code == "app_circuit_open")
        );
    }
}
