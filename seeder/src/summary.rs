//! What a seeding run wrote, printed as JSON on stdout: benchmarks read the tenants to mint
//! tokens for and the apps to filter by.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::Plan;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Summary {
    rows: u64,
    seconds: f64,
    rows_per_second: u64,
    seed: u64,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    tenants: Vec<TenantSummary>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TenantSummary {
    id: Uuid,
    rows: u64,
    apps: Vec<&'static str>,
}

impl Summary {
    pub(super) fn new(plan: &Plan, rows_per_tenant: &[u64], elapsed: Duration) -> Self {
        let rows = rows_per_tenant.iter().sum::<u64>();
        let seconds = elapsed.as_secs_f64();
        let tenants = plan
            .population
            .tenants()
            .iter()
            .zip(rows_per_tenant)
            .map(|(tenant, &rows)| TenantSummary {
                id: tenant.id,
                rows,
                apps: tenant.app_names(),
            })
            .collect();
        Self {
            rows,
            seconds: (seconds * 10.0).round() / 10.0,
            rows_per_second: (rows as f64 / seconds.max(0.001)).round() as u64,
            seed: plan.seed,
            from: DateTime::from_timestamp_micros(plan.timeline.start()),
            to: DateTime::from_timestamp_micros(plan.timeline.end()),
            tenants,
        }
    }
}
