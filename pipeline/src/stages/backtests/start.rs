//! `Start`: a backtest of a definition version that exists, recorded `queued` with a lease
//! reserved for the worker recording it.

use async_trait::async_trait;
use topics::backtests::Backtest;
use topics::backtests::Start;
use topics::{Applied, Apply, Outcome, RefusalCode};

use super::{BacktestsStage, Recorded};
use crate::Error;
use crate::stage::Context;

#[async_trait]
impl Apply<Start, Context, Option<Recorded>> for BacktestsStage {
    async fn apply(
        &self,
        cx: &mut Context,
        start: &Start,
    ) -> Result<Applied<Backtest, Option<Recorded>>, Error> {
        apply(cx, start).await
    }
}

async fn apply(
    cx: &mut Context,
    start: &Start,
) -> Result<Applied<Backtest, Option<Recorded>>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let Start {
        backtest_id: id,
        target,
        sample,
    } = start;
    let id = *id;
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM definition_versions \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3 AND version = $4)",
    )
    .bind(tenant.id())
    .bind(target.kind())
    .bind(target.key())
    .bind(target.version())
    .fetch_one(&mut *cx.tx)
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
    .bind(&cx.command.principal.id)
    .bind(&cx.command.principal.name)
    .execute(&mut *cx.tx)
    .await?;
    let recorded = if inserted.rows_affected() == 1 {
        let lease = crate::backtests::reserve(&mut cx.tx, id).await?;
        Some(Recorded { id, lease })
    } else {
        None
    };
    let backtest = readers::backtests::get(&mut *cx.tx, tenant, id)
        .await?
        .ok_or_else(|| Error::Contract("a backtest just recorded is absent".into()))?;
    Ok(Applied {
        outcome: Outcome::done(backtest),
        then: recorded,
    })
}
