//! `Comment`: a remark added to an approval request's discussion (README "Definition
//! approvals"), open or decided: a decision can still be discussed.

use sqlx::{Postgres, Transaction};
use topics::definitions::{Answer, Command};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use super::decide::Deciding;
use crate::Error;

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    about: Deciding<'_>,
    body: &str,
) -> Result<Outcome<Answer>, Error> {
    let id = Uuid::now_v7();
    let inserted = sqlx::query(
        "INSERT INTO definition_approval_comments \
         (id, tenant_id, approval_id, author_id, author_name, body, created_at) \
         SELECT $1, tenant_id, id, $5, $6, $7, now() FROM definition_approval_requests \
         WHERE tenant_id = $2 AND id = $3 AND kind = $4 AND key = $8",
    )
    .bind(id)
    .bind(about.tenant.id())
    .bind(about.approval)
    .bind(about.kind.as_str())
    .bind(&command.principal.id)
    .bind(&command.principal.name)
    .bind(body)
    .bind(about.key)
    .execute(&mut **tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No such approval request.",
        ));
    }
    let comment = readers::approvals::comment(&mut **tx, about.tenant, id)
        .await?
        .ok_or_else(|| Error::Invalid("the comment just added is not there".into()))?;
    Ok(Outcome::done(Answer::Commented(comment)))
}
