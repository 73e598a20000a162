//! `total` of `GET /app-invocations`: every match up to [`COUNT_CAP`], without counting raw rows
//! where the rollups already know the answer.
//!
//! `app_invocation_counts` holds, per tenant, app and status, the rows of each UTC month and
//! day, kept exact by triggers in the writers' transactions. A time window splits into the whole
//! months it covers, the whole days left at either end, and the partial days at its edges:
//! months and days are summed from the rollup, only the edges are counted raw, each as one
//! index range (at most a day's rows each, never past the cap). A run's invocations are few
//! and have no rollup: they are counted raw.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use sqlx::{PgPool, Postgres, QueryBuilder};

use super::rollup::Rollup;
use super::{HISTORY, InvocationFilter, push_scope};
use crate::page::COUNT_CAP;
use crate::{Error, Tenant};

/// The precision of a stored `invoked_at`: the last instant before `t` is `t - MICROSECOND`.
const MICROSECOND: Duration = Duration::microseconds(1);

/// Stand-ins for an open end of the window, inside the range Postgres stores.
pub(super) fn beginning() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(1900, 1, 1, 0, 0, 0).unwrap()
}
pub(super) fn end() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(9999, 1, 1, 0, 0, 0).unwrap()
}

/// Half-open ranges `[start, end)` of instants.
type Range = (DateTime<Utc>, DateTime<Utc>);

/// An inclusive window `[from, to]`, either end open.
type Window = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// How a window is counted.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Split {
    /// Whole months, summed from the month rollup.
    pub(super) months: Range,
    /// Whole days before and after the months, summed from the day rollup.
    pub(super) days: [Range; 2],
    /// The partial days at the window's ends, counted raw: each one index range.
    edges: Vec<Window>,
}

fn day_floor(at: DateTime<Utc>) -> DateTime<Utc> {
    Utc.from_utc_datetime(&at.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default())
}

fn day_ceil(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = day_floor(at);
    if floor == at {
        floor
    } else {
        floor + Duration::days(1)
    }
}

pub(super) fn month_floor(at: DateTime<Utc>) -> DateTime<Utc> {
    let first = NaiveDate::from_ymd_opt(at.year(), at.month(), 1).unwrap_or_default();
    Utc.from_utc_datetime(&first.and_hms_opt(0, 0, 0).unwrap_or_default())
}

fn month_ceil(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = month_floor(at);
    if floor == at {
        floor
    } else {
        next_month(floor)
    }
}

/// The start of the month after the one starting at `month`.
pub(super) fn next_month(month: DateTime<Utc>) -> DateTime<Utc> {
    let next = month
        .date_naive()
        .checked_add_months(chrono::Months::new(1));
    Utc.from_utc_datetime(
        &next
            .unwrap_or_default()
            .and_hms_opt(0, 0, 0)
            .unwrap_or_default(),
    )
}

