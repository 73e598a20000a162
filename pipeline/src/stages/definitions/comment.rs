//! `AddComment`: a remark added to an approval request's discussion (docs/definitions-and-runs.md
//! "Definition approvals"), open or decided: a decision can still be discussed.

use topics::definitions::AddComment;
use topics::definitions::Comment;
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::DefinitionsStage;
use super::decide::Deciding;
use crate::Error;
use crate::stage::{Context, applies};

applies!(DefinitionsStage: AddComment => apply);

async fn apply(cx: &mut Context, comment: &AddComment) -> Result<Outcome<Comment>, Error> {
    let AddComment {
        kind,
        key,
        approval,
        body,
    } = comment;
    let about = Deciding {
        tenant: super::tenant(cx)?,
        kind: *kind,
        key,
        approval: *approval,
    };
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
    .bind(&cx.command.principal.id)
    .bind(&cx.command.principal.name)
    .bind(body)
    .bind(about.key)
    .execute(&mut *cx.tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No such approval request.",
        ));
    }
    let comment = readers::approvals::comment(&mut *cx.tx, about.tenant, id)
        .await?
        .ok_or_else(|| Error::Invalid("the comment just added is not there".into()))?;
    Ok(Outcome::done(comment))
}
