//! The months a page of `GET /app-invocations` lies in, from the month rollup.
//!
//! `app_invocations` has a partition per month, and planning a query over every month of years
//! of history costs the planner more than running it (measured: about 5 ms of planning for a
//! sub-millisecond scan over 50 partitions). The rollup knows how many matches each month holds,
//! so a page needs only the newest months that reach `offset + limit` matches: bounding the
//! query's window to them lets the planner drop every other partition. Narrowing never changes
//! the answer: it leaves out months newer than any match and months older than the page.

use chrono::{DateTime, Duration, Utc};

use super::InvocationFilter;
use super::total::next_month;

/// `filter` with its window narrowed to the months holding the first `needed` matches (the
/// rollup's matches per month, newest first), or `None` when nothing matches at all. A run's
/// filter is not narrowed this way: the rollups do not count runs, and the run's lifetime
/// already bounds it (`run_lifetime`).
pub(super) fn narrow(
    filter: &InvocationFilter,
    months: &[(DateTime<Utc>, i64)],
    needed: i64,
) -> Option<InvocationFilter> {
    let (newest, _) = months.first()?;
    let mut seen = 0;
    let mut oldest = *newest;
    for (month, matches) in months {
        oldest = *month;
        seen += matches;
        if seen >= needed {
            break;
        }
    }
    let until = next_month(*newest) - Duration::microseconds(1);
    Some(InvocationFilter {
        from: Some(filter.from.map_or(oldest, |from| from.max(oldest))),
        to: Some(filter.to.map_or(until, |to| to.min(until))),
        ..filter.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invocations::testing::at;

    fn months() -> Vec<(DateTime<Utc>, i64)> {
        vec![
            (at("2026-11-01T00:00:00Z"), 30),
            (at("2026-09-01T00:00:00Z"), 50),
            (at("2026-01-01T00:00:00Z"), 500),
        ]
    }

    #[test]
    fn a_page_is_bounded_by_the_months_that_reach_it() {
        let narrowed = narrow(&InvocationFilter::default(), &months(), 60).expect("matches");
        assert_eq!(narrowed.from, Some(at("2026-09-01T00:00:00Z")));
        assert_eq!(narrowed.to, Some(at("2026-11-30T23:59:59.999999Z")));
        let narrowed = narrow(&InvocationFilter::default(), &months(), 20).expect("matches");
        assert_eq!(narrowed.from, Some(at("2026-11-01T00:00:00Z")));
    }

    #[test]
    fn a_page_past_every_match_reaches_the_oldest_month() {
        let narrowed = narrow(&InvocationFilter::default(), &months(), 10_000).expect("matches");
        assert_eq!(narrowed.from, Some(at("2026-01-01T00:00:00Z")));
    }

    #[test]
    fn the_requested_window_is_kept_where_it_is_narrower() {
        let filter = InvocationFilter {
            from: Some(at("2026-10-15T00:00:00Z")),
            to: Some(at("2026-11-03T00:00:00Z")),
            ..InvocationFilter::default()
        };
        let narrowed = narrow(&filter, &months(), 60).expect("matches");
        assert_eq!(narrowed.from, filter.from);
        assert_eq!(narrowed.to, filter.to);
    }

    #[test]
    fn no_matches_need_no_query() {
        assert_eq!(narrow(&InvocationFilter::default(), &[], 50), None);
    }
}
