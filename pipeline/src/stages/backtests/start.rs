//! `Start`: a backtest of a definition version that exists, recorded `queued` with a lease
//! reserved for the worker recording it.

use readers::backtests::Backtest;
use sqlx::{Postgres, Transaction};
use topics::backtests::{Command, Sample, Target};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use super::Recorded;
use crate::Error;
use crate::stage::Applied;

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: readers::Tenant,
    id: Uuid,
    (target, sample): (&Target, Sample),
) -> Result<Applied<Backtest, Option<Recorded>>, Error> {
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM definition_versions \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3 AND version = $4)",
    )
    .bind(tenant.id())
    .bind(target.kind())
    .bind(target.key())
    .bind(target.version())
    .fetch_one(&mut **tx)
    .await?;
    if !exists {
        return Ok(Applied {
            outcome: Outcome::refused(RefusalCode::NotFound, "No such definition version."),
            then: None,
        });
    }
    let inserted = sqlx::query(
        "INSERT INTO backtests (id, tenant_id, kind, key, version, last_days, sample_limit, \
         status, requested_by, requested_by_name, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $9, now()) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(id)
    .bind(tenant.id())
    .bind(target.kind())
    .bind(target.key())
    .bind(target.version())
    .bind(sample.last_days)
    .bind(sample.limit)
    .bind(&command.principal.id)
    .bind(&command.principal.name)
    .execute(&mut **tx)
    .await?;
    let recorded = if inserted.rows_affected() == 1 {
        let lease = crate::backtests::reserve(tx, id).await?;
        Some(Recorded { id, lease })
    } else {
        None
    };
    let backtest = readers::backtests::get(&mut **tx, tenant, id)
        .await?
        .ok_or_else(|| Error::Contract("a backtest just recorded is absent".into()))?;
    Ok(Applied {
        outcome: Outcome::done(backtest),
        then: recorded,
    })
}
