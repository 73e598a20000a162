//! The gauge `svc.workflow.run.active` (SPEC Operations reference): runs `running` or
//! `waiting_callback`, per tenant and status, counted from the table every 30 s (the SPEC's
//! cache age) over the partial index `workflow_runs_active`. A group that empties is set to 0
//! rather than left at its last count; a failing count logs a warning and leaves the gauges
//! as they were.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::periodic;

const EVERY: Duration = Duration::from_secs(30);

type Group = (Uuid, String);

async fn count(pool: &PgPool) -> Result<Vec<(Uuid, String, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT tenant_id, status, count(*) FROM workflow_runs \
         WHERE status IN ('running', 'waiting_callback') GROUP BY tenant_id, status",
    )
    .fetch_all(pool)
    .await
}

fn set(tenant: Uuid, status: &str, runs: i64) {
    metrics::gauge!(
        "svc.workflow.run.active",
        "tenant" => tenant.to_string(),
        "status" => status.to_owned()
    )
    .set(runs as f64);
}

/// Counts now and every 30 s until stopped.
pub(crate) async fn maintain(pool: PgPool, stop: CancellationToken) {
    let shown = Mutex::new(HashSet::new());
    periodic::every(Duration::ZERO, EVERY, stop, || async {
        match count(&pool).await {
            Ok(groups) => show(
                &mut shown.lock().unwrap_or_else(|e| e.into_inner()),
                &groups,
            ),
            Err(error) => tracing::warn!(%error, "active runs not counted"),
        }
    })
    .await;
}

/// Sets the gauge of each group counted, and 0 for those `shown` before that emptied.
fn show(shown: &mut HashSet<Group>, groups: &[(Uuid, String, i64)]) {
    let now: HashSet<Group> = groups
        .iter()
        .map(|(tenant, status, _)| (*tenant, status.clone()))
        .collect();
    for (tenant, status) in shown.difference(&now) {
        set(*tenant, status, 0);
    }
    for (tenant, status, runs) in groups {
        set(*tenant, status, *runs);
    }
    *shown = now;
}
