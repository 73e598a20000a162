//! `total` of `GET /app-invocations`: every match up to [`COUNT_CAP`], without counting raw rows
//! where the rollups already know the answer.
//!
//! `app_invocation_counts` holds, per tenant, app and status, the rows of each UTC month and
//! day, kept exact by triggers in the writers' transactions. A time window splits into the whole
//! months it covers, the whole days left at either end, and the partial days at its edges:
//! months and days are summed from the rollup, only the edges are counted raw (at most two
//! days' rows, and never past the cap). A run's invocations are few and have no rollup: they
//! are counted raw.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use sqlx::{PgPool, Postgres, QueryBuilder};

use super::{InvocationFilter, InvocationStatus, push_scope};
use crate::page::COUNT_CAP;
use crate::{Error, Tenant};

/// Stand-ins for an open end of the window, inside the range Postgres stores.
fn beginning() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(1900, 1, 1, 0, 0, 0).unwrap()
}
fn end() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(9999, 1, 1, 0, 0, 0).unwrap()
}

/// Half-open ranges `[start, end)` of instants.
type Range = (DateTime<Utc>, DateTime<Utc>);

/// How a window `[from, to]` is counted.
#[derive(Debug, Clone, PartialEq)]
struct Split {
    /// Whole months, summed from the month rollup.
    months: Range,
    /// Whole days before and after the months, summed from the day rollup.
    days: [Range; 2],
    /// All the whole days, `None` when the window covers none.
    whole: Option<Range>,
    /// Whether rows outside the whole days must be counted raw (the window has partial days).
    edges: bool,
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

fn month_floor(at: DateTime<Utc>) -> DateTime<Utc> {
    let first = NaiveDate::from_ymd_opt(at.year(), at.month(), 1).unwrap_or_default();
    Utc.from_utc_datetime(&first.and_hms_opt(0, 0, 0).unwrap_or_default())
}

fn month_ceil(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = month_floor(at);
    if floor == at {
        floor
    } else {
        let next = floor
            .date_naive()
            .checked_add_months(chrono::Months::new(1));
        Utc.from_utc_datetime(
            &next
                .unwrap_or_default()
                .and_hms_opt(0, 0, 0)
                .unwrap_or_default(),
        )
    }
}

/// Splits the inclusive window `[from, to]` (open ends allowed).
fn split(from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> Split {
    let empty = (beginning(), beginning());
    // Whole days are [first_day, after_last_day): a day is whole when `to` reaches its last
    // microsecond, the precision Postgres keeps.
    let first_day = from.map_or(beginning(), day_ceil);
    let after_last_day = to.map_or(end(), |to| day_floor(to + Duration::microseconds(1)));
    let edges = from.is_some_and(|from| from != first_day)
        || to.is_some_and(|to| to + Duration::microseconds(1) != after_last_day);
    if first_day >= after_last_day {
        return Split {
            months: empty,
            days: [empty, empty],
            whole: None,
            edges: true,
        };
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
    let whole = Some((first_day, after_last_day));
    if first_month >= after_last_month {
        return Split {
            months: empty,
            days: [(first_day, after_last_day), empty],
            whole,
            edges,
        };
    }
    Split {
        months: (first_month, after_last_month),
        days: [(first_day, first_month), (after_last_month, after_last_day)],
        whole,
        edges,
    }
}

/// The capped count of the tenant's invocations matching `filter`.
pub(super) async fn count(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
) -> Result<i64, Error> {
    if filter.workflow_run_id.is_some() {
        return count_rows(pool, tenant, filter, None, COUNT_CAP + 1).await;
    }
    let split = split(filter.from, filter.to);
    let rolled_up = match split.whole {
        Some(_) => sum_rollups(pool, tenant, filter, &split).await?,
        None => 0,
    };
    if !split.edges || rolled_up > COUNT_CAP {
        return Ok(rolled_up);
    }
    let edges = count_rows(pool, tenant, filter, split.whole, COUNT_CAP + 1 - rolled_up).await?;
    Ok(rolled_up + edges)
}

/// Sums the month and day rollups of `split`.
async fn sum_rollups(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    split: &Split,
) -> Result<i64, Error> {
    let statuses: Vec<&'static str> = if filter.statuses.is_empty() {
        InvocationStatus::ALL.iter().map(|s| s.as_str()).collect()
    } else {
        filter.statuses.iter().map(|s| s.as_str()).collect()
    };
    let sum = sqlx::query_scalar::<_, i64>(
        "SELECT coalesce(sum(calls), 0)::bigint FROM app_invocation_counts \
         WHERE tenant_id = $1 AND ($2::text IS NULL OR app_name = $2) AND status = ANY($3) \
           AND ((span = 'month' AND bucket >= $4 AND bucket < $5) \
             OR (span = 'day' AND bucket >= $6 AND bucket < $7) \
             OR (span = 'day' AND bucket >= $8 AND bucket < $9))",
    )
    .bind(tenant.id())
    .bind(filter.app_name.as_deref())
    .bind(statuses)
    .bind(split.months.0)
    .bind(split.months.1)
    .bind(split.days[0].0)
    .bind(split.days[0].1)
    .bind(split.days[1].0)
    .bind(split.days[1].1)
    .fetch_one(pool)
    .await?;
    Ok(sum)
}

/// Counts raw rows matching `filter`, leaving out `[skip.0, skip.1)`, stopping at `limit`.
async fn count_rows(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    skip: Option<Range>,
    limit: i64,
) -> Result<i64, Error> {
    let mut query =
        QueryBuilder::<Postgres>::new("SELECT count(*) FROM (SELECT 1 FROM app_invocations");
    push_scope(&mut query, tenant, filter, &filter.statuses);
    if let Some((start, end)) = skip {
        query
            .push(" AND (invoked_at < ")
            .push_bind(start)
            .push(" OR invoked_at >= ")
            .push_bind(end)
            .push(")");
    }
    query.push(" LIMIT ").push_bind(limit).push(") AS capped");
    Ok(query.build_query_scalar::<i64>().fetch_one(pool).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("time")
            .with_timezone(&Utc)
    }

    #[test]
    fn no_window_is_every_month() {
        let s = split(None, None);
        assert_eq!(s.months, (beginning(), end()));
        assert!(!s.edges);
    }

    #[test]
    fn a_long_window_is_months_whole_days_and_edges() {
        let s = split(
            Some(at("2025-01-15T10:00:00Z")),
            Some(at("2025-04-03T12:00:00Z")),
        );
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
            s.whole,
            Some((at("2025-01-16T00:00:00Z"), at("2025-04-03T00:00:00Z")))
        );
        assert!(s.edges);
    }

    #[test]
    fn whole_days_need_no_raw_count() {
        // `to` is inclusive: its last microsecond closes the day.
        let s = split(
            Some(at("2025-03-01T00:00:00Z")),
            Some(at("2025-03-31T23:59:59.999999Z")),
        );
        assert_eq!(
            s.months,
            (at("2025-03-01T00:00:00Z"), at("2025-04-01T00:00:00Z"))
        );
        assert!(!s.edges);
        // One microsecond short leaves the last day partial.
        let s = split_of("2025-03-01T00:00:00Z", "2025-03-31T23:59:59.999998Z");
        assert_eq!(
            s.days[0],
            (at("2025-03-01T00:00:00Z"), at("2025-03-31T00:00:00Z"))
        );
        assert!(s.edges);
    }

    fn split_of(from: &str, to: &str) -> Split {
        split(Some(at(from)), Some(at(to)))
    }

    #[test]
    fn a_window_inside_one_day_is_counted_raw() {
        let s = split_of("2025-03-05T01:00:00Z", "2025-03-05T20:00:00Z");
        assert_eq!(s.whole, None);
        assert!(s.edges);
    }

    #[test]
    fn open_ends_reach_every_bucket_on_their_side() {
        let s = split(Some(at("2025-03-05T01:00:00Z")), None);
        assert_eq!(s.months, (at("2025-04-01T00:00:00Z"), end()));
        assert_eq!(
            s.days[0],
            (at("2025-03-06T00:00:00Z"), at("2025-04-01T00:00:00Z"))
        );
        let s = split(None, Some(at("2025-03-05T01:00:00Z")));
        assert_eq!(s.months, (beginning(), at("2025-03-01T00:00:00Z")));
        assert_eq!(
            s.days[1],
            (at("2025-03-01T00:00:00Z"), at("2025-03-05T00:00:00Z"))
        );
        assert!(s.edges);
    }
}
