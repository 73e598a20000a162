//! What librdkafka says of its connections, told once per outage rather than once per retry.
//! While a broker is away every client (a process has a dozen: a consumer and a dead-letter
//! producer per stage, the command producer) reports each failed reconnect, as an error
//! (`BrokerTransportFailure`, `AllBrokersDown`) and as a log line (facility `FAIL`): thousands
//! of lines a minute, which bury whatever else the log holds. [`Reporter`] logs the first
//! report of each kind in the process as it comes, only counts the same kind again for
//! [`QUIET`], and logs the next one after that with how many it held back. Readiness
//! (`/readyz`) names the broker for as long as it is away; the log need not repeat it.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::KafkaError;

/// How long the same kind of report is only counted after one was logged.
const QUIET: Duration = Duration::from_secs(30);

/// The client context of every producer, consumer and admin client of ours: what they report
/// is folded across the process.
#[derive(Debug, Default)]
pub(crate) struct Reporter;

/// The kinds of report seen in this process.
static SEEN: LazyLock<Folding> = LazyLock::new(Folding::default);

/// Which kinds of report were logged when.
#[derive(Debug, Default)]
struct Folding {
    seen: Mutex<HashMap<String, Seen>>,
}

/// When a kind of report was last logged, and how many came since.
#[derive(Debug, Clone, Copy)]
struct Seen {
    logged_at: Instant,
    held_back: u64,
}

impl Folding {
    /// Whether a report of `kind` arriving `now` is logged; `Some(n)`: yes, and `n` of its kind
    /// were held back before it.
    fn admit(&self, kind: &str, now: Instant) -> Option<u64> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        match seen.get_mut(kind) {
            Some(last) if now.duration_since(last.logged_at) < QUIET => {
                last.held_back += 1;
                None
            }
            Some(last) => {
                let held_back = last.held_back;
                *last = Seen {
                    logged_at: now,
                    held_back: 0,
                };
                Some(held_back)
            }
            None => {
                seen.insert(
                    kind.to_owned(),
                    Seen {
                        logged_at: now,
                        held_back: 0,
                    },
                );
                Some(0)
            }
        }
    }
}

/// Whether a log line of `level` from `facility` is folded: warnings and errors, and the
/// connection failures (`FAIL`) librdkafka logs at any level.
fn folded(level: RDKafkaLogLevel, facility: &str) -> bool {
    (level as i32) <= (RDKafkaLogLevel::Warning as i32) || facility == "FAIL"
}

impl ClientContext for Reporter {
    fn stats(&self, statistics: rdkafka::Statistics) {
        crate::client_stats::keep(statistics);
    }

    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        let held_back = if folded(level, facility) {
            match SEEN.admit(&format!("log {facility}"), Instant::now()) {
                Some(held_back) => held_back,
                None => return,
            }
        } else {
            0
        };
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", facility, held_back, "{message}");
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", facility, held_back, "{message}");
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", facility, held_back, "{message}");
            }
            RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", facility, "{message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let kind = match error.rdkafka_error_code() {
            Some(code) => format!("error {code:?}"),
            None => format!("error {error}"),
        };
        if let Some(held_back) = SEEN.admit(&kind, Instant::now()) {
            tracing::error!(target: "librdkafka", %error, held_back, "{reason}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_failures_and_warnings_are_folded_and_the_rest_told() {
        assert!(folded(RDKafkaLogLevel::Error, "REQTMOUT"));
        assert!(folded(RDKafkaLogLevel::Warning, "SESSTMOUT"));
        assert!(folded(RDKafkaLogLevel::Info, "FAIL"));
        assert!(!folded(RDKafkaLogLevel::Info, "CGRPJOIN"));
    }

    #[test]
    fn repeats_are_counted_and_told_with_the_next_report_after_the_quiet_time() {
        let reporter = Folding::default();
        let start = Instant::now();
        assert_eq!(reporter.admit("error AllBrokersDown", start), Some(0));
        for second in 1..=29 {
            let now = start + Duration::from_secs(second);
            assert_eq!(reporter.admit("error AllBrokersDown", now), None);
        }
        // Another kind is its own.
        let later = start + Duration::from_secs(5);
        assert_eq!(reporter.admit("log FAIL", later), Some(0));
        let after = start + QUIET;
        assert_eq!(reporter.admit("error AllBrokersDown", after), Some(29));
        assert_eq!(
            reporter.admit("error AllBrokersDown", after + Duration::from_secs(1)),
            None
        );
    }
}
