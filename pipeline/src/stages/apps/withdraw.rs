//! `Withdraw` (SPEC §3.1): one of the tenant's own published versions becomes `withdrawn`.
//! Installs that run it keep running it; it is no longer installable. The command carries the
//! status the API saw: if another transition applied in between (an approval racing this
//! withdraw), this one is a `conflict`, so the race has one winner.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::apps::{Answer, Command, VersionStatus};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use super::version_row::{self, Audited};
use crate::Error;

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    version_id: Uuid,
    name: &str,
    seen: VersionStatus,
) -> Result<Outcome<Answer>, Error> {
    let Some(row) = version_row::lock(tx, Some(tenant), name, version_id).await? else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such version."));
    };
    if row.status != seen {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!(
                "The version changed meanwhile; it is now {}.",
                row.status.as_str()
            ),
        ));
    }
    if row.status != VersionStatus::Published {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!(
                "The version is {}; only a published version can be withdrawn.",
                row.status.as_str()
            ),
        ));
    }
    version_row::set_status(tx, version_id, VersionStatus::Withdrawn).await?;
    let audited = Audited {
        name,
        version: &row.version,
        id: version_id,
    };
    version_row::record(tx, command, "app.withdrawn", audited, json!({})).await?;
    version_row::answer(tx, Some(tenant), name, version_id).await
}
