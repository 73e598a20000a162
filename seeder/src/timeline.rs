//! When the seeded invocations happen: the span of `--years` ending at the start of the command,
//! cut into hours, each with its share of the rows. Traffic grows over the span and follows a
//! working day and week, so recent months are denser and nights and weekends quieter.
//!
//! The hours are counted back from the end instant rather than aligned to the clock, so two
//! runs of the same command write the same history shifted by the time between them, and never
//! the same `(tenant, invoked_at, id)` twice.

use std::ops::Range;

pub(super) const HOUR_MICROS: i64 = 3_600_000_000;
const DAY_MICROS: i64 = 24 * HOUR_MICROS;
/// A year of 365.25 days, in hours.
const HOURS_PER_YEAR: u32 = 8766;
/// The last month carries about this many times the traffic of the first.
const GROWTH: f64 = 6.0;
/// Weekend days carry this share of a weekday's traffic.
const WEEKEND: f64 = 0.4;

/// The hours of the history and the rows each holds.
#[derive(Debug, Clone)]
pub(super) struct Timeline {
    /// Microseconds since the Unix epoch.
    start: i64,
    end: i64,
    rows_per_hour: Vec<u32>,
}

impl Timeline {
    /// `rows` spread over the `years` that end at `end` (microseconds since the Unix epoch).
    pub(super) fn new(end: i64, years: u32, rows: u64) -> Self {
        let hours = (years.max(1) * HOURS_PER_YEAR) as usize;
        let start = end - hours as i64 * HOUR_MICROS;
        let weights: Vec<f64> = (0..hours)
            .map(|hour| traffic(start + hour as i64 * HOUR_MICROS, start, end))
            .collect();
        Self {
            start,
            end,
            rows_per_hour: apportion(rows, &weights),
        }
    }

    pub(super) fn start(&self) -> i64 {
        self.start
    }

    pub(super) fn end(&self) -> i64 {
        self.end
    }

    pub(super) fn hours(&self) -> usize {
        self.rows_per_hour.len()
    }

    /// The first instant of `hour`.
    pub(super) fn hour_start(&self, hour: usize) -> i64 {
        self.start + hour as i64 * HOUR_MICROS
    }

    pub(super) fn rows_in(&self, hour: usize) -> u32 {
        self.rows_per_hour[hour]
    }

    /// How far into the span `at` is, from 0 (start) to 1 (end).
    pub(super) fn progress(&self, at: i64) -> f64 {
        (at - self.start) as f64 / (self.end - self.start) as f64
    }

    /// Consecutive runs of hours, one per stream, holding about the same number of rows: each
    /// stream writes its own stretch of time in order.
    pub(super) fn split(&self, streams: usize) -> Vec<Range<usize>> {
        let streams = streams.max(1);
        let total: u64 = self.rows_per_hour.iter().map(|&rows| u64::from(rows)).sum();
        let mut stretches = Vec::with_capacity(streams);
        let mut first = 0;
        let mut written = 0u64;
        for (hour, &rows) in self.rows_per_hour.iter().enumerate() {
            written += u64::from(rows);
            let stream = stretches.len() as u64 + 1;
            if stretches.len() + 1 < streams && written * streams as u64 >= total * stream {
                stretches.push(first..hour + 1);
                first = hour + 1;
            }
        }
        stretches.push(first..self.hours());
        stretches
    }
}

/// The relative traffic of the hour starting at `at`.
fn traffic(at: i64, start: i64, end: i64) -> f64 {
    let progress = (at - start) as f64 / (end - start) as f64;
    let growth = GROWTH.powf(progress);
    let days = at.div_euclid(DAY_MICROS);
    // 1970-01-01 was a Thursday: 0 is Sunday.
    let weekday = (days + 4).rem_euclid(7);
    let week = if weekday == 0 || weekday == 6 {
        WEEKEND
    } else {
        1.0
    };
    let hour_of_day = at.rem_euclid(DAY_MICROS) as f64 / HOUR_MICROS as f64 + 0.5;
    // Tenants in Europe and the Americas: quiet at night, busiest early afternoon UTC.
    let day = 0.15 + (-(hour_of_day - 13.5).powi(2) / (2.0 * 4.0 * 4.0)).exp();
    growth * week * day
}

/// `rows` split by `weights` so the parts add up to exactly `rows` (running totals rounded).
fn apportion(rows: u64, weights: &[f64]) -> Vec<u32> {
    let total: f64 = weights.iter().sum();
    let mut parts = Vec::with_capacity(weights.len());
    let mut running = 0.0;
    let mut given = 0u64;
    for (index, weight) in weights.iter().enumerate() {
        running += weight;
        let due = if index + 1 == weights.len() {
            rows
        } else {
            ((running / total) * rows as f64).round() as u64
        }
        .clamp(given, rows);
        parts.push(u32::try_from(due - given).unwrap_or(u32::MAX));
        given = due;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: i64 = 1_795_000_000_000_000;

    #[test]
    fn the_hours_hold_exactly_the_rows_and_cover_the_years_up_to_the_end() {
        let timeline = Timeline::new(END, 3, 1_000_003);
        let rows: u64 = (0..timeline.hours())
            .map(|h| u64::from(timeline.rows_in(h)))
            .sum();
        assert_eq!(rows, 1_000_003);
        assert_eq!(timeline.hours(), 3 * 8766);
        assert_eq!(timeline.hour_start(timeline.hours()), END);
    }

    #[test]
    fn recent_months_and_working_hours_are_busier() {
        let timeline = Timeline::new(END, 3, 10_000_000);
        let month = 30 * 24;
        let sum =
            |hours: Range<usize>| -> u64 { hours.map(|h| u64::from(timeline.rows_in(h))).sum() };
        let first = sum(0..month);
        let last = sum(timeline.hours() - month..timeline.hours());
        assert!(last > 4 * first, "first {first}, last {last}");
        let at = |hour| traffic(hour * HOUR_MICROS, 0, END);
        // 1970-01-05 was a Monday.
        let monday = 4 * 24;
        assert!(at(monday + 13) > 3.0 * at(monday + 2));
        assert!(at(monday + 13) > 2.0 * at(monday - 24 + 13));
    }

    #[test]
    fn streams_take_consecutive_stretches_of_about_equal_rows() {
        let timeline = Timeline::new(END, 3, 1_000_000);
        let stretches = timeline.split(3);
        assert_eq!(stretches.len(), 3);
        assert_eq!(stretches[0].start, 0);
        assert_eq!(stretches[2].end, timeline.hours());
        for pair in stretches.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for stretch in stretches {
            let rows: u64 = stretch.map(|h| u64::from(timeline.rows_in(h))).sum();
            assert!((330_000..337_000).contains(&rows), "{rows}");
        }
    }
}
