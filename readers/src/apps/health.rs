//! `GET /apps/health` (SPEC §4.7): per app, what its calls did over a recent window, the
//! circuits not closed, and the installs whose module the operator blocked.
//!
//! Calls come from `app_invocation_minutes`, a per-minute rollup the schema's triggers keep for
//! the last two days, never from the raw history: a day's window sums at most 1,440 rows per
//! app. The p95 is read from the rollup's duration histogram (slots 2^(1/4) apart), reported as
//! the upper bound of its slot: at most 19 % above the true value, never below it.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, DurationRound, Utc};
use serde::Serialize;
use sqlx::PgPool;
use topics::circuits::CircuitState;
use uuid::Uuid;

use crate::{Error, Tenant};

/// Bounds of `windowMinutes` (SPEC §4.7).
pub const WINDOW_MINUTES: std::ops::RangeInclusive<i64> = 5..=1440;
pub const DEFAULT_WINDOW_MINUTES: i64 = 60;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub window_minutes: i64,
    /// Start of the first minute counted; the window runs to now.
    pub since: DateTime<Utc>,
    /// Every installed app, and any other app called in the window, by name.
    pub apps: Vec<AppCalls>,
    /// Circuits open or half-open.
    pub circuits: Vec<Circuit>,
    /// Installs running a module on `APP_BLOCKED_SHA256`.
    pub blocked_installs: Vec<BlockedInstall>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppCalls {
    pub app_name: String,
    pub calls: i64,
    /// Calls that ended `error`.
    pub failures: i64,
    /// Calls that ended `timeout`.
    pub timeouts: i64,
    /// `None` without calls.
    pub p95_duration_ms: Option<f64>,
    /// Newest call in the window.
    pub last_call_at: Option<DateTime<Utc>>,
    /// Newest `error` or `timeout` in the window.
    pub last_failure_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Circuit {
    pub app_name: String,
    /// `open` (calls refused; the first call after `trialFrom` is the trial) or `half_open` (a
    /// trial call is out).
    pub state: CircuitState,
    /// Counted failures in a row that opened it.
    pub failures: i32,
    pub opened_at: Option<DateTime<Utc>>,
    pub trial_from: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockedInstall {
    pub app_name: String,
    pub version_id: Uuid,
    pub version: String,
    pub sha256: String,
    pub enabled: bool,
}

#[derive(sqlx::FromRow)]
struct MinutesRow {
    app_name: String,
    calls: i64,
    failures: i64,
    timeouts: i64,
    last_call_at: Option<DateTime<Utc>>,
    last_failure_at: Option<DateTime<Utc>>,
    durations: Option<Vec<i64>>,
}

/// The tenant's report over the last `window_minutes` minute buckets (the current one
/// included), `blocked` being the operator's blocked module digests.
pub async fn report(
    pool: &PgPool,
    tenant: Tenant,
    window_minutes: i64,
    blocked: &[&str],
) -> Result<Report, Error> {
    let now = Utc::now();
    let since = now.duration_trunc(Duration::minutes(1)).unwrap_or(now)
        - Duration::minutes(window_minutes - 1);
    let (called, installed, circuits, blocked_installs) = tokio::try_join!(
        calls_since(pool, tenant, since),
        installed(pool, tenant),
        circuits(pool, tenant),
        blocked_installs(pool, tenant, blocked),
    )?;
    let mut apps: BTreeMap<String, AppCalls> = installed
        .into_iter()
        .map(|name| (name.clone(), AppCalls::idle(name)))
        .collect();
    for row in called {
        apps.insert(row.app_name.clone(), AppCalls::from(row));
    }
    Ok(Report {
        window_minutes,
        since,
        apps: apps.into_values().collect(),
        circuits,
        blocked_installs,
    })
}

impl AppCalls {
    fn idle(app_name: String) -> Self {
        Self {
            app_name,
            calls: 0,
            failures: 0,
            timeouts: 0,
            p95_duration_ms: None,
            last_call_at: None,
            last_failure_at: None,
        }
    }
}

impl From<MinutesRow> for AppCalls {
    fn from(row: MinutesRow) -> Self {
        Self {
            p95_duration_ms: row.durations.as_deref().and_then(|h| percentile(h, 0.95)),
            app_name: row.app_name,
            calls: row.calls,
            failures: row.failures,
            timeouts: row.timeouts,
            last_call_at: row.last_call_at,
            last_failure_at: row.last_failure_at,
        }
    }
}

/// The `q` quantile of a duration histogram: the upper bound, in milliseconds, of the slot
/// holding it. Slot `i` (from 1) holds durations of at most 2^((i-1)/4) ms.
fn percentile(histogram: &[i64], q: f64) -> Option<f64> {
    let total: i64 = histogram.iter().map(|n| (*n).max(0)).sum();
    if total == 0 {
        return None;
    }
    let rank = (q * total as f64).ceil().max(1.0) as i64;
    let mut seen = 0;
    for (slot, n) in histogram.iter().enumerate() {
        seen += (*n).max(0);
        if seen >= rank {
            return Some((slot as f64 / 4.0).exp2());
        }
    }
    None
}

async fn calls_since(
    pool: &PgPool,
    tenant: Tenant,
    since: DateTime<Utc>,
) -> Result<Vec<MinutesRow>, Error> {
    let rows = sqlx::query_as::<_, MinutesRow>(
        "SELECT app_name, sum(calls)::bigint AS calls, sum(failures)::bigint AS failures, \
                sum(timeouts)::bigint AS timeouts, max(last_call_at) AS last_call_at, \
                max(last_failure_at) AS last_failure_at, \
                app_invocation_histogram_sum(durations) AS durations \
         FROM app_invocation_minutes WHERE tenant_id = $1 AND minute >= $2 \
         GROUP BY app_name HAVING sum(calls) > 0",
    )
    .bind(tenant.id())
    .bind(since)
    .fetch_all(pool)
    .await?;
    Ok(rows)
}

async fn installed(pool: &PgPool, tenant: Tenant) -> Result<Vec<String>, Error> {
    let names = sqlx::query_scalar::<_, String>(
        "SELECT app_name FROM app_installs WHERE tenant_id = $1 ORDER BY app_name",
    )
    .bind(tenant.id())
    .fetch_all(pool)
    .await?;
    Ok(names)
}

async fn circuits(pool: &PgPool, tenant: Tenant) -> Result<Vec<Circuit>, Error> {
    // 30 seconds: how long an open circuit refuses calls before its trial (SPEC §3.7, the
    // pipeline's runs stage claims the trial on the same condition).
    let circuits = sqlx::query_as::<_, (String, String, i32, Option<DateTime<Utc>>)>(
        "SELECT app_name, state, failures, opened_at FROM app_circuits \
         WHERE tenant_id = $1 AND state <> 'closed' ORDER BY app_name",
    )
    .bind(tenant.id())
    .fetch_all(pool)
    .await?;
    Ok(circuits
        .into_iter()
        .filter_map(|(app_name, state, failures, opened_at)| {
            // The column's check allows no other state.
            let state = CircuitState::parse(&state)?;
            Some((app_name, state, failures, opened_at))
        })
        .map(|(app_name, state, failures, opened_at)| Circuit {
            trial_from: opened_at
                .filter(|_| state == CircuitState::Open)
                .map(|at| at + Duration::seconds(30)),
            app_name,
            state,
            failures,
            opened_at,
        })
        .collect())
}

async fn blocked_installs(
    pool: &PgPool,
    tenant: Tenant,
    blocked: &[&str],
) -> Result<Vec<BlockedInstall>, Error> {
    if blocked.is_empty() {
        return Ok(Vec::new());
    }
    let installs = sqlx::query_as::<_, (String, Uuid, String, String, bool)>(
        "SELECT i.app_name, i.version_id, v.version, v.sha256, i.enabled \
         FROM app_installs i JOIN app_versions v ON v.id = i.version_id \
         WHERE i.tenant_id = $1 AND v.sha256 = ANY($2) ORDER BY i.app_name",
    )
    .bind(tenant.id())
    .bind(blocked)
    .fetch_all(pool)
    .await?;
    Ok(installs
        .into_iter()
        .map(
            |(app_name, version_id, version, sha256, enabled)| BlockedInstall {
                app_name,
                version_id,
                version,
                sha256,
                enabled,
            },
        )
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(slots: &[(usize, i64)]) -> Vec<i64> {
        let mut h = vec![0; 72];
        for (slot, n) in slots {
            h[slot - 1] = *n;
        }
        h
    }

    #[test]
    fn the_p95_is_the_upper_bound_of_its_slot() {
        // 95 calls at most 1 ms, 5 in the slot of 1,000 ms (slot 41: at most 2^10 = 1,024).
        let h = histogram(&[(1, 95), (41, 5)]);
        assert_eq!(percentile(&h, 0.95), Some(1.0));
        let h = histogram(&[(1, 94), (41, 6)]);
        assert_eq!(percentile(&h, 0.95), Some(1024.0));
    }

    #[test]
    fn no_calls_have_no_percentile() {
        assert_eq!(percentile(&histogram(&[]), 0.95), None);
    }

    #[test]
    fn a_single_call_is_its_own_p95() {
        // 150 ms lands in slot 1 + ceil(4 log2 150) = 30, bounded by 2^(29/4) ≈ 151.0 ms.
        let h = histogram(&[(30, 1)]);
        let p95 = percentile(&h, 0.95).expect("a value");
        assert!((150.0..=150.0 * 1.19).contains(&p95), "{p95}");
    }
}
