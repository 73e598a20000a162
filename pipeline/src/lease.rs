//! Leases: which worker may write a row that background work is doing, and until when. A
//! backtest (`backtests`), a tenant's audit export schedule (`audit_export_schedules`) and a
//! webhook delivery (`webhook_deliveries`) are each claimed by one statement that picks rows
//! whose lease is free ([`Leased::free`]) and takes a lease on them ([`Leased::take`]): a fresh
//! id and an end. The holder renews it while it works ([`Lease::renew`]); every write it
//! records is conditional on the id ([`Lease::still_ours`] or `lease_id = $n` in the write),
//! so a worker whose lease ran out and was taken over writes nothing more, and a worker that
//! dies leaves the row to the next claim once the lease ends.

use std::time::Duration;

use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use crate::Error;

/// A table whose rows are leased: the row's key, and the column holding when its lease ends
/// (`lease_id` holds whose it is).
#[derive(Debug)]
pub(crate) struct Leased {
    table: &'static str,
    key: &'static str,
    until: &'static str,
    /// What else holds of a row while its lease is held (a backtest is `running`).
    while_held: &'static str,
}

pub(crate) static BACKTESTS: Leased = Leased {
    table: "backtests",
    key: "id",
    until: "running_until",
    while_held: "status = 'running'",
};

pub(crate) static AUDIT_EXPORTS: Leased = Leased {
    table: "audit_export_schedules",
    key: "tenant_id",
    until: "running_until",
    while_held: "true",
};

pub(crate) static DELIVERIES: Leased = Leased {
    table: "webhook_deliveries",
    key: "id",
    until: "leased_until",
    while_held: "true",
};

impl Leased {
    /// What a claim sets, with the lease's id the statement's parameter `$id` and its length
    /// in seconds `$secs`.
    pub(crate) fn take(&self, id: u8, secs: u8) -> String {
        format!(
            "lease_id = ${id}, {} = now() + make_interval(secs => ${secs})",
            self.until
        )
    }

    /// Whether a row (of the table under `alias`, "" for none) has no lease running.
    pub(crate) fn free(&self, alias: &str) -> String {
        let until = match alias {
            "" => self.until.to_owned(),
            alias => format!("{alias}.{}", self.until),
        };
        format!("({until} IS NULL OR {until} < now())")
    }
}

/// A lease this worker took on one row.
#[derive(Debug, Clone)]
pub(crate) struct Lease {
    of: &'static Leased,
    /// The row's key.
    key: Uuid,
    pub(crate) id: Uuid,
    lasts: Duration,
}

impl Lease {
    pub(crate) fn new(of: &'static Leased, key: Uuid, id: Uuid, lasts: Duration) -> Self {
        Self { of, key, id, lasts }
    }

    /// Renews the lease for another of its lengths; `false` when it is no longer ours.
    pub(crate) async fn renew(&self, pool: &PgPool) -> Result<bool, Error> {
        let Leased {
            table,
            key,
            until,
            while_held,
        } = self.of;
        let renewed = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {table} SET {until} = now() + make_interval(secs => $3) \
             WHERE {key} = $1 AND lease_id = $2 AND {while_held}"
        )))
        .bind(self.key)
        .bind(self.id)
        .bind(self.lasts.as_secs_f64())
        .execute(pool)
        .await?;
        Ok(renewed.rows_affected() == 1)
    }

    /// Whether the row is still ours, locking it until `tx` ends, so that what is recorded
    /// under the lease is recorded by its holder alone.
    pub(crate) async fn still_ours(
        &self,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<bool, Error> {
        let Leased { table, key, .. } = self.of;
        let ours: Option<Uuid> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT {key} FROM {table} WHERE {key} = $1 AND lease_id = $2 FOR UPDATE"
        )))
        .bind(self.key)
        .bind(self.id)
        .fetch_optional(&mut **tx)
        .await?;
        Ok(ours.is_some())
    }
}
