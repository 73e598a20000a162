//! The worker's observable gauges (SPEC Operations "Metrics" rule 3), each a grouped count
//! computed when metrics are collected ([`service::telemetry::observed`]):
//! - `svc.workflow.run.active{tenant, status}`: runs `running` or `waiting_callback`, over the
//!   partial index `workflow_runs_active`;
//! - `svc.case.open{tenant, priority, sla_state}`: open cases, `sla_state` `within` or
//!   `breached`, over the partial index `cases_open`;
//! - `svc.approval.pending{tenant, kind}`: open approval requests, definition kinds and
//!   `app_version` for an app's.
//!
//! Registered only when telemetry is on, by the pipeline alone (the API does not count them).
//! Each pipeline process reports the same whole counts: aggregate replicas with `max`, not
//! `sum`.

use futures::future::BoxFuture;
use service::telemetry::observed::{self, Observe, Points};
use sqlx::PgPool;
use uuid::Uuid;

/// Registers the gauges (when telemetry is on).
pub(crate) fn register(pool: &PgPool) {
    let registered = [
        observed::register(Grouped {
            pool: pool.clone(),
            name: "svc.workflow.run.active",
            labels: &["tenant", "status"],
            sql: "SELECT tenant_id, ARRAY[status], count(*) FROM workflow_runs \
                  WHERE status IN ('running', 'waiting_callback') GROUP BY tenant_id, status",
        }),
        observed::register(Grouped {
            pool: pool.clone(),
            name: "svc.case.open",
            labels: &["tenant", "priority", "sla_state"],
            sql: "SELECT tenant_id, ARRAY[priority, CASE WHEN sla_breached_at IS NULL \
                  THEN 'within' ELSE 'breached' END], count(*) FROM cases WHERE status = 'open' \
                  GROUP BY 1, 2",
        }),
        observed::register(Grouped {
            pool: pool.clone(),
            name: "svc.approval.pending",
            labels: &["tenant", "kind"],
            sql: "SELECT tenant_id, ARRAY[kind], count(*) FROM definition_approval_requests \
                  WHERE decision IS NULL GROUP BY tenant_id, kind \
                  UNION ALL \
                  SELECT tenant_id, ARRAY['app_version'], count(*) FROM app_approval_requests \
                  WHERE decision IS NULL GROUP BY tenant_id",
        }),
    ];
    tracing::debug!(
        registered = registered.iter().all(|r| *r),
        "observable gauges"
    );
}

/// A gauge counted by one grouped query answering `(tenant, [label values], count)`.
struct Grouped {
    pool: PgPool,
    name: &'static str,
    labels: &'static [&'static str],
    sql: &'static str,
}

impl Observe for Grouped {
    fn name(&self) -> &'static str {
        self.name
    }

    fn labels(&self) -> &'static [&'static str] {
        self.labels
    }

    fn points(&self) -> BoxFuture<'static, Result<Points, String>> {
        let (pool, sql) = (self.pool.clone(), self.sql);
        Box::pin(async move {
            let rows: Vec<(Uuid, Vec<String>, i64)> = sqlx::query_as(sql)
                .fetch_all(&pool)
                .await
                .map_err(|e| e.to_string())?;
            Ok(rows
                .into_iter()
                .map(|(tenant, rest, count)| {
                    let mut values = vec![tenant.to_string()];
                    values.extend(rest);
                    (values, count as f64)
                })
                .collect())
        })
    }
}
