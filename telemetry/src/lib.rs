//! Telemetry shared by the three services: JSON log lines with censored keys
//! ([`log_line`], [`censor`]), OTLP/HTTP traces ([`traces`]), and metrics as Prometheus text
//! ([`metrics`]) and over OTLP/HTTP (`otlp_metrics`). One call, [`init`], configures them all
//! from the environment.

pub mod censor;
pub mod health;
pub mod http_server;
pub mod log_line;
pub mod metrics;
mod otlp_metrics;
pub mod request_body;
pub mod request_id;
mod resource;
pub mod service;
pub mod shutdown;
pub mod traces;

use metrics_exporter_prometheus::PrometheusHandle;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use log_line::ProcessFields;
pub use metrics_exporter_prometheus::PrometheusHandle as MetricsHandle;

/// Errors while setting telemetry up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("LOG_LEVEL is not a valid filter: {0}")]
    LogLevel(String),
    #[error("OTLP exporter: {0}")]
    Otlp(String),
    #[error("metrics recorder: {0}")]
    Metrics(String),
    #[error("a global subscriber is already installed: {0}")]
    AlreadyInstalled(String),
}

/// Live telemetry of a process. Keep it until exit; [`Telemetry::shutdown`] flushes spans.
#[derive(Debug)]
pub struct Telemetry {
    metrics: PrometheusHandle,
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    _log_writer: WorkerGuard,
}

impl Telemetry {
    /// Renders the Prometheus text exposition of every instrument.
    pub fn render_metrics(&self) -> String {
        self.metrics.render()
    }

    /// A clonable renderer for `/metrics` handlers.
    pub fn metrics_handle(&self) -> PrometheusHandle {
        self.metrics.clone()
    }

    /// Whether spans are exported (an OTLP endpoint is configured and the SDK is on).
    pub fn traces_exported(&self) -> bool {
        self.tracer_provider.is_some()
    }

    /// Flushes pending spans, metrics and log lines.
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

/// Configures logs (`LOG_LEVEL`, `NODE_ENV`), traces (`OTEL_*`) and metrics for `service`.
pub fn init(service: &'static str, version: &'static str) -> Result<Telemetry, Error> {
    let level = std::env::var("LOG_LEVEL").unwrap_or_else(|_| "info".to_owned());
    let filter =
        EnvFilter::try_new(filter_directive(&level)).map_err(|e| Error::LogLevel(e.to_string()))?;
    let env = std::env::var("NODE_ENV").unwrap_or_else(|_| "development".to_owned());
    let process = ProcessFields {
        service: service.to_owned(),
        version: version.to_owned(),
        env: env.clone(),
    };

    let resource = traces::export_requested().then(|| resource::build(service, version, &env));
    let tracer_provider = resource.clone().map(traces::tracer_provider).transpose()?;
    let meter_provider = resource.map(otlp_metrics::meter_provider).transpose()?;

    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .finish(std::io::stdout());
    let logs = log_line::JsonLogLayer::new(&process, writer, tracer_provider.is_some());
    let otel = tracer_provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(traces::tracer(provider, service))
            .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
    });
    tracing_subscriber::registry()
        .with(logs.with_filter(filter))
        .with(otel)
        .try_init()
        .map_err(|e| Error::AlreadyInstalled(e.to_string()))?;

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
