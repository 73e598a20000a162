//! Failpoints (the `failpoints` feature: test builds only), armed by `FAILPOINTS` at start-up,
//! as the `fail` crate reads it: `stage.before_commit=3*off->panic` passes the point three
//! times and crashes at the fourth. A point that panics ends the process on the spot, as a
//! SIGKILL would: the panic hook aborts before any task can catch the panic, so nothing is
//! committed, flushed or left cleanly after it (the consumer does not leave its group).
//!
//! The points, in the order a command meets them:
//! - `stage.before_commit`, `stage.after_commit`: around the commit of a stage's transaction
//!   (its effects and inbox rows), before the replies are published (`stage`);
//! - `consumer.before_offset_store`, `consumer.after_offset_store`: around marking a handled
//!   message's offset for the next commit to the broker (`topics::consumer`);
//! - `outbox.after_send`: in the outbox relay, once the broker acknowledged a batch and before
//!   its rows are deleted (`outbox`).
//!
//! `loadtests/faults/failpoints` crashes the worker at each, under load, and matches every
//! accepted command with its effect.

/// Arms the points `FAILPOINTS` names, when it names any; the guard keeps them armed.
pub(crate) fn arm() -> Option<fail::FailScenario<'static>> {
    std::env::var_os("FAILPOINTS").filter(|points| !points.is_empty())?;
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |panic| {
        report(panic);
        std::process::abort();
    }));
    let scenario = fail::FailScenario::setup();
    tracing::warn!("failpoints armed: a point reached as configured aborts the process");
    Some(scenario)
}
