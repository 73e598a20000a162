//! The notifications stage (README "Notifications"): one writer per tenant
//! (`notifications.commands`) records who has read which notification. Marking one read twice
//! changes nothing; a reader can only mark what they can see.

use async_trait::async_trait;
use sqlx::{Postgres, Transaction};
use topics::notifications::{Command, Marked};
use topics::{Envelope, Outcome};

use crate::Error;
use crate::stage::{Applied, Stage, tenant_of};

/// Applies [`Command`]s of the `notifications.commands` topic.
#[derive(Debug, Default)]
pub(crate) struct NotificationsStage;

#[async_trait]
impl Stage for NotificationsStage {
    type Body = Command;
    type Then = ();
    const NAME: &'static str = "notifications";

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Applied<Marked>, Error> {
        let tenant = tenant_of::<Self>(command)?;
        let marked = match &command.body {
            Command::MarkRead { reader, admin, ids } => {
                sqlx::query(
                    "INSERT INTO notification_reads (notification_id, reader, read_at) \
                 SELECT id, $2, now() FROM notifications \
                 WHERE tenant_id = $1 AND id = ANY($4) AND (audience = 'everyone' OR $3) \
                 ON CONFLICT DO NOTHING",
                )
                .bind(tenant)
                .bind(reader)
                .bind(admin)
                .bind(ids)
                .execute(&mut **tx)
                .await?
            }
            Command::MarkAllRead {
                reader,
                admin,
                until,
            } => {
                sqlx::query(
                    "INSERT INTO notification_reads (notification_id, reader, read_at) \
                 SELECT id, $2, now() FROM notifications \
                 WHERE tenant_id = $1 AND created_at <= $4 AND (audience = 'everyone' OR $3) \
                 ON CONFLICT DO NOTHING",
                )
                .bind(tenant)
                .bind(reader)
                .bind(admin)
                .bind(until)
                .execute(&mut **tx)
                .await?
            }
        };
        let marked = i64::try_from(marked.rows_affected()).unwrap_or(i64::MAX);
        Ok(Applied::from(Outcome::done(Marked { marked })))
    }
}
