//! A listening session kept alive: run it, and when it ends (connection lost) or fails, run it
//! again after a backoff, until the stop signal. The read cache's Postgres listener and the
//! reply subscription on Redis both live this way.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use service::shutdown::CancellationToken;

/// Runs `session` until `stop`; `ended` runs after each session, whatever its end.
pub(crate) async fn run<F, Fut, E>(
    what: &'static str,
    stop: CancellationToken,
    mut session: F,
    mut ended: impl FnMut(),
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    let mut backoff = reconnect_backoff();
    loop {
        let result = tokio::select! {
            () = stop.cancelled() => return,
            result = session() => result,
        };
        ended();
        match result {
            Ok(()) => {
                tracing::warn!(listener = what, "connection lost; reconnecting");
                backoff = reconnect_backoff();
            }
            Err(error) => tracing::warn!(listener = what, %error, "failed; reconnecting"),
        }
        let pause = backoff.next().unwrap_or(Duration::from_secs(5));
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

fn reconnect_backoff() -> impl Iterator<Item = Duration> {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(5))
        .with_jitter()
        .without_max_times()
        .build()
}
