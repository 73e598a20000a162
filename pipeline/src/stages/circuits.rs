//! The circuits stage (SPEC §3.7): one writer per tenant and app (`circuits.events`) moves the
//! app's circuit on the outcomes of its calls. Five counted failures in a row open it (audit
//! `app.circuit.opened`, the outbound event `app.circuit.opened` and the notification
//! `app_degraded`); a success closes it (audit and outbound event `app.circuit.closed` when
//! it was not closed) and resets the count; a half-open circuit's trial that does not succeed
//! opens it again. The runs stage refuses calls while it is open and claims the trial after
//! 30 s (`runs::circuit`).

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::circuits::{Circuit, CircuitState, Event, Verdict};
use topics::outbound::Outbound;
use topics::{Envelope, Header, Outcome, Principal};

use crate::Error;
use crate::audit::AuditEvent;
use crate::outbox;
use crate::stage::{Context, Stage, applies};

/// Counted failures in a row that open a circuit.
const FAILURES_TO_OPEN: i32 = 5;

/// Applies [`Event`]s of the `circuits.events` topic.
#[derive(Debug, Default)]
pub(crate) struct CircuitsStage;

impl Stage for CircuitsStage {
    type Body = Event;
    type Then = ();
    const NAME: &'static str = "circuits";
    /// The runs stage produces these and waits for nothing: the inbox only keeps a
    /// redelivered outcome from counting twice.
    const REPLIES: bool = false;
}

applies!(CircuitsStage: Event => outcome);

/// What applying `event` comes to.
async fn outcome(cx: &mut Context, event: &Event) -> Result<Outcome<Circuit>, Error> {
    let tenant = cx.tenant()?;
    let Event::CallEnded {
        app,
        verdict,
        trial,
    } = event;
    let (state, failures): (String, i32) = sqlx::query_as(
        "SELECT state, failures FROM app_circuits \
         WHERE tenant_id = $1 AND app_name = $2 FOR UPDATE",
    )
    .bind(tenant)
    .bind(app)
    .fetch_optional(&mut *cx.tx)
    .await?
    .unwrap_or_else(|| (CircuitState::Closed.as_str().to_owned(), 0));
    // A state this build does not know (the column's check allows none) reads as closed.
    let state = CircuitState::parse(&state).unwrap_or(CircuitState::Closed);
    let moved = next(state, failures, *verdict, *trial);
    sqlx::query(
        "INSERT INTO app_circuits (tenant_id, app_name, state, failures, opened_at, \
         updated_at) VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN now() END, now()) \
         ON CONFLICT (tenant_id, app_name) DO UPDATE SET state = $3, failures = $4, \
         opened_at = CASE WHEN $5 THEN now() ELSE app_circuits.opened_at END, \
         trial_started_at = CASE WHEN $3 = 'half_open' \
                                 THEN app_circuits.trial_started_at END, \
         updated_at = now()",
    )
    .bind(tenant)
    .bind(app)
    .bind(moved.state.as_str())
    .bind(moved.failures)
    .bind(moved.opens)
    .execute(&mut *cx.tx)
    .await?;
    if moved.opens {
        opened(cx, app, moved.failures).await?;
    } else if moved.state == CircuitState::Closed && state != CircuitState::Closed {
        let audit = AuditEvent {
            action: "app.circuit.closed",
            subject_type: "app_install",
            subject_id: app.clone(),
            payload: json!({ "appName": app }),
        };
        cx.audit(audit);
        let closed = Outbound::CircuitClosed { app: app.clone() };
        outbound(&mut cx.tx, &cx.command, closed).await?;
        tracing::info!(app, "circuit closed");
    }
    Ok(Outcome::done(Circuit {
        state: moved.state,
        failures: moved.failures,
    }))
}

/// A circuit after a call's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Moved {
    state: CircuitState,
    failures: i32,
    /// It opens now (again, after a trial).
    opens: bool,
}

fn next(state: CircuitState, failures: i32, verdict: Verdict, trial: bool) -> Moved {
    let open = |failures| Moved {
        state: CircuitState::Open,
        failures,
        opens: true,
    };
    match (state, verdict) {
        (_, Verdict::Success) => Moved {
            state: CircuitState::Closed,
            failures: 0,
            opens: false,
        },
        (CircuitState::HalfOpen, _) if trial => {
            open(failures + i32::from(verdict == Verdict::Failure))
        }
        (CircuitState::Closed, Verdict::Failure) if failures + 1 >= FAILURES_TO_OPEN => {
            open(failures + 1)
        }
        (state, Verdict::Failure) => Moved {
            state,
            failures: failures + 1,
            opens: false,
        },
        (state, Verdict::Neutral) => Moved {
            state,
            failures,
            opens: false,
        },
    }
}

/// What opening a circuit leaves: the audit row, the outbound event and the notification.
async fn opened(cx: &mut Context, app: &str, failures: i32) -> Result<(), Error> {
    let audit = AuditEvent {
        action: "app.circuit.opened",
        subject_type: "app_install",
        subject_id: app.to_owned(),
        payload: json!({ "appName": app, "failures": failures }),
    };
    cx.audit(audit);
    for message in [
        Outbound::CircuitOpened {
            app: app.to_owned(),
            failures,
        },
        Outbound::AppDegraded {
            app: app.to_owned(),
        },
    ] {
        outbound(&mut cx.tx, &cx.command, message).await?;
    }
    tracing::warn!(app, failures, "circuit opened");
    Ok(())
}

/// `message` to the outbox, relayed to `outbound.events` once `tx` commits.
async fn outbound(
    tx: &mut Transaction<'_, Postgres>,
    event: &Header,
    message: Outbound,
) -> Result<(), Error> {
    let envelope = Envelope::new(
        event.tenant,
        Principal::system("circuits"),
        event.request_id.clone(),
        event.traceparent.clone(),
        message,
    );
    outbox::write(tx, &envelope).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_counted_failures_in_a_row_open_and_a_success_resets() {
        let mut state = (CircuitState::Closed, 0);
        for _ in 0..4 {
            let moved = next(state.0, state.1, Verdict::Failure, false);
            assert!(!moved.opens);
            state = (moved.state, moved.failures);
        }
        assert_eq!(state, (CircuitState::Closed, 4));
        assert_eq!(
            next(CircuitState::Closed, 4, Verdict::Success, false),
            Moved {
                state: CircuitState::Closed,
                failures: 0,
                opens: false
            }
        );
        assert_eq!(
            next(CircuitState::Closed, 4, Verdict::Neutral, false),
            Moved {
                state: CircuitState::Closed,
                failures: 4,
                opens: false
            }
        );
        assert_eq!(
            next(CircuitState::Closed, 4, Verdict::Failure, false),
            Moved {
                state: CircuitState::Open,
                failures: 5,
                opens: true
            }
        );
    }

    #[test]
    fn a_trial_closes_on_success_and_reopens_otherwise() {
        assert_eq!(
            next(CircuitState::HalfOpen, 5, Verdict::Success, true).state,
            CircuitState::Closed
        );
        assert!(next(CircuitState::HalfOpen, 5, Verdict::Failure, true).opens);
        assert!(next(CircuitState::HalfOpen, 5, Verdict::Neutral, true).opens);
        // A late outcome of a call made before the circuit opened moves nothing.
        assert_eq!(
            next(CircuitState::Open, 5, Verdict::Failure, false),
            Moved {
                state: CircuitState::Open,
                failures: 6,
                opens: false
            }
        );
    }
}
