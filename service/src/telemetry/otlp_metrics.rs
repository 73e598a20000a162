//! OTLP/HTTP metrics (SPEC Operations "Metrics" rule 1): the instruments the services record
//! through the `metrics` facade, pushed to `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/metrics` every
//! 15 s (or `OTEL_METRIC_EXPORT_INTERVAL` ms), beside the Prometheus text of `/metrics`.
//!
//! The facade's handles become OpenTelemetry instruments of the type the SPEC names: counters,
//! histograms with the SPEC's buckets and unit, gauges, and up-down counters for the instruments
//! the SPEC calls so. Handles are kept per key (name and labels), so a gauge's increments add up
//! and registering again, which the facade's macros do on every use, is a map lookup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{InstrumentBuilder, Meter, MeterProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};

use super::Error;
use super::metrics::{buckets_for, count_unit, histogram_unit};

/// The push interval of SPEC rule 1, unless `OTEL_METRIC_EXPORT_INTERVAL` says otherwise.
const PUSH_INTERVAL: Duration = Duration::from_secs(15);

/// Instruments the SPEC lists as up-down counters (the other gauges are gauges).
const UP_DOWN_COUNTERS: &[&str] = &["svc.app.calls.in_flight"];

/// The meter provider pushing over OTLP/HTTP. Its exporter appends `/v1/metrics` to the endpoint.
pub(crate) fn meter_provider(resource: Resource) -> Result<SdkMeterProvider, Error> {
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .build()
        .map_err(|e| Error::Otlp(e.to_string()))?;
    let mut reader = PeriodicReader::builder(exporter);
    if std::env::var_os("OTEL_METRIC_EXPORT_INTERVAL").is_none() {
        reader = reader.with_interval(PUSH_INTERVAL);
    }
    Ok(SdkMeterProvider::builder()
        .with_reader(reader.build())
        .with_resource(resource)
        .build())
}

/// The `metrics` facade's recorder that feeds OpenTelemetry instruments.
#[derive(Debug)]
pub(crate) struct OtlpRecorder {
    meter: Meter,
    counters: Handles<OtlpCounter>,
    gauges: Handles<OtlpGauge>,
    histograms: Handles<OtlpHistogram>,
}

type Handles<T> = RwLock<HashMap<Key, Arc<T>>>;

impl OtlpRecorder {
    pub(crate) fn new(provider: &SdkMeterProvider, service: &'static str) -> Self {
        Self {
            meter: provider.meter(service),
            counters: RwLock::default(),
            gauges: RwLock::default(),
            histograms: RwLock::default(),
        }
    }
}

/// The handle of `key`, made by `make` the first time.
fn handle<T>(handles: &Handles<T>, key: &Key, make: impl FnOnce() -> T) -> Arc<T> {
    if let Some(found) = handles.read().unwrap_or_else(|e| e.into_inner()).get(key) {
        return found.clone();
    }
    handles
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key.clone())
        .or_insert_with(|| Arc::new(make()))
        .clone()
}

fn attributes(key: &Key) -> Vec<KeyValue> {
    key.labels()
        .map(|label| KeyValue::new(label.key().to_owned(), label.value().to_owned()))
        .collect()
}

impl Recorder for OtlpRecorder {
    // Units and buckets come from the SPEC's table (`count_unit`, `histogram_unit`, `buckets_for`), not from
    // descriptions.
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(handle(&self.counters, key, || OtlpCounter {
            counter: with_unit(self.meter.u64_counter(key.name().to_owned()), key.name()).build(),
            attributes: attributes(key),
            last_absolute: Mutex::new(0),
        }))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(handle(&self.gauges, key, || {
            let name = key.name().to_owned();
            let instrument = if UP_DOWN_COUNTERS.contains(&key.name()) {
                GaugeInstrument::UpDown(
                    with_unit(self.meter.f64_up_down_counter(name), key.name()).build(),
                )
            } else {
                GaugeInstrument::Gauge(with_unit(self.meter.f64_gauge(name), key.name()).build())
            };
            OtlpGauge {
                instrument,
                attributes: attributes(key),
                value: Mutex::new(0.0),
            }
        }))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(handle(&self.histograms, key, || {
            let name = key.name();
            let histogram = self
                .meter
                .f64_histogram(name.to_owned())
                .with_boundaries(buckets_for(name).to_vec())
                .with_unit(histogram_unit(name))
                .build();
            OtlpHistogram {
                histogram,
                attributes: attributes(key),
            }
        }))
    }
}

