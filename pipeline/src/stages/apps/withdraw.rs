//! `Withdraw` (SPEC §3.1): one of the tenant's own published versions becomes `withdrawn`.
//! Installs that run it keep running it; it is no longer installable. The command carries the
//! status the API saw: if another transition applied in between (an approval racing this
//! withdraw), this one is a `conflict`, so the race has one winner.

use serde_json::json;
use topics::apps::{Version, VersionStatus, Withdraw};
use topics::{Outcome, RefusalCode};

use super::AppsStage;
use super::version_row::{self, Audited};
use crate::Error;
use crate::stage::{Context, applies};

applies!(AppsStage: Withdraw => apply);

async fn apply(cx: &mut Context, withdraw: &Withdraw) -> Result<Outcome<Version>, Error> {
    let tenant = cx.tenant()?;
    let Withdraw {
        version_id,
        name,
        seen,
    } = withdraw;
    let (version_id, seen) = (*version_id, *seen);
    let Some(row) = version_row::lock(&mut cx.tx, Some(tenant), name, version_id).await? else {
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
    version_row::set_status(&mut cx.tx, version_id, VersionStatus::Withdrawn).await?;
    let audited = Audited {
        name,
        version: &row.version,
        id: version_id,
    };
    version_row::record(cx, "app.withdrawn", audited, json!({}));
    version_row::answer(&mut cx.tx, Some(tenant), name, version_id).await
}