/// Splits the inclusive window `[from, to]` (open ends allowed).
pub(super) fn split(from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> Split {
    let empty = (beginning(), beginning());
    // Whole days are [first_day, after_last_day): a day is whole when `to` reaches its last
    // microsecond, the precision Postgres keeps.
    let first_day = from.map_or(beginning(), day_ceil);
    let after_last_day = to.map_or(end(), |to| day_floor(to + MICROSECOND));
    if first_day >= after_last_day {
        return Split {
            months: empty,
            days: [empty, empty],
            edges: vec![(from, to)],
        };
    }
    let mut edges = Vec::new();
    if let Some(from) = from.filter(|from| *from < first_day) {
        edges.push((Some(from), Some(first_day - MICROSECOND)));
    }
    if let Some(to) = to.filter(|to| *to + MICROSECOND > after_last_day) {
        edges.push((Some(after_last_day), Some(to)));
    }
    let first_month = if from.is_some() {
        month_ceil(first_day)
    } else {
        beginning()
    };
    let after_last_month = if to.is_some() {
        month_floor(after_last_day)
    } else {
        end()
    };
    if first_month >= after_last_month {
        return Split {
            months: empty,
            days: [(first_day, after_last_day), empty],
            edges,
        };
    }
    Split {
        months: (first_month, after_last_month),
        days: [(first_day, first_month), (after_last_month, after_last_day)],
        edges,
    }
}

/// The capped count of the tenant's invocations matching `filter` (no run: see
/// [`count_run`]), from its `rollup` and the raw rows of the split's edges.
pub(super) async fn count(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    split: &Split,
    rollup: &Rollup,
) -> Result<i64, Error> {
    let mut counted = rollup.months_within(split.months) + rollup.days;
    for (from, to) in &split.edges {
        if counted > COUNT_CAP {
            break;
        }
        let edge = InvocationFilter {
            from: *from,
            to: *to,
            ..filter.clone()
        };
        counted += count_rows(pool, tenant, &edge, COUNT_CAP + 1 - counted).await?;
    }
    Ok(counted)
}

/// The capped count of a run's invocations: few, and not in the rollups, so counted raw.
pub(super) async fn count_run(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
) -> Result<i64, Error> {
    count_rows(pool, tenant, filter, COUNT_CAP + 1).await
}

/// Counts raw rows matching `filter`, stopping at `limit`.
async fn count_rows(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    limit: i64,
) -> Result<i64, Error> {
    let mut query = QueryBuilder::<Postgres>::new("");
    push_count_rows(&mut query, HISTORY, tenant, filter, limit);
    Ok(query.build_query_scalar::<i64>().fetch_one(pool).await?)
}

/// Appends the count of `table`'s rows (the history, or one of its partitions) matching
/// `filter`, stopping at `limit`.
pub(super) fn push_count_rows(
    query: &mut QueryBuilder<Postgres>,
    table: &str,
    tenant: Tenant,
    filter: &InvocationFilter,
    limit: i64,
) {
    query
        .push("SELECT count(*) FROM (SELECT 1 FROM ")
        .push(table);
    push_scope(query, tenant, filter, &filter.statuses);
    query.push(" LIMIT ").push_bind(limit).push(") AS capped");
}

/// The plans (`EXPLAIN (FORMAT JSON)`) of the raw counts [`count`] may run for `filter`.
#[cfg(feature = "testing")]
pub(super) async fn explain(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
) -> Result<Vec<serde_json::Value>, Error> {
    let edges = match filter.workflow_run_id {
        Some(_) => vec![(filter.from, filter.to)],
        None => split(filter.from, filter.to).edges,
    };
    let mut plans = Vec::new();
    for (from, to) in edges {
        let edge = InvocationFilter {
            from,
            to,
            ..filter.clone()
        };
        let mut query = QueryBuilder::<Postgres>::new("EXPLAIN (FORMAT JSON) ");
        push_count_rows(&mut query, HISTORY, tenant, &edge, COUNT_CAP + 1);
        plans.push(query.build_query_scalar().fetch_one(pool).await?);
    }
    Ok(plans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invocations::testing::at;

    fn split_of(from: &str, to: &str) -> Split {
        split(Some(at(from)), Some(at(to)))
    }

    #[test]
    fn no_window_is_every_month() {
        let s = split(None, None);
        assert_eq!(s.months, (beginning(), end()));
        assert_eq!(s.edges, vec![]);
    }

    #[test]
    fn a_long_window_is_months_whole_days_and_two_edges() {
        let s = split_of("2025-01-15T10:00:00Z", "2025-04-03T12:00:00Z");
        assert_eq!(
            s.months,
            (at("2025-02-01T00:00:00Z"), at("2025-04-01T00:00:00Z"))
        );
        assert_eq!(
            s.days,
            [
                (at("2025-01-16T00:00:00Z"), at("2025-02-01T00:00:00Z")),
                (at("2025-04-01T00:00:00Z"), at("2025-04-03T00:00:00Z")),
            ]
        );
        assert_eq!(
            s.edges,
            vec![
                (
                    Some(at("2025-01-15T10:00:00Z")),
                    Some(at("2025-01-15T23:59:59.999999Z"))
                ),
                (
                    Some(at("2025-04-03T00:00:00Z")),
                    Some(at("2025-04-03T12:00:00Z"))
                ),
            ]
        );
    }

    #[test]
    fn whole_days_need_no_raw_count() {
        // `to` is inclusive: its last microsecond closes the day.
        let s = split_of("2025-03-01T00:00:00Z", "2025-03-31T23:59:59.999999Z");
        assert_eq!(
            s.months,
            (at("2025-03-01T00:00:00Z"), at("2025-04-01T00:00:00Z"))
        );
        assert_eq!(s.edges, vec![]);
        // One microsecond short leaves the last day partial.
        let s = split_of("2025-03-01T00:00:00Z", "2025-03-31T23:59:59.999998Z");
        assert_eq!(
            s.days[0],
            (at("2025-03-01T00:00:00Z"), at("2025-03-31T00:00:00Z"))
        );
        assert_eq!(
            s.edges,
            vec![(
                Some(at("2025-03-31T00:00:00Z")),
                Some(at("2025-03-31T23:59:59.999998Z"))
            )]
        );
    }

    #[test]
    fn a_window_inside_one_day_is_counted_raw() {
        let s = split_of("2025-03-05T01:00:00Z", "2025-03-05T20:00:00Z");
        let nothing = (beginning(), beginning());
        assert_eq!((s.months, s.days), (nothing, [nothing, nothing]));
        assert_eq!(
            s.edges,
            vec![(
                Some(at("2025-03-05T01:00:00Z")),
                Some(at("2025-03-05T20:00:00Z"))
            )]
        );
    }

    #[test]
    fn open_ends_reach_every_bucket_on_their_side() {
        let s = split(Some(at("2025-03-05T01:00:00Z")), None);
        assert_eq!(s.months, (at("2025-04-01T00:00:00Z"), end()));
        assert_eq!(
            s.days[0],
            (at("2025-03-06T00:00:00Z"), at("2025-04-01T00:00:00Z"))
        );
        assert_eq!(s.edges.len(), 1);
        let s = split(None, Some(at("2025-03-05T01:00:00Z")));
        assert_eq!(s.months, (beginning(), at("2025-03-01T00:00:00Z")));
        assert_eq!(
            s.days[1],
            (at("2025-03-01T00:00:00Z"), at("2025-03-05T00:00:00Z"))
        );
        assert_eq!(
            s.edges,
            vec![(
                Some(at("2025-03-05T00:00:00Z")),
                Some(at("2025-03-05T01:00:00Z"))
            )]
        );
    }
}
