//! A run's invocations lie within the run's lifetime: the `workflowRunId` filter is bounded by
//! it, so the planner keeps only the months the run lived in.
//!
//! The run index has no time in front (a run is one key, its attempts a few rows), so a run's
//! filter would otherwise plan and probe every monthly partition of years of history (measured:
//! 7 ms of planning for a 0.3 ms answer over 50 partitions). Every attempt of a run is recorded
//! after the run was created (`workflow_runs.created_at`) and, once it finished, not after its
//! `finished_at`; the margin covers the clocks involved (`invoked_at` is the database's clock
//! less the call's duration as the runner measured it, `finished_at` the transaction's start).
//! A run the table does not know (an id that never ran, or history older than the runs kept)
//! leaves the filter as it is.

use chrono::{DateTime, Duration, Utc};
use sqlx::PgPool;

use super::InvocationFilter;
use crate::{Error, Tenant};

/// How far outside the run's recorded lifetime an attempt's `invoked_at` may lie.
const CLOCK_MARGIN: Duration = Duration::hours(1);

/// `filter` with its window narrowed to its run's lifetime (when it names a known run).
pub(super) async fn bound(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
) -> Result<InvocationFilter, Error> {
    let Some(run) = filter.workflow_run_id else {
        return Ok(filter.clone());
    };
    let lifetime = sqlx::query_as::<_, (DateTime<Utc>, Option<DateTime<Utc>>)>(
        "SELECT created_at, finished_at FROM workflow_runs WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.id())
    .bind(run)
    .fetch_optional(pool)
    .await?;
    Ok(match lifetime {
        Some((created_at, finished_at)) => within(filter, created_at, finished_at),
        None => filter.clone(),
    })
}

/// The filter's window intersected with the lifetime (and its margin).
fn within(
    filter: &InvocationFilter,
    created_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
) -> InvocationFilter {
    let earliest = created_at - CLOCK_MARGIN;
    let latest = finished_at.map(|at| at + CLOCK_MARGIN);
    InvocationFilter {
        from: Some(filter.from.map_or(earliest, |from| from.max(earliest))),
        to: match (filter.to, latest) {
            (Some(to), Some(latest)) => Some(to.min(latest)),
            (to, latest) => to.or(latest),
        },
        ..filter.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invocations::testing::at;
    use uuid::Uuid;

    fn run_filter() -> InvocationFilter {
        InvocationFilter {
            workflow_run_id: Some(Uuid::from_u128(7)),
            ..InvocationFilter::default()
        }
    }

    #[test]
    fn a_finished_run_bounds_both_ends_with_the_margin() {
        let bounded = within(
            &run_filter(),
            at("2025-03-10T12:00:00Z"),
            Some(at("2025-03-12T08:00:00Z")),
        );
        assert_eq!(bounded.from, Some(at("2025-03-10T11:00:00Z")));
        assert_eq!(bounded.to, Some(at("2025-03-12T09:00:00Z")));
    }

    #[test]
    fn a_run_still_going_leaves_the_window_open_towards_now() {
        let bounded = within(&run_filter(), at("2025-03-10T12:00:00Z"), None);
        assert_eq!(bounded.from, Some(at("2025-03-10T11:00:00Z")));
        assert_eq!(bounded.to, None);
    }

    #[test]
    fn the_requested_window_is_kept_where_it_is_narrower() {
        let filter = InvocationFilter {
            from: Some(at("2025-03-11T00:00:00Z")),
            to: Some(at("2025-03-11T06:00:00Z")),
            ..run_filter()
        };
        let bounded = within(
            &filter,
            at("2025-03-10T12:00:00Z"),
            Some(at("2025-03-12T08:00:00Z")),
        );
        assert_eq!((bounded.from, bounded.to), (filter.from, filter.to));
        let open = InvocationFilter {
            to: Some(at("2025-03-11T06:00:00Z")),
            ..run_filter()
        };
        let bounded = within(&open, at("2025-03-10T12:00:00Z"), None);
        assert_eq!(bounded.to, open.to);
    }
}
