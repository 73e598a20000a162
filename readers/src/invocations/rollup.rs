//! What the rollups know of a list's window, read in one query: the matches of each month the
//! window touches, which say where its page lies (`months`), and the matches of the whole days
//! `total` sums at its ends. Both answers come from the same index ranges of
//! `app_invocation_counts`, so one round trip serves the page and the count.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::InvocationFilter;
use super::total::{Split, beginning, end, month_floor};
use crate::{Error, Tenant};

/// The rollups' matches for one filter.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Rollup {
    /// Matches per month the window touches, newest first; months without any left out.
    pub(super) months: Vec<(DateTime<Utc>, i64)>,
    /// Matches in the split's whole days (outside its whole months).
    pub(super) days: i64,
}

impl Rollup {
    /// Matches in the months of `[start, end)`.
    pub(super) fn months_within(&self, (start, end): (DateTime<Utc>, DateTime<Utc>)) -> i64 {
        self.months
            .iter()
            .filter(|(month, _)| start <= *month && *month < end)
            .map(|(_, matches)| matches)
            .sum()
    }
}

/// Month rows come with their bucket; the days' sum is one row without.
const ROLLUP: &str = "SELECT bucket, sum(calls)::bigint FROM app_invocation_counts \
     WHERE tenant_id = $1 AND span = 'month' AND ($2::text IS NULL OR app_name = $2) \
       AND status = ANY($3) AND bucket >= $4 AND bucket <= $5 \
     GROUP BY bucket HAVING sum(calls) > 0 \
     UNION ALL \
     SELECT NULL, coalesce(sum(calls), 0)::bigint FROM app_invocation_counts \
     WHERE tenant_id = $1 AND span = 'day' AND ($2::text IS NULL OR app_name = $2) \
       AND status = ANY($3) AND ((bucket >= $6 AND bucket < $7) OR (bucket >= $8 AND bucket < $9))";

/// The rollups of `filter`'s window (its run, if any, is not counted by them: see `list`).
pub(super) async fn load(
    pool: &PgPool,
    tenant: Tenant,
    filter: &InvocationFilter,
    split: &Split,
) -> Result<Rollup, Error> {
    let rows = sqlx::query_as::<_, (Option<DateTime<Utc>>, i64)>(ROLLUP)
        .bind(tenant.id())
        .bind(filter.app_name.as_deref())
        .bind(filter.status_names())
        .bind(filter.from.map_or(beginning(), month_floor))
        .bind(filter.to.map_or(end(), month_floor))
        .bind(split.days[0].0)
        .bind(split.days[0].1)
        .bind(split.days[1].0)
        .bind(split.days[1].1)
        .fetch_all(pool)
        .await?;
    let mut rollup = Rollup::default();
    for (bucket, matches) in rows {
        match bucket {
            Some(month) => rollup.months.push((month, matches)),
            None => rollup.days = matches,
        }
    }
    rollup
        .months
        .sort_by_key(|(month, _)| std::cmp::Reverse(*month));
    Ok(rollup)
}
