//! What a seeding run has written so far, on stderr every few seconds (stdout carries only the
//! summary, for scripts).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const EVERY: Duration = Duration::from_secs(5);

/// Reports `written` of `total` rows every few seconds until aborted.
pub(super) async fn report(written: Arc<AtomicU64>, total: u64, started: Instant) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + EVERY, EVERY);
    loop {
        ticks.tick().await;
        eprintln!(
            "seed-history: {}",
            line(written.load(Ordering::Relaxed), total, started.elapsed())
        );
    }
}

fn line(written: u64, total: u64, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64().max(0.001);
    let rate = written as f64 / seconds;
    let percent = 100.0 * written as f64 / total.max(1) as f64;
    let left = if rate > 0.0 {
        format!("{:.0} s left", total.saturating_sub(written) as f64 / rate)
    } else {
        "starting".to_owned()
    };
    format!("{written} of {total} rows ({percent:.1} %), {rate:.0} rows/s, {left}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_how_far_how_fast_and_how_long_still() {
        assert_eq!(
            line(2_500_000, 10_000_000, Duration::from_secs(100)),
            "2500000 of 10000000 rows (25.0 %), 25000 rows/s, 300 s left"
        );
        assert!(line(0, 10, Duration::ZERO).ends_with("starting"));
    }
}
