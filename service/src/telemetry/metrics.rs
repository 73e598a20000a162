//! The `metrics` facade's recorder: Prometheus text exposition with the SPEC's histogram buckets,
//! and, when OTLP export is on, the same instruments pushed over OTLP (`otlp_metrics`).

use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use metrics_util::layers::FanoutBuilder;

use super::Error;
use super::otlp_metrics::OtlpRecorder;

/// Buckets of millisecond histograms (SPEC "Metrics").
pub const MILLISECOND_BUCKETS: &[f64] =
    &[1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0];
/// Buckets of second histograms (SPEC "Metrics").
pub const SECOND_BUCKETS: &[f64] = &[1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0];
/// Histograms in seconds whose values are mostly below one: the OpenTelemetry HTTP buckets.
pub const HTTP_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Histograms measured in seconds; every other `*.duration` histogram is in milliseconds.
const SECOND_HISTOGRAMS: &[&str] = &[
    "svc.workflow.run.duration",
    "svc.app.callback.wait",
    "svc.case.time_to_decision",
];

/// Histograms in seconds that take [`HTTP_BUCKETS`]: the HTTP semantic conventions' duration,
/// and the webhook deliveries' lag (milliseconds usually, seconds when the dispatchers fall
/// behind; not in SPEC's table).
const SUB_SECOND_HISTOGRAMS: &[&str] =
    &["http.server.request.duration", "svc.webhook.delivery.lag"];

/// The buckets of histogram `name` (SPEC "Metrics": milliseconds unless listed in seconds).
pub(crate) fn buckets_for(name: &str) -> &'static [f64] {
    if SUB_SECOND_HISTOGRAMS.contains(&name) {
        HTTP_BUCKETS
    } else if SECOND_HISTOGRAMS.contains(&name) {
        SECOND_BUCKETS
    } else {
        MILLISECOND_BUCKETS
    }
}

/// The units of the instruments that are not histograms: SPEC's table, then ours. OTLP
/// receivers add a unit to the name (SPEC "Metrics" rule 2), so each is part of the contract.
const COUNT_UNITS: &[(&str, &str)] = &[
    ("svc.decision.count", "decision"),
    ("svc.workflow.run.active", "run"),
    ("svc.app.calls.in_flight", "call"),
    ("svc.case.open", "case"),
    ("svc.approval.pending", "approval"),
    ("svc.document.pending", "document"),
    ("svc.document.processed.count", "document"),
    ("svc.audit.export.rows", "row"),
    ("svc.workflow.task.failures", "failure"),
    ("svc.webhook.delivery.count", "delivery"),
    ("svc.directory.sightings.dropped", "sighting"),
    ("consumer.dead_lettered", "message"),
    ("ingress.read_cache.lookups", "lookup"),
    ("pipeline.history_changes.published", "change"),
];

/// The unit of counter or gauge `name`: what it counts.
pub(crate) fn count_unit(name: &str) -> Option<&'static str> {
    COUNT_UNITS
        .iter()
        .find(|(counted, _)| *counted == name)
        .map(|(_, unit)| *unit)
}

/// The unit of histogram `name`: `s` for those listed in seconds, `ms` for the rest (SPEC
/// "Metrics").
pub(crate) fn histogram_unit(name: &str) -> &'static str {
    if SUB_SECOND_HISTOGRAMS.contains(&name) || SECOND_HISTOGRAMS.contains(&name) {
        "s"
    } else {
        "ms"
    }
}

/// Installs the process-wide recorder (Prometheus, plus `otlp` when given) and returns the
/// handle that renders `/metrics`.
pub(crate) fn install(otlp: Option<OtlpRecorder>) -> Result<PrometheusHandle, Error> {
    // SPEC "Metrics" rule 2: counters are suffixed `_total` in the text exposition (no unit
    // suffix: no instrument is described with a unit).
    let mut builder = PrometheusBuilder::new().with_recommended_naming(true);
    for name in SUB_SECOND_HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).into()), HTTP_BUCKETS)
            .map_err(|e| Error::Metrics(e.to_string()))?;
    }
    for name in SECOND_HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).into()), SECOND_BUCKETS)
            .map_err(|e| Error::Metrics(e.to_string()))?;
    }
    builder = builder
        .set_buckets(MILLISECOND_BUCKETS)
        .map_err(|e| Error::Metrics(e.to_string()))?;
    let prometheus = builder.build_recorder();
    let handle = prometheus.handle();
    let installed = match otlp {
        None => metrics::set_global_recorder(prometheus).map_err(|e| e.to_string()),
        Some(otlp) => metrics::set_global_recorder(
            FanoutBuilder::default()
                .add_recorder(prometheus)
                .add_recorder(otlp)
                .build(),
        )
        .map_err(|e| e.to_string()),
    };
    installed.map_err(Error::Metrics)?;
    spawn_upkeep(handle.clone());
    Ok(handle)
}

/// Histograms keep raw samples until upkeep folds them; without it memory grows with traffic.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(5));
                handle.run_upkeep();
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "metrics upkeep thread not started");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_take_the_specs_buckets_and_units() {
        assert_eq!(buckets_for("svc.app.call.duration"), MILLISECOND_BUCKETS);
        assert_eq!(histogram_unit("svc.app.call.duration"), "ms");
        assert_eq!(buckets_for("svc.app.callback.wait"), SECOND_BUCKETS);
        assert_eq!(histogram_unit("svc.workflow.run.duration"), "s");
        assert_eq!(buckets_for("http.server.request.duration"), HTTP_BUCKETS);
        assert_eq!(histogram_unit("http.server.request.duration"), "s");
        assert_eq!(buckets_for("svc.webhook.delivery.lag"), HTTP_BUCKETS);
        assert_eq!(histogram_unit("svc.webhook.delivery.lag"), "s");
        assert_eq!(histogram_unit("svc.rule.evaluation.duration"), "ms");
    }

    #[test]
    fn counters_and_gauges_take_the_unit_they_count() {
        assert_eq!(count_unit("svc.decision.count"), Some("decision"));
        assert_eq!(count_unit("svc.case.open"), Some("case"));
        assert_eq!(count_unit("svc.app.calls.in_flight"), Some("call"));
        assert_eq!(count_unit("svc.audit.export.rows"), Some("row"));
        assert_eq!(count_unit("an.undescribed.thing"), None);
    }
}
