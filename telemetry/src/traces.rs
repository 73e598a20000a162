//! OTLP/HTTP trace export and W3C trace context, configured from the `OTEL_*` environment
//! (SPEC "Telemetry environment"). The SDK reads `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`,
//! `OTEL_SERVICE_NAME` and appends `/v1/traces` to `OTEL_EXPORTER_OTLP_ENDPOINT` itself.

use std::collections::HashMap;

use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::Error;

/// True when the environment asks for OTLP export (traces and metrics): an endpoint is set and
/// the SDK is not disabled.
pub fn export_requested() -> bool {
    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_default();
    let disabled = std::env::var("OTEL_SDK_DISABLED")
        .map(|v| v.eq_ignore_ascii_case("true"))
        .unwrap_or(false);
    !endpoint.trim().is_empty() && !disabled
}

/// Builds the tracer provider exporting over OTLP/HTTP in batches.
pub(crate) fn tracer_provider(resource: Resource) -> Result<SdkTracerProvider, Error> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| Error::Otlp(e.to_string()))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

pub(crate) fn tracer(
    provider: &SdkTracerProvider,
    service: &'static str,
) -> opentelemetry_sdk::trace::Tracer {
    provider.tracer(service)
}

/// Trace and span id (hex) of a span, when it is exported.
pub(crate) fn trace_ids(id: &tracing::span::Id) -> Option<(String, String)> {
    tracing::dispatcher::get_default(|dispatch| {
        let cx = tracing_opentelemetry::get_otel_context(id, dispatch)?;
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid()
            .then(|| (sc.trace_id().to_string(), sc.span_id().to_string()))
    })
}

/// The `traceparent` of `span`, to carry its context across Kafka or HTTP. `None` when spans are
/// not exported.
pub fn traceparent_of(span: &Span) -> Option<String> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}

/// Makes `span` a child of the remote context in `traceparent`; an invalid header is ignored.
pub fn continue_from(span: &Span, traceparent: &str) {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let cx: Context = TraceContextPropagator::new().extract(&carrier);
    if cx.span().span_context().is_valid() {
        // Only fails when the span was already started, which callers avoid by calling this
        // right after creating it.
        let _ = span.set_parent(cx);
    }
}
