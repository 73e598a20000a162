//! The JSON log line: one object per event with the service's fixed fields, the fields of every
//! span in scope (mapped to their log names), the event's own fields, and censored keys removed.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::censor::censor_line;

/// Fields every line carries (SPEC: `service`, `version`, `env`, `pid`, `hostname`).
#[derive(Debug, Clone)]
pub struct ProcessFields {
    pub service: String,
    pub version: String,
    pub env: String,
}

/// Span attributes that also appear on log lines, under their log name. Span fields outside the
/// `svc.` namespace are logged under their own name; other `svc.` and `otel.` fields are span-only.
const LOGGED_ATTRIBUTES: &[(&str, &str)] = &[
    ("svc.request_id", "requestId"),
    ("svc.tenant_id", "tenantId"),
    ("svc.principal.kind", "principalKind"),
    ("svc.run_id", "runId"),
    ("svc.step_id", "stepId"),
    ("svc.workflow_id", "workflowId"),
    ("svc.app.call_id", "callId"),
];

fn log_name(field: &str) -> Option<&str> {
    if let Some((_, name)) = LOGGED_ATTRIBUTES.iter().find(|(attr, _)| *attr == field) {
        return Some(name);
    }
    if field.starts_with("svc.") || field.starts_with("otel.") {
        return None;
    }
    Some(field)
}

/// Fields recorded on a span, kept in its extensions until the span closes.
#[derive(Debug, Default)]
struct SpanFields(BTreeMap<String, Value>);

/// Collects `tracing` fields as JSON values. A string that is a JSON object is kept as an object
/// so that censoring reaches one level down into it.
struct JsonVisitor<'a> {
    fields: &'a mut BTreeMap<String, Value>,
    keep_all: bool,
}

impl JsonVisitor<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        let name = if self.keep_all {
            Some(field.name())
        } else {
            log_name(field.name())
        };
        if let Some(name) = name {
            self.fields.insert(name.to_owned(), value);
        }
    }
}

fn string_value(text: String) -> Value {
    if text.starts_with('{')
        && let Ok(object @ Value::Object(_)) = serde_json::from_str::<Value>(&text)
    {
        return object;
    }
    Value::String(text)
}

impl Visit for JsonVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, string_value(value.to_owned()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::String(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, string_value(format!("{value:?}")));
    }
}

/// A `tracing` layer writing one JSON line per event to `W`.
pub struct JsonLogLayer<W> {
    fixed: Map<String, Value>,
    make_writer: W,
    /// Trace ids exist only when spans are exported (OTLP configured).
    trace_ids: bool,
}

impl<W> fmt::Debug for JsonLogLayer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLogLayer")
            .field("fixed", &self.fixed)
            .finish()
    }
}

impl<W> JsonLogLayer<W>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + 'static,
{
    pub fn new(process: &ProcessFields, make_writer: W, trace_ids: bool) -> Self {
        let mut fixed = Map::new();
        fixed.insert("service".into(), Value::from(process.service.clone()));
        fixed.insert("version".into(), Value::from(process.version.clone()));
        fixed.insert("env".into(), Value::from(process.env.clone()));
        fixed.insert("pid".into(), Value::from(std::process::id()));
        let host = hostname::get()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default();
        fixed.insert("hostname".into(), Value::from(host));
        Self {
            fixed,
            make_writer,
            trace_ids,
        }
    }
}

impl<S, W> Layer<S> for JsonLogLayer<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + 'static,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = SpanFields::default();
        attrs.record(&mut JsonVisitor {
            fields: &mut fields.0,
            keep_all: false,
        });
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(fields) = extensions.get_mut::<SpanFields>() {
            values.record(&mut JsonVisitor {
                fields: &mut fields.0,
                keep_all: false,
            });
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut line = Map::with_capacity(16);
        line.insert(
            "time".into(),
            Value::from(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        );
        line.insert(
            "level".into(),
            Value::from(event.metadata().level().as_str().to_ascii_lowercase()),
        );
        line.extend(self.fixed.iter().map(|(k, v)| (k.clone(), v.clone())));
        line.insert("target".into(), Value::from(event.metadata().target()));

        let mut leaf = None;
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<SpanFields>() {
                    line.extend(fields.0.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                leaf = Some(span.id());
            }
        }
        if self.trace_ids
            && let Some((trace_id, span_id)) = leaf.as_ref().and_then(crate::traces::trace_ids)
        {
            line.insert("trace_id".into(), Value::from(trace_id));
            line.insert("span_id".into(), Value::from(span_id));
        }

        let mut own = BTreeMap::new();
        event.record(&mut JsonVisitor {
            fields: &mut own,
            keep_all: true,
        });
        line.extend(own);
        censor_line(&mut line);

        let Ok(mut bytes) = serde_json::to_vec(&line) else {
            return;
        };
        bytes.push(b'\n');
        // A log line that cannot be written is dropped: logging must never fail a request.
        let _ = self.make_writer.make_writer().write_all(&bytes);
    }
}
