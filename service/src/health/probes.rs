//! Probes of the dependencies more than one service uses, each behind the cargo feature of its
//! client so a service compiles only the clients it has.

/// Postgres answers a query.
#[cfg(feature = "postgres")]
pub async fn postgres(pool: sqlx::PgPool) -> Result<(), String> {
    sqlx::query_scalar::<_, i32>("SELECT 1")
        .fetch_one(&pool)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Redis accepts a connection and answers `PING`.
#[cfg(feature = "redis")]
pub async fn redis(client: redis::Client) -> Result<(), String> {
    let mut connection = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    redis::cmd("PING")
        .query_async::<String>(&mut connection)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