/// `builder` with the unit of counter or gauge `name`, when it has one.
fn with_unit<'a, I>(builder: InstrumentBuilder<'a, I>, name: &str) -> InstrumentBuilder<'a, I> {
    match count_unit(name) {
        Some(unit) => builder.with_unit(unit),
        None => builder,
    }
}

#[derive(Debug)]
struct OtlpCounter {
    counter: opentelemetry::metrics::Counter<u64>,
    attributes: Vec<KeyValue>,
    /// `absolute` sets a running total; OpenTelemetry counters only add, so the difference is.
    last_absolute: Mutex<u64>,
}

impl CounterFn for OtlpCounter {
    fn increment(&self, value: u64) {
        self.counter.add(value, &self.attributes);
    }

    fn absolute(&self, value: u64) {
        let mut last = self.last_absolute.lock().unwrap_or_else(|e| e.into_inner());
        if value > *last {
            self.counter.add(value - *last, &self.attributes);
            *last = value;
        }
    }
}

#[derive(Debug)]
enum GaugeInstrument {
    Gauge(opentelemetry::metrics::Gauge<f64>),
    UpDown(opentelemetry::metrics::UpDownCounter<f64>),
}

#[derive(Debug)]
struct OtlpGauge {
    instrument: GaugeInstrument,
    attributes: Vec<KeyValue>,
    /// The current value: a gauge's increments and a `set` both land here. Updated and reported
    /// under the lock, so that concurrent updates are reported in the order they were applied.
    value: Mutex<f64>,
}

impl OtlpGauge {
    /// Applies `change` to the current value and reports the result.
    fn update(&self, change: impl Fn(f64) -> f64) {
        let mut value = self.value.lock().unwrap_or_else(|e| e.into_inner());
        let before = *value;
        *value = change(before);
        match &self.instrument {
            GaugeInstrument::Gauge(gauge) => gauge.record(*value, &self.attributes),
            GaugeInstrument::UpDown(counter) => counter.add(*value - before, &self.attributes),
        }
    }
}

impl GaugeFn for OtlpGauge {
    fn increment(&self, value: f64) {
        self.update(|current| current + value);
    }

    fn decrement(&self, value: f64) {
        self.update(|current| current - value);
    }

    fn set(&self, value: f64) {
        self.update(|_| value);
    }
}

#[derive(Debug)]
struct OtlpHistogram {
    histogram: opentelemetry::metrics::Histogram<f64>,
    attributes: Vec<KeyValue>,
}

impl HistogramFn for OtlpHistogram {
    fn record(&self, value: f64) {
        self.histogram.record(value, &self.attributes);
    }
}

#[cfg(test)]
mod tests {
    use metrics::{Label, Level};
    use opentelemetry_sdk::metrics::InMemoryMetricExporter;

    use super::*;

    /// SPEC "Metrics" rule 2: OTLP receivers add the unit to the name, so every instrument goes
    /// out with the unit of SPEC's table.
    #[test]
    fn instruments_are_pushed_with_the_specs_units() {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let recorder = OtlpRecorder::new(&provider, "test");
        let metadata = Metadata::new("test", Level::INFO, None);
        let tenant = || vec![Label::new("tenant", "t-1")];
        recorder
            .register_counter(&Key::from_parts("svc.decision.count", tenant()), &metadata)
            .increment(1);
        recorder
            .register_gauge(&Key::from_name("svc.app.calls.in_flight"), &metadata)
            .increment(1.0);
        recorder
            .register_histogram(
                &Key::from_parts("svc.workflow.run.duration", tenant()),
                &metadata,
            )
            .record(2.0);
        recorder
            .register_histogram(
                &Key::from_parts("svc.rule.evaluation.duration", tenant()),
                &metadata,
            )
            .record(2.0);
        provider.force_flush().expect("flush");

        let exported = exporter.get_finished_metrics().expect("metrics");
        let units: HashMap<String, String> = exported
            .iter()
            .flat_map(|resource| resource.scope_metrics())
            .flat_map(|scope| scope.metrics())
            .map(|metric| (metric.name().to_owned(), metric.unit().to_owned()))
            .collect();
        let unit = |name: &str| units.get(name).map(String::as_str);
        assert_eq!(unit("svc.decision.count"), Some("decision"));
        assert_eq!(unit("svc.app.calls.in_flight"), Some("call"));
        assert_eq!(unit("svc.workflow.run.duration"), Some("s"));
        assert_eq!(unit("svc.rule.evaluation.duration"), Some("ms"));
    }
}
