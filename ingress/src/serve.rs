//! Serving: the state, both listeners, the read cache's change listener and the limiter's
//! upkeep, until the stop signal; then the producer is flushed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use service::http::{Router, serve};
use service::shutdown::CancellationToken;
use service::{Process, RunResult};
use tokio::net::TcpListener;

use crate::catalogue;
use crate::config::Config;
use crate::directory;
use crate::internal::{self, InternalRoute};
use crate::public::{self, PublicRoute};
use crate::read_cache_listener;
use crate::replies;
use crate::state::State;

pub(crate) async fn run(config: Config, process: Process) -> RunResult {
    let grace = config.shutdown_grace;
    let public_addr = SocketAddr::new(config.host, config.port);
    let internal_addr = SocketAddr::new(config.internal_host, config.internal_port);
    let (sightings, recorded) = directory::queue();
    let state = State::new(config, process.metrics.clone(), sightings)?;
    let public_listener = TcpListener::bind(public_addr).await?;
    let internal_listener = TcpListener::bind(internal_addr).await?;
    tracing::info!(
        rate_limit_per_minute = state.config.rate_limit_per_minute,
        traces = process.traces_exported,
        "ingress starting"
    );

    let stop = process.stop;
    spawn_limiter_upkeep(state.clone(), stop.clone());
    tokio::spawn(catalogue::publish(state.clone(), stop.clone()));
    tokio::spawn(replies::listen(
        state.commands.replies.clone(),
        state.redis.clone(),
        stop.clone(),
    ));
    // The directory's sightings are writes: the primary's pool, the one commands read back from.
    tokio::spawn(directory::record(
        state.commands.pool.clone(),
        recorded,
        stop.clone(),
    ));
    tokio::spawn(read_cache_listener::run(
        state.redis.clone(),
        state.reads.cache.clone(),
        stop.clone(),
    ));

    let public_router = Arc::new(Router::<PublicRoute>::new());
    let public_state = state.clone();
    let public_server = serve(
        "public",
        public_listener,
        move |peer, request| {
            public::handle(
                public_state.clone(),
                public_router.clone(),
                peer.ip(),
                request,
            )
        },
        stop.clone().cancelled_owned(),
        grace,
    );
    let internal_router = Arc::new(Router::<InternalRoute>::new());
    let internal_state = state.clone();
    let internal_server = serve(
        "internal",
        internal_listener,
        move |_peer, request| {
            internal::handle(internal_state.clone(), internal_router.clone(), request)
        },
        stop.clone().cancelled_owned(),
        grace,
    );
    tokio::join!(public_server, internal_server);
    let _ = state.commands.producer.flush(Duration::from_secs(5));
    let _ = state.webhooks.events.flush(Duration::from_secs(5));
    Ok(())
}

/// Idle callers are forgotten every minute so the limiter's memory follows active callers.
fn spawn_limiter_upkeep(state: State, stop: CancellationToken) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = tick.tick() => state.listener.limiter.forget_idle(),
            }
        }
    });
}
