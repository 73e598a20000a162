//! The data contracts of the platform:
//! - SQL migrations (`migrations/`), applied by the pipeline at start-up and by the test
//!   command (`migrate`);
//! - the runner's wire contract as JSON Schemas (`runner/contract.json`, [`RUNNER_CONTRACT`])
//!   and the manifest's shape (`runner/manifest.schema.json`);
//! - the app manifest model with its defaults and checks ([`manifest`]), the strict draft
//!   2020-12 compiler for the schemas manifests carry ([`strict`]), host-name syntax
//!   ([`host`]), what names and bounds a module ([`module`]), and what Postgres can store
//!   ([`storable`]);
//! - the API's OpenAPI 3.1 document (`openapi.json`, [`OPENAPI`]).

pub mod host;
mod issue;
pub mod manifest;
pub mod module;
pub mod storable;
pub mod strict;

pub use issue::{Issue, pointer};
#[cfg(feature = "migrations")]
pub use migrations::{Error, MIGRATOR, migrate};

/// The API's description (OpenAPI 3.1), served at `GET /openapi.json`.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// The runner's contract: requests, module answers and runner answers, as `$defs` of one
/// draft 2020-12 document.
pub const RUNNER_CONTRACT: &str = include_str!("../runner/contract.json");

#[cfg(feature = "migrations")]
mod migrations {
    use sqlx::PgPool;
    use sqlx::migrate::Migrator;

    /// Every migration of the platform, embedded at build time.
    pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

    /// Errors of the migrations.
    #[derive(Debug, thiserror::Error)]
    pub enum Error {
        #[error("migration failed: {0}")]
        Migrate(#[from] sqlx::migrate::MigrateError),
    }

    /// Applies the pending migrations. Safe to run from several processes at once: sqlx holds
    /// an advisory lock while it migrates.
    pub async fn migrate(pool: &PgPool) -> Result<(), Error> {
        MIGRATOR.run(pool).await?;
        Ok(())
    }
}
