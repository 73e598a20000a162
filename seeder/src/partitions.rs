//! The monthly partitions a seeded span needs, created before any row is written:
//! `app_invocations` has no default partition, so a row of a month without its partition fails
//! its COPY.

use chrono::{DateTime, Datelike, NaiveDate};
use sqlx::PgConnection;

use crate::Error;

/// Creates the partitions of every month from `from` to `to` (microseconds since the Unix
/// epoch); months that have one keep it.
pub(super) async fn ensure(connection: &mut PgConnection, from: i64, to: i64) -> Result<(), Error> {
    let first = month_of(from);
    sqlx::query("SELECT app_invocations_ensure_partitions($1, $2)")
        .bind(first)
        .bind(months_from(first, month_of(to)))
        .execute(connection)
        .await?;
    Ok(())
}

/// The first day of the UTC month of `micros`.
fn month_of(micros: i64) -> NaiveDate {
    DateTime::from_timestamp_micros(micros)
        .map(|at| at.date_naive())
        .and_then(|day| day.with_day(1))
        .unwrap_or_default()
}

/// The months from `first` to `last`, both counted.
fn months_from(first: NaiveDate, last: NaiveDate) -> i32 {
    (last.year() - first.year()) * 12 + last.month() as i32 - first.month() as i32 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(year: i32, month: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(year, month, day).expect("a date")
    }

    #[test]
    fn months_are_utc_calendar_months_counted_at_both_ends() {
        // 2024-02-29 23:59:59.999999 UTC
        assert_eq!(month_of(1_709_251_199_999_999), day(2024, 2, 1));
        assert_eq!(month_of(1_709_251_200_000_000), day(2024, 3, 1));
        assert_eq!(months_from(day(2023, 11, 1), day(2026, 11, 1)), 37);
        assert_eq!(months_from(day(2026, 11, 1), day(2026, 11, 1)), 1);
    }
}
