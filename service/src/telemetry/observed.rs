//! Observable gauges (SPEC Operations "Metrics" rule 3): grouped counts computed when metrics are
//! collected, each group's answer kept 30 s, registered only when telemetry is on (an OTLP
//! endpoint or `METRICS_PORT`). A group whose query fails logs a warning and is left out of
//! that export, rather than showing stale or zero counts.
//!
//! `/metrics` asks each group for its points when it renders (a group answered within 30 s is
//! not asked again). OTLP's reader calls back synchronously, so with an endpoint a task asks
//! every group every 30 s and the callback reports what the last answer was.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;

use crate::http::exposition::label_value;

/// How long a group's answer stands.
const FRESH_FOR: Duration = Duration::from_secs(30);

/// One grouped count: a point per group of label values.
pub type Points = Vec<(Vec<String>, f64)>;

/// A gauge whose points a query computes.
pub trait Observe: Send + Sync + 'static {
    /// The instrument (`svc.approval.pending`).
    fn name(&self) -> &'static str;
    /// Its label names, in the order of each point's values.
    fn labels(&self) -> &'static [&'static str];
    /// The points now.
    fn points(&self) -> BoxFuture<'static, Result<Points, String>>;
}

struct Group {
    observe: Box<dyn Observe>,
    /// The last answer and when it came; `None` points after a failure.
    last: Mutex<Option<(Instant, Option<Points>)>>,
}

impl Group {
    /// The points, asking the query when the last answer is older than [`FRESH_FOR`].
    async fn points(&self) -> Option<Points> {
        if let Some((at, points)) = &*self.lock()
            && at.elapsed() < FRESH_FOR
        {
            return points.clone();
        }
        self.refresh().await
    }

    async fn refresh(&self) -> Option<Points> {
        let points = match self.observe.points().await {
            Ok(points) => Some(points),
            Err(error) => {
                tracing::warn!(%error, gauge = self.observe.name(), "gauge left out of the export");
                None
            }
        };
        *self.lock() = Some((Instant::now(), points.clone()));
        points
    }

    /// The last answer for a push, unless it is older than two refreshes (a refresh that hangs
    /// leaves the gauge out rather than repeating an old count).
    fn latest(&self) -> Option<Points> {
        self.lock()
            .as_ref()
            .filter(|(at, _)| at.elapsed() < 2 * FRESH_FOR)
            .and_then(|(_, points)| points.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Instant, Option<Points>)>> {
        self.last.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where the groups live: set once telemetry starts, when it is on.
struct Registry {
    groups: Mutex<Vec<Arc<Group>>>,
    /// The OTLP meter, when metrics are pushed.
    meter: Option<Meter>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Turns the registry on (telemetry is on); `meter` when metrics are pushed over OTLP.
pub(crate) fn enable(meter: Option<Meter>) {
    let _ = REGISTRY.set(Registry {
        groups: Mutex::default(),
        meter,
    });
}

/// Registers `observe`, when telemetry is on; answers whether it was.
pub fn register(observe: impl Observe) -> bool {
    let Some(registry) = REGISTRY.get() else {
        return false;
    };
    let group = Arc::new(Group {
        observe: Box::new(observe),
        last: Mutex::default(),
    });
    if let Some(meter) = &registry.meter {
        let observed = group.clone();
        let labels = group.observe.labels();
        let mut builder = meter.f64_observable_gauge(group.observe.name());
        if let Some(unit) = super::metrics::count_unit(group.observe.name()) {
            builder = builder.with_unit(unit);
        }
        let _gauge = builder
            .with_callback(move |observer| {
                for (values, value) in observed.latest().unwrap_or_default() {
                    let attributes: Vec<KeyValue> = labels
                        .iter()
                        .zip(values)
                        .map(|(name, value)| KeyValue::new(*name, value))
                        .collect();
                    observer.observe(value, &attributes);
                }
            })
            .build();
        let refreshed = group.clone();
        tokio::spawn(async move {
            loop {
                refreshed.refresh().await;
                tokio::time::sleep(FRESH_FOR).await;
            }
        });
    }
    registry
        .groups
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(group);
    true
}

/// The registered gauges in text exposition (dots as underscores), asking the groups whose
/// answer is stale; empty when telemetry is off.
pub(crate) async fn render() -> String {
    let Some(registry) = REGISTRY.get() else {
        return String::new();
    };
    let groups: Vec<Arc<Group>> = registry
        .groups
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mut text = String::new();
    for group in groups {
        if let Some(points) = group.points().await {
            exposition(
                &mut text,
                group.observe.name(),
                group.observe.labels(),
                &points,
            );
        }
    }
    text
}

fn exposition(text: &mut String, name: &str, labels: &[&str], points: &[(Vec<String>, f64)]) {
    use std::fmt::Write;
    let name = name.replace('.', "_");
    let _ = writeln!(text, "# TYPE {name} gauge");
    for (values, value) in points {
        let pairs: Vec<String> = labels
            .iter()
            .zip(values)
            .map(|(label, value)| format!("{label}=\"{}\"", label_value(value)))
            .collect();
        let _ = writeln!(text, "{name}{{{}}} {value}", pairs.join(","));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_written_as_the_text_exposition_says() {
        let mut text = String::new();
        let points = vec![(vec!["t1".to_owned(), "a\"b".to_owned()], 3.0)];
        exposition(
            &mut text,
            "svc.approval.pending",
            &["tenant", "kind"],
            &points,
        );
        assert_eq!(
            text,
            "# TYPE svc_approval_pending gauge\nsvc_approval_pending{tenant=\"t1\",kind=\"a\\\"b\"} 3\n"
        );
    }

    struct Failing;

    impl Observe for Failing {
        fn name(&self) -> &'static str {
            "svc.case.open"
        }
        fn labels(&self) -> &'static [&'static str] {
            &["tenant"]
        }
        fn points(&self) -> BoxFuture<'static, Result<Points, String>> {
            Box::pin(async { Err("the database is away".to_owned()) })
        }
    }

    #[tokio::test]
    async fn a_failing_group_is_left_out() {
        let group = Group {
            observe: Box::new(Failing),
            last: Mutex::default(),
        };
        assert_eq!(group.points().await, None);
        assert_eq!(group.latest(), None);
    }
}
