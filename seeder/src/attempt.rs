//! How one seeded attempt ends: its status (about 90 % success, 5 % error, 2 % timeout and 3 %
//! pending, the last only from asynchronous apps), how long it took and what it used.

use rand::Rng;
use readers::invocations::{InvocationStatus, Usage};

use super::catalogue::{Action, App, InputShape};
use super::random::{log_normal, one_of};
use super::vocabulary::{FAILURES, timeout_text};

const ERROR: f64 = 0.05;
const TIMEOUT: f64 = 0.02;
/// Pending among the calls of asynchronous apps, about a third of the traffic: 3 % overall.
const PENDING_OF_ASYNCHRONOUS: f64 = 0.09;
/// Calls far slower than their action usually is (a vendor having a bad day).
const SLOW: f64 = 0.015;

#[derive(Debug, Clone, Copy)]
pub(super) struct Outcome {
    pub(super) status: InvocationStatus,
    /// Milliseconds, to the microsecond.
    pub(super) duration_ms: f64,
    pub(super) error: Option<&'static str>,
    /// Whether the row keeps the module's output: every success, and an answer its schema
    /// rejected.
    pub(super) has_output: bool,
    /// Another attempt may go otherwise.
    pub(super) retryable: bool,
}

/// How a call of `action` of `app` ends this time.
pub(super) fn draw(rng: &mut impl Rng, app: &App, action: &Action) -> Outcome {
    let roll: f64 = rng.random();
    let pending = if app.asynchronous {
        PENDING_OF_ASYNCHRONOUS
    } else {
        0.0
    };
    if roll < ERROR {
        failed(rng, action)
    } else if roll < ERROR + TIMEOUT {
        timed_out(rng, action)
    } else if roll < ERROR + TIMEOUT + pending {
        accepted(rng, action)
    } else {
        succeeded(rng, action)
    }
}

fn succeeded(rng: &mut impl Rng, action: &Action) -> Outcome {
    Outcome {
        status: InvocationStatus::Success,
        duration_ms: answered_in(rng, action, action.median_ms),
        error: None,
        has_output: true,
        retryable: false,
    }
}

/// Vendors mostly refuse quickly.
fn failed(rng: &mut impl Rng, action: &Action) -> Outcome {
    let failure = one_of(rng, FAILURES);
    Outcome {
        status: InvocationStatus::Error,
        duration_ms: answered_in(rng, action, action.median_ms * 0.6),
        error: Some(failure.text),
        has_output: failure.kept_output,
        retryable: failure.retryable,
    }
}

/// Stopped by the runner at the action's timeout, give or take the scheduler.
fn timed_out(rng: &mut impl Rng, action: &Action) -> Outcome {
    Outcome {
        status: InvocationStatus::Timeout,
        duration_ms: to_microsecond(action.timeout_ms + rng.random_range(0.0..40.0)),
        error: Some(timeout_text(action.timeout_ms)),
        has_output: false,
        retryable: true,
    }
}

/// An asynchronous call the vendor accepted: it answers by callback later.
fn accepted(rng: &mut impl Rng, action: &Action) -> Outcome {
    Outcome {
        status: InvocationStatus::Pending,
        duration_ms: answered_in(rng, action, action.median_ms * 0.5),
        error: None,
        has_output: false,
        retryable: false,
    }
}

/// Log-normal around `median`, a few far slower, always before the timeout.
fn answered_in(rng: &mut impl Rng, action: &Action, median: f64) -> f64 {
    let mut duration = log_normal(rng, median, 0.7);
    if rng.random_bool(SLOW) {
        duration *= log_normal(rng, 8.0, 0.8);
    }
    to_microsecond(duration.min(action.timeout_ms * 0.97))
}

fn to_microsecond(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// What the attempt used, as the runner counts it.
pub(super) fn usage(rng: &mut impl Rng, status: InvocationStatus, action: &Action) -> Usage {
    let http_requests = match status {
        InvocationStatus::Pending => 1,
        InvocationStatus::Success => rng.random_range(1..=4),
        InvocationStatus::Error | InvocationStatus::Timeout => rng.random_range(0..=3),
    };
    let document_reads = if action.input == InputShape::Document {
        rng.random_range(1..=3)
    } else {
        i32::from(rng.random_bool(0.1))
    };
    Usage {
        http_requests,
        document_reads,
        log_lines: rng.random_range(0..=40),
    }
}
