//! `Uninstall` (SPEC §3.4b, §4.7 rule 4): refused `app_in_use` with `details.pendingCallbacks`
//! while runs wait on the app's callbacks, unless forced; forced, every pending session fails
//! with `app_uninstalled` and its run resumes to fail. The install and its secrets go;
//! invocations and callbacks stay. Audit `app.uninstalled`.

use serde_json::json;
use topics::installs::{Uninstall, Uninstalled};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::InstallsStage;
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, applies};
use crate::stages::callbacks::observe_wait;
use crate::stages::runs::UNINSTALLED;

applies!(InstallsStage: Uninstall => apply);

async fn apply(cx: &mut Context, uninstall: &Uninstall) -> Result<Outcome<Uninstalled>, Error> {
    let tenant = cx.tenant()?;
    let Uninstall { name, force } = uninstall;
    let force = *force;
    let installed: Option<Uuid> = sqlx::query_scalar(
        "SELECT version_id FROM app_installs WHERE tenant_id = $1 AND app_name = $2 FOR UPDATE",
    )
    .bind(tenant)
    .bind(name)
    .fetch_optional(&mut *cx.tx)
    .await?;
    let Some(version_id) = installed else {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "The app is not installed.",
        ));
    };
    let pending: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM app_callback_sessions \
         WHERE tenant_id = $1 AND app_name = $2 AND status = 'pending'",
    )
    .bind(tenant)
    .bind(name)
    .fetch_one(&mut *cx.tx)
    .await?;
    if pending > 0 && !force {
        return Ok(Outcome::refused_with(
            RefusalCode::AppInUse,
            "Runs wait on this app's callbacks; uninstall with force=true to fail them.",
            json!({ "pendingCallbacks": pending }),
        ));
    }
    // Each failed session's run resumes at once through a timer due now (SPEC §3.2: "each
    // run's wait ends at once"), and fails with `app_uninstalled`. The sessions are locked in id
    // order first, as the callbacks stage locks a batch's, so the two wait rather than deadlock.
    // Two forced uninstalls in one batch lock one app's sessions, then the other's: a callbacks
    // batch holding sessions of both may then deadlock with it. Postgres ends one of the two
    // after `deadlock_timeout`, and each is applied again (this batch one command at a time),
    // so nothing is lost; forced uninstalls with waiting runs are rare enough to pay that.
    let failed: Vec<(String, f64)> = sqlx::query_as(
        "WITH locked AS ( \
           SELECT id FROM app_callback_sessions \
           WHERE tenant_id = $1 AND app_name = $2 AND status = 'pending' ORDER BY id FOR UPDATE), \
         failed AS ( \
           UPDATE app_callback_sessions SET status = 'failed', error = $3, completed_at = now() \
           WHERE id IN (SELECT id FROM locked) AND status = 'pending' \
           RETURNING workflow_run_id, action, \
             extract(epoch FROM completed_at - created_at)::float8 AS waited), \
         resumed AS ( \
           INSERT INTO run_timers (id, tenant_id, run_id, due_at, purpose, traceparent) \
           SELECT gen_random_uuid(), $1, r.id, now(), 'callback', $4 FROM workflow_runs r \
           WHERE r.id IN (SELECT workflow_run_id FROM failed) RETURNING 1) \
         SELECT action, waited FROM failed",
    )
    .bind(tenant)
    .bind(name)
    .bind(UNINSTALLED)
    // The runs' resumes continue the uninstall's trace.
    .bind(service::telemetry::traces::current_traceparent())
    .fetch_all(&mut *cx.tx)
    .await?;
    // Before the commit, as a cancel's run duration: a redelivery may count a session twice,
    // where after it a crash would miss it.
    for (action, waited) in &failed {
        observe_wait(tenant, name, action, "failed", *waited);
    }
    let failed = failed.len();
    sqlx::query("DELETE FROM app_secrets WHERE tenant_id = $1 AND app_name = $2")
        .bind(tenant)
        .bind(name)
        .execute(&mut *cx.tx)
        .await?;
    sqlx::query("DELETE FROM app_installs WHERE tenant_id = $1 AND app_name = $2")
        .bind(tenant)
        .bind(name)
        .execute(&mut *cx.tx)
        .await?;
    let event = AuditEvent {
        action: "app.uninstalled",
        subject_type: "app_install",
        subject_id: name.to_owned(),
        payload: json!({
            "app": name, "versionId": version_id, "force": force, "failedCallbacks": failed,
        }),
    };
    cx.audit(event);
    Ok(Outcome::done(Uninstalled {
        app_name: name.to_owned(),
        uninstalled: true,
        failed_callbacks: failed as u64,
    }))
}
