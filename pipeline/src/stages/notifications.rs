//! The notifications stage (docs/outbound-webhooks.md "Notifications"): one writer per tenant
//! (`notifications.commands`) records who has read which notification. Marking one read twice
//! changes nothing; a reader can only mark what they can see.

use async_trait::async_trait;
use sqlx::postgres::PgQueryResult;
use topics::notifications::{MarkAllRead, MarkRead, Marked, NotificationsCommand};
use topics::{Applied, Apply, Outcome};

use crate::Error;
use crate::stage::{Context, Stage};

/// Applies the commands of the `notifications.commands` topic.
#[derive(Debug, Default)]
pub(crate) struct NotificationsStage;

impl Stage for NotificationsStage {
    type Body = NotificationsCommand;
    type Then = ();
    const NAME: &'static str = "notifications";
}

#[async_trait]
impl Apply<MarkRead, Context> for NotificationsStage {
    async fn apply(&self, cx: &mut Context, command: &MarkRead) -> Result<Applied<Marked>, Error> {
        let tenant = cx.tenant()?;
        let MarkRead { reader, admin, ids } = command;
        let marked = sqlx::query(
            "INSERT INTO notification_reads (notification_id, reader, read_at) \
                 SELECT id, $2, now() FROM notifications \
                 WHERE tenant_id = $1 AND id = ANY($4) AND (audience = 'everyone' OR $3) \
                 ON CONFLICT DO NOTHING",
        )
        .bind(tenant)
        .bind(reader)
        .bind(admin)
        .bind(ids)
        .execute(&mut *cx.tx)
        .await?;
        Ok(answer(marked))
    }
}

#[async_trait]
impl Apply<MarkAllRead, Context> for NotificationsStage {
    async fn apply(
        &self,
        cx: &mut Context,
        command: &MarkAllRead,
    ) -> Result<Applied<Marked>, Error> {
        let tenant = cx.tenant()?;
        let MarkAllRead {
            reader,
            admin,
            until,
        } = command;
        let marked = sqlx::query(
            "INSERT INTO notification_reads (notification_id, reader, read_at) \
                 SELECT id, $2, now() FROM notifications \
                 WHERE tenant_id = $1 AND created_at <= $4 AND (audience = 'everyone' OR $3) \
                 ON CONFLICT DO NOTHING",
        )
        .bind(tenant)
        .bind(reader)
        .bind(admin)
        .bind(until)
        .execute(&mut *cx.tx)
        .await?;
        Ok(answer(marked))
    }
}

/// How many notifications the statement marked read.
fn answer(marked: PgQueryResult) -> Applied<Marked> {
    let marked = i64::try_from(marked.rows_affected()).unwrap_or(i64::MAX);
    Applied::from(Outcome::done(Marked { marked }))
}
