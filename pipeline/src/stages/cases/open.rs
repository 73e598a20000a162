//! `Open`: a case opened by `POST /cases`, with the timer of its SLA deadline.

use async_trait::async_trait;
use topics::cases::Case;
use topics::cases::Open;
use topics::{Applied, Apply, Outcome};

use super::{CasesStage, Decided};
use crate::Error;
use crate::stage::Context;

#[async_trait]
impl Apply<Open, Context, Option<Decided>> for CasesStage {
    async fn apply(
        &self,
        cx: &mut Context,
        open: &Open,
    ) -> Result<Applied<Case, Option<Decided>>, Error> {
        let outcome = apply(cx, open).await?;
        Ok(Applied {
            outcome,
            then: None,
        })
    }
}

async fn apply(cx: &mut Context, open: &Open) -> Result<Outcome<Case>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let Open { case_id, opening } = open;
    sqlx::query(
        "INSERT INTO cases (id, tenant_id, type, title, subject_id, priority, status, sla_due_at, \
         opened_by, opened_by_name, opened_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, $8, $9, now())",
    )
    .bind(case_id)
    .bind(tenant.id())
    .bind(&opening.case_type)
    .bind(&opening.title)
    .bind(opening.subject_id)
    .bind(opening.priority.as_str())
    .bind(opening.sla_due_at)
    .bind(&cx.command.principal.id)
    .bind(&cx.command.principal.name)
    .execute(&mut *cx.tx)
    .await?;
    sqlx::query("INSERT INTO case_timers (case_id, tenant_id, due_at) VALUES ($1, $2, $3)")
        .bind(case_id)
        .bind(tenant.id())
        .bind(opening.sla_due_at)
        .execute(&mut *cx.tx)
        .await?;
    super::answer(&mut cx.tx, tenant, *case_id).await
}
