//! `ingress`: serves the API (default), or mints a development token.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use ingress::auth::claims::Kind;
use ingress::auth::mint::{TokenRequest, mint};
use ingress::auth::permission::Role;
use ingress::config::Config;
use ingress::router::{Router, internal_routes, public_routes};
use ingress::state::State;
use ingress::{internal, public, read_cache_listener};
use telemetry::http_server;
use telemetry::shutdown;
use tokio::net::TcpListener;
use uuid::Uuid;

#[derive(Debug, Parser)]
#[command(name = "ingress", version, about = "The apps platform API")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

// Parsed once at start-up; the size difference does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the public and internal listeners (the default).
    Serve,
    /// Print a development token signed HS256 with JWT_SECRET.
    MintToken {
        #[arg(long)]
        tenant: Uuid,
        #[arg(long)]
        sub: String,
        #[arg(long, default_value = "")]
        name: String,
        /// admin or analyst; repeatable.
        #[arg(long = "role", value_parser = parse_role)]
        roles: Vec<Role>,
        /// human, machine or applicant.
        #[arg(long, default_value = "human", value_parser = parse_kind)]
        kind: Kind,
        /// Extra permission; repeatable.
        #[arg(long = "perm")]
        perms: Vec<String>,
        /// The submission an applicant acts on.
        #[arg(long)]
        submission: Option<Uuid>,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
        #[arg(long, env = "JWT_SECRET", hide_env_values = true)]
        secret: String,
        #[arg(long, env = "JWT_ISSUER")]
        issuer: Option<String>,
        #[arg(long, env = "JWT_AUDIENCE")]
        audience: Option<String>,
    },
}

fn parse_role(text: &str) -> Result<Role, String> {
    serde_json::from_value(serde_json::Value::from(text))
        .map_err(|_| format!("{text:?} is not a role (admin, analyst)"))
}

fn parse_kind(text: &str) -> Result<Kind, String> {
    serde_json::from_value(serde_json::Value::from(text))
        .map_err(|_| format!("{text:?} is not a kind (human, machine, applicant)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(),
        Command::MintToken {
            tenant,
            sub,
            name,
            roles,
            kind,
            perms,
            submission,
            ttl,
            secret,
            issuer,
            audience,
        } => {
            let request = TokenRequest {
                tenant,
                sub,
                name,
                kind,
                roles,
                perms,
                submission,
                ttl_seconds: ttl,
                issuer,
                audience,
            };
            match mint(request, secret.as_bytes()) {
                Ok(token) => {
                    #[allow(clippy::print_stdout)]
                    {
                        println!("{token}");
                    }
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("ingress: cannot mint token: {error}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn serve() -> ExitCode {
    telemetry::service::main("ingress", env!("CARGO_PKG_VERSION"), |telemetry| {
        Box::pin(run(telemetry))
    })
}

async fn run(telemetry: &telemetry::Telemetry) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let grace = config.shutdown_grace;
    let public_addr = SocketAddr::new(config.host, config.port);
    let internal_addr = SocketAddr::new(config.internal_host, config.internal_port);
    let state = State::new(config, telemetry.metrics_handle())?;
    let public_listener = TcpListener::bind(public_addr).await?;
    let internal_listener = TcpListener::bind(internal_addr).await?;
    tracing::info!(
        public = %public_listener.local_addr()?,
        internal = %internal_listener.local_addr()?,
        rate_limit_per_minute = state.config.rate_limit_per_minute,
        traces = telemetry.traces_exported(),
        "ingress listening"
    );

    let stop = shutdown::on_signal();
    spawn_limiter_upkeep(state.clone(), stop.clone());
    tokio::spawn(read_cache_listener::run(
        state.pool.clone(),
        state.read_cache.clone(),
        stop.clone(),
    ));

    let public_router = Arc::new(Router::new(public_routes()));
    let public_state = state.clone();
    let public_server = http_server::serve(
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
    let internal_router = Arc::new(Router::new(internal_routes()));
    let internal_state = state.clone();
    let internal_server = http_server::serve(
        "internal",
        internal_listener,
        move |_peer, request| {
            internal::handle(internal_state.clone(), internal_router.clone(), request)
        },
        stop.clone().cancelled_owned(),
        grace,
    );
    tokio::join!(public_server, internal_server);
    let _ = state.producer.flush(Duration::from_secs(5));
    tracing::info!("ingress stopped");
    Ok(())
}

/// Idle callers are forgotten every minute so the limiter's memory follows active callers.
fn spawn_limiter_upkeep(state: State, stop: shutdown::CancellationToken) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = tick.tick() => state.limiter.forget_idle(),
            }
        }
    });
}
