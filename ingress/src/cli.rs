//! The command line: `ingress` serves the API (the default), `ingress mint-token` prints a
//! development token.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use uuid::Uuid;

use crate::auth::claims::Kind;
use crate::auth::mint::{TokenRequest, mint};
use crate::auth::permission::Role;
use crate::config::Config;

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
    Role::parse(text).ok_or_else(|| format!("{text:?} is not a role (admin, analyst)"))
}

fn parse_kind(text: &str) -> Result<Kind, String> {
    serde_json::from_value(serde_json::Value::from(text))
        .map_err(|_| format!("{text:?} is not a kind (human, machine, applicant)"))
}

/// Runs the command line.
pub fn main() -> ExitCode {
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
    service::main(
        "ingress",
        env!("CARGO_PKG_VERSION"),
        Config::read,
        crate::serve::run,
    )
}
