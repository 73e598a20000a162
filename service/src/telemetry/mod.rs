//! Telemetry shared by the three services: JSON log lines with censored keys (`log_line`,
//! `censor`), OTLP/HTTP traces ([`traces`]), and metrics as Prometheus text ([`metrics`]) and
//! over OTLP/HTTP (`otlp_metrics`). [`Settings`] reads the environment (SPEC "Telemetry
//! environment"); [`init`] configures everything from it.

mod censor;
mod db_spans;
mod log_filter;
mod log_line;
mod log_writer;
pub mod metrics;
pub mod observed;
mod otlp_metrics;
mod resource;
pub mod traces;

use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::Env;
use log_line::ProcessFields;

pub use metrics_exporter_prometheus::PrometheusHandle as MetricsHandle;

/// Errors while setting telemetry up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("OTLP exporter: {0}")]
    Otlp(String),
    #[error("metrics recorder: {0}")]
    Metrics(String),
    #[error("a global subscriber is already installed: {0}")]
    AlreadyInstalled(String),
    #[error("log writer thread: {0}")]
    LogWriter(std::io::Error),
}

/// The samplers `OTEL_TRACES_SAMPLER` may name (SPEC "Telemetry environment").
const SAMPLERS: [&str; 6] = [
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
];

/// What the environment asks of telemetry.
#[derive(Debug)]
pub struct Settings {
    filter: EnvFilter,
    env: String,
    /// An OTLP endpoint is set and the SDK is not disabled.
    export: bool,
    /// `METRICS_PORT`: the text exposition on a listener of its own.
    pub metrics_port: Option<u16>,
}

impl Settings {
    /// Reads `LOG_LEVEL`, `NODE_ENV`, `METRICS_PORT` and the `OTEL_*` variables; a bad value
    /// is a problem of `env`.
    pub fn read(env: &mut Env) -> Self {
        let level = env.text_or("LOG_LEVEL", "info");
        let filter = EnvFilter::try_new(filter_directive(&level)).unwrap_or_else(|error| {
            env.problem(format!(
                "LOG_LEVEL={level:?} is not a valid filter: {error}"
            ));
            EnvFilter::new("info")
        });
        let node_env = env.text_or("NODE_ENV", "development");
        let endpoint = env.text("OTEL_EXPORTER_OTLP_ENDPOINT");
        let disabled = env.flag("OTEL_SDK_DISABLED", false);
        let _ = env.text("OTEL_SERVICE_NAME");
        let sampler = env.text_or("OTEL_TRACES_SAMPLER", "parentbased_always_on");
        if !SAMPLERS.contains(&sampler.as_str()) {
            env.problem(format!(
                "OTEL_TRACES_SAMPLER={sampler:?} is not one of {}",
                SAMPLERS.join(", ")
            ));
        }
        let ratio: f64 = env.parsed("OTEL_TRACES_SAMPLER_ARG", 1.0);
        if !(0.0..=1.0).contains(&ratio) {
            env.problem(format!(
                "OTEL_TRACES_SAMPLER_ARG={ratio} is not a ratio in [0, 1]"
            ));
        }
        let _ = env.parsed_opt::<u64>("OTEL_METRIC_EXPORT_INTERVAL");
        let metrics_port = env.parsed_opt("METRICS_PORT");
        Self {
            filter,
            env: node_env,
            export: endpoint.is_some() && !disabled,
            metrics_port,
        }
    }
}

/// Live telemetry of a process. Keep it until exit; [`Telemetry::shutdown`] flushes spans.
#[derive(Debug)]
pub struct Telemetry {
    metrics: MetricsHandle,
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    _log_writer: log_writer::LogWriterGuard,
}

impl Telemetry {
    /// A clonable renderer for `/metrics` handlers.
    pub fn metrics_handle(&self) -> MetricsHandle {
        self.metrics.clone()
    }

    /// Whether spans are exported.
    pub fn traces_exported(&self) -> bool {
        self.tracer_provider.is_some()
    }

