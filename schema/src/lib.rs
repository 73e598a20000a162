//! The data contracts of the platform: SQL migrations (`migrations/`), applied by the pipeline
//! at start-up and by the test command.

use sqlx::PgPool;
use sqlx::migrate::Migrator;

/// Every migration of the platform, embedded at build time.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// Applies the pending migrations. Safe to run from several processes at once: sqlx holds an
/// advisory lock while it migrates.
pub async fn migrate(pool: &PgPool) -> Result<(), Error> {
    MIGRATOR.run(pool).await?;
    Ok(())
}
