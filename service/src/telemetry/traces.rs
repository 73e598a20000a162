//! Traces: OTLP/HTTP export configured from the `OTEL_*` environment (the SDK reads
//! `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` and `OTEL_SERVICE_NAME`, and appends
//! `/v1/traces` to `OTEL_EXPORTER_OTLP_ENDPOINT`), and W3C trace context across services.
//!
//! With export off there is no tracer provider and spans are not recorded (SPEC: a
//! metrics-only process registers none). A span that continues a caller's `traceparent` still
//! keeps that context, so its log lines carry the caller's trace and the context travels on to
//! the next service: the span declares the field [`REMOTE_PARENT_FIELD`], and
//! [`continue_from`] records the header there for the log layer to keep.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::registry::{LookupSpan, Registry};

use super::Error;
use super::log_line::SpanFields;

/// The span field in which a span that may continue a remote trace receives it.
pub const REMOTE_PARENT_FIELD: &str = "svc.remote_parent";

/// Whether spans are exported (set once at start-up).
static EXPORTED: AtomicBool = AtomicBool::new(false);

pub(crate) fn set_exported(exported: bool) {
    EXPORTED.store(exported, Ordering::Release);
}

/// Whether spans leave the process (an OTLP endpoint is set): attributes that only spans carry
/// need not be recorded otherwise.
pub fn exported() -> bool {
    EXPORTED.load(Ordering::Acquire)
}

/// A W3C trace context: trace id, parent span id, flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: u128,
    span_id: u64,
    flags: u8,
}

impl TraceContext {
    /// Parses a `traceparent` header (version 00); anything else is `None`.
    pub fn parse(header: &str) -> Option<Self> {
        let mut parts = header.trim().split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        fn hex(s: &str, len: usize) -> Option<&str> {
            (s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
                .then_some(s)
        }
        if hex(version, 2)? == "ff" {
            return None;
        }
        let trace_id = u128::from_str_radix(hex(trace, 32)?, 16).ok()?;
        let span_id = u64::from_str_radix(hex(span, 16)?, 16).ok()?;
        let flags = u8::from_str_radix(hex(flags, 2)?, 16).ok()?;
        (trace_id != 0 && span_id != 0).then_some(Self {
            trace_id,
            span_id,
            flags,
        })
    }

    pub fn trace_id_hex(&self) -> String {
        format!("{:032x}", self.trace_id)
    }

    pub fn span_id_hex(&self) -> String {
        format!("{:016x}", self.span_id)
    }

    pub fn traceparent(&self) -> String {
        format!(
            "00-{:032x}-{:016x}-{:02x}",
            self.trace_id, self.span_id, self.flags
        )
    }
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

/// Trace and span id (hex) of an exported span.
pub(crate) fn exported_ids(id: &tracing::span::Id) -> Option<(String, String)> {
    tracing::dispatcher::get_default(|dispatch| {
        let cx = tracing_opentelemetry::get_otel_context(id, dispatch)?;
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid()
            .then(|| (sc.trace_id().to_string(), sc.span_id().to_string()))
    })
}

/// The `traceparent` to send on behalf of the current span (see [`traceparent_of`]): what a
/// command, an event or a timer written now carries so its work continues this trace.
pub fn current_traceparent() -> Option<String> {
    traceparent_of(&Span::current())
}

/// The `traceparent` to send on behalf of `span` (over Kafka or HTTP): its own context when
/// spans are exported, else the remote context it continues; `None` without either.
pub fn traceparent_of(span: &Span) -> Option<String> {
    if exported() {
        let cx = span.context();
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&cx, &mut carrier);
        return carrier.remove("traceparent");
    }
    let id = span.id()?;
    tracing::dispatcher::get_default(|dispatch| {
        let registry = dispatch.downcast_ref::<Registry>()?;
        let span = registry.span(&id)?;
        let trace = span.extensions().get::<SpanFields>()?.trace;
        trace.map(|t| t.traceparent())
    })
}

/// Makes `span` continue the remote context in `traceparent`; an invalid header is ignored.
/// Call it right after creating the span, which must declare [`REMOTE_PARENT_FIELD`].
pub fn continue_from(span: &Span, traceparent: &str) {
    if exported() {
        let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        let cx: Context = TraceContextPropagator::new().extract(&carrier);
        if cx.span().span_context().is_valid() {
            // Fails only for a span already started, which callers avoid (see above).
            let _ = span.set_parent(cx);
        }
    } else if TraceContext::parse(traceparent).is_some() {
        span.record(REMOTE_PARENT_FIELD, traceparent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_headers_are_read_strictly() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = TraceContext::parse(header).expect("valid");
        assert_eq!(context.traceparent(), header);
        assert_eq!(context.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad}");
        }
    }
}