    /// Flushes pending spans and metrics.
    pub fn shutdown(self) {
        if let Some(provider) = self.tracer_provider
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(%error, "tracer provider shutdown");
        }
        if let Some(provider) = self.meter_provider
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(%error, "meter provider shutdown");
        }
    }
}

/// Configures logs, traces and metrics for `service` as `settings` say.
pub fn init(
    settings: Settings,
    service: &'static str,
    version: &'static str,
) -> Result<Telemetry, Error> {
    let process = ProcessFields {
        service: service.to_owned(),
        version: version.to_owned(),
        env: settings.env.clone(),
    };
    let resource = settings
        .export
        .then(|| resource::build(service, version, &settings.env));
    let tracer_provider = resource.clone().map(traces::tracer_provider).transpose()?;
    let meter_provider = resource.map(otlp_metrics::meter_provider).transpose()?;
    traces::set_exported(tracer_provider.is_some());

    // Lines leave for stdout from one thread, a few milliseconds' worth in each write.
    let (writer, guard) = log_writer::start(std::io::stdout()).map_err(Error::LogWriter)?;
    let logs = log_line::JsonLogLayer::new(&process, writer, tracer_provider.is_some());
    let otel = tracer_provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(traces::tracer(provider, service))
            .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
    });
    let db_queries = tracer_provider
        .as_ref()
        .map(|provider| db_spans::DbQuerySpans::new(traces::tracer(provider, service)));
    let db_dispatch = db_queries.as_ref().map(db_spans::DbQuerySpans::dispatch);
    tracing_subscriber::registry()
        .with(logs.with_filter(log_filter::LogFilter::new(settings.filter)))
        .with(otel)
        .with(db_queries.map(|layer| layer.with_filter(db_spans::statements())))
        .try_init()
        .map_err(|e| Error::AlreadyInstalled(e.to_string()))?;
    if let Some(cell) = db_dispatch {
        tracing::dispatcher::get_default(|dispatch| cell.set(dispatch.downgrade()).ok());
    }

    if settings.metrics_port.is_some() || meter_provider.is_some() {
        use opentelemetry::metrics::MeterProvider as _;
        observed::enable(
            meter_provider
                .as_ref()
                .map(|provider| provider.meter(service)),
        );
    }
    let otlp = meter_provider
        .as_ref()
        .map(|provider| otlp_metrics::OtlpRecorder::new(provider, service));
    let metrics = metrics::install(otlp)?;
    Ok(Telemetry {
        metrics,
        tracer_provider,
        meter_provider,
        _log_writer: guard,
    })
}

/// `LOG_LEVEL` is a level (`info`) or a full filter (`info,sqlx=warn`). Chatty dependencies are
/// held at `warn` unless the filter names them.
fn filter_directive(level: &str) -> String {
    if level.contains('=') || level.contains(',') {
        level.to_owned()
    } else {
        format!(
            "{level},sqlx=warn,rdkafka=warn,hyper=warn,h2=warn,aws=warn,aws_config=warn,aws_smithy_runtime=warn"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_problems_of_the_environment() {
        let mut env = Env::from_pairs([
            ("LOG_LEVEL", "loud=="),
            ("OTEL_TRACES_SAMPLER", "sometimes"),
            ("OTEL_TRACES_SAMPLER_ARG", "2"),
            ("METRICS_PORT", "x"),
        ]);
        let _ = Settings::read(&mut env);
        let problems = env.finish(()).expect_err("four problems").0;
        assert_eq!(problems.len(), 4, "{problems:?}");
    }

    #[test]
    fn export_needs_an_endpoint_and_the_sdk_on() {
        let read = |pairs: &[(&str, &str)]| Settings::read(&mut Env::from_pairs(pairs.to_vec()));
        assert!(!read(&[]).export);
        assert!(read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]).export);
        assert!(
            !read(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_SDK_DISABLED", "TRUE")
            ])
            .export
        );
    }
}
