//! The JSON log line: one object per event with the process's fixed fields (`service`,
//! `version`, `env`, `pid`, `hostname`), the fields of every span in scope under their log
//! names, `trace_id` and `span_id` inside a span with a trace context, and the event's own
//! fields; censored keys never carry their value (see [`super::censor`]).
//!
//! Lines are cheap because the work is done once: the fixed fields are serialised at start-up,
//! a span's fields when they are recorded (already censored), and a line is assembled into a
//! reused per-thread buffer, so an event costs the rendering of its own fields and one copy.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use super::censor;
use super::traces::{self, TraceContext};

/// Fields every line carries beside the time and level (SPEC "Logs").
#[derive(Debug, Clone)]
pub(crate) struct ProcessFields {
    pub(crate) service: String,
    pub(crate) version: String,
    pub(crate) env: String,
}

/// Span attributes that also appear on log lines, under their log name. Other span fields
/// outside the `svc.` and `otel.` namespaces are logged under their own name; the rest of
/// `svc.` and `otel.` is for spans only.
const LOGGED_ATTRIBUTES: &[(&str, &str)] = &[
    ("svc.request_id", "requestId"),
    ("svc.tenant_id", "tenantId"),
    ("svc.principal.kind", "principalKind"),
    ("svc.run_id", "runId"),
    ("svc.step_id", "stepId"),
    ("svc.workflow_id", "workflowId"),
    ("svc.app.name", "appName"),
    ("svc.app.call_id", "callId"),
];

fn log_name(field: &'static str) -> Option<&'static str> {
    if let Some((_, name)) = LOGGED_ATTRIBUTES.iter().find(|(attr, _)| *attr == field) {
        return Some(name);
    }
    if field.starts_with("svc.") || field.starts_with("otel.") {
        return None;
    }
    Some(field)
}

/// One `"name":value` member of a line, its value already JSON (and censored).
#[derive(Debug, Clone)]
struct Member {
    name: &'static str,
    json: Box<str>,
}

/// What a span contributes to the lines inside it, kept in its extensions until it closes.
#[derive(Debug, Default)]
pub(crate) struct SpanFields {
    members: Vec<Member>,
    /// The remote trace context the span continues (when spans are not exported), inherited by
    /// its children.
    pub(crate) trace: Option<TraceContext>,
}

impl SpanFields {
    fn set(&mut self, member: Member) {
        match self.members.iter_mut().find(|m| m.name == member.name) {
            Some(existing) => *existing = member,
            None => self.members.push(member),
        }
    }
}

/// Renders `tracing` fields as members.
struct Render<'a> {
    members: &'a mut Vec<Member>,
    /// Events keep every field under its own name; spans map theirs ([`log_name`]).
    own_names: bool,
    /// A `svc.remote_parent` recorded on a span.
    remote_parent: Option<TraceContext>,
}

impl Render<'_> {
    fn put(&mut self, field: &Field, json: String) {
        let name = field.name();
        let Some(name) = (if self.own_names {
            Some(name)
        } else {
            log_name(name)
        }) else {
            return;
        };
        let json = if censor::is_censored_key(name) {
            format!("\"{}\"", censor::REDACTED)
        } else {
            json
        };
        self.members.push(Member {
            name,
            json: json.into_boxed_str(),
        });
    }

    fn put_text(&mut self, field: &Field, text: &str) {
        if field.name() == traces::REMOTE_PARENT_FIELD {
            self.remote_parent = TraceContext::parse(text);
            return;
        }
        self.put(field, text_json(field.name(), text));
    }
}

/// A string as JSON. A string that is a JSON object stays an object, censored one level down
/// (and `req.headers` two), so an object logged as text cannot carry a secret either.
fn text_json(name: &str, text: &str) -> String {
    if text.starts_with('{')
        && let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(text)
    {
        censor::censor_object(name, &mut object);
        return Value::Object(object).to_string();
    }
    quoted(text)
}

fn quoted(text: &str) -> String {
    // Serialising a str cannot fail.
    serde_json::to_string(text).unwrap_or_default()
}

impl Visit for Render<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put_text(field, value);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.to_string());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value).to_string());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.to_string());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, quoted(&value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.put_text(field, &text);
    }
}

/// A `tracing` layer writing one JSON line per event to `W`.
pub(crate) struct JsonLogLayer<W> {
    /// `,"service":…,"version":…,"env":…,"pid":…,"hostname":…`, serialised once.
    fixed: String,
    make_writer: W,
    /// Spans are exported (OTLP): their own ids name the trace, not the remote context.
    exported: bool,
}

impl<W> fmt::Debug for JsonLogLayer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLogLayer")
            .field("fixed", &self.fixed)
            .finish_non_exhaustive()
    }
}

impl<W> JsonLogLayer<W>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + 'static,
{
    pub(crate) fn new(process: &ProcessFields, make_writer: W, exported: bool) -> Self {
        let host = hostname::get()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default();
        let fixed = format!(
            ",\"service\":{},\"version\":{},\"env\":{},\"pid\":{},\"hostname\":{}",
            quoted(&process.service),
            quoted(&process.version),
            quoted(&process.env),
            std::process::id(),
            quoted(&host),
        );
        Self {
            fixed,
            make_writer,
            exported,
        }
    }
}

thread_local! {
    static LINE: RefCell<String> = RefCell::new(String::with_capacity(1024));
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// `2026-11-23T10:00:00.123456Z`; the part up to the second is formatted once a second.
fn write_time(line: &mut String) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let (seconds, micros) = (now.as_secs(), now.subsec_micros());
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != seconds {
            *cached = seconds;
            text.clear();
            if let Some(time) = chrono::DateTime::from_timestamp(seconds as i64, 0) {
                let _ = write!(text, "{}", time.format("%Y-%m-%dT%H:%M:%S"));
            }
        }
        line.push_str(text);
    });
    let _ = write!(line, ".{micros:06}Z");
}

impl<S, W> Layer<S> for JsonLogLayer<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + 'static,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut members = Vec::new();
        let mut render = Render {
            members: &mut members,
            own_names: false,
            remote_parent: None,
        };
        attrs.record(&mut render);
        let trace = render.remote_parent.or_else(|| {
            span.parent()
                .and_then(|parent| parent.extensions().get::<SpanFields>()?.trace)
        });
        span.extensions_mut().insert(SpanFields { members, trace });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut members = Vec::new();
        let mut render = Render {
            members: &mut members,
            own_names: false,
            remote_parent: None,
        };
        values.record(&mut render);
        let remote_parent = render.remote_parent;
        let mut extensions = span.extensions_mut();
        if let Some(fields) = extensions.get_mut::<SpanFields>() {
            for member in members {
                fields.set(member);
            }
            if remote_parent.is_some() {
                fields.trace = remote_parent;
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut own = Vec::new();
        event.record(&mut Render {
            members: &mut own,
            own_names: true,
            remote_parent: None,
        });
        LINE.with_borrow_mut(|line| {
            line.clear();
            line.push_str("{\"time\":\"");
            write_time(line);
            line.push_str("\",\"level\":\"");
            line.push_str(level_name(event.metadata().level()));
            line.push('"');
            line.push_str(&self.fixed);
            line.push_str(",\"target\":");
            line.push_str(&quoted(event.metadata().target()));

            let scope = ctx.event_scope(event);
            let spans: Vec<_> = scope.map(|s| s.from_root().collect()).unwrap_or_default();
            let extensions: Vec<_> = spans.iter().map(|span| span.extensions()).collect();
            let mut members: Vec<&Member> = Vec::with_capacity(24);
            let mut trace = None;
            for fields in extensions.iter().filter_map(|e| e.get::<SpanFields>()) {
                members.extend(fields.members.iter());
                trace = fields.trace.or(trace);
            }
            members.extend(own.iter());
            // A later member of the same name (an inner span's, the event's) wins.
            for (i, member) in members.iter().enumerate() {
                if members[i + 1..].iter().any(|m| m.name == member.name) {
                    continue;
                }
                line.push_str(",\"");
                line.push_str(member.name);
                line.push_str("\":");
                line.push_str(&member.json);
            }
            let ids = if self.exported {
                spans
                    .last()
                    .and_then(|leaf| traces::exported_ids(&leaf.id()))
            } else {
                trace.map(|t| (t.trace_id_hex(), t.span_id_hex()))
            };
            if let Some((trace_id, span_id)) = ids {
                let _ = write!(
                    line,
                    ",\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\""
                );
            }
            line.push_str("}\n");
            // A line that cannot be written is dropped: logging never fails a request.
            let _ = self.make_writer.make_writer().write_all(line.as_bytes());
        });
    }
}

fn level_name(level: &tracing::Level) -> &'static str {
    match *level {
        tracing::Level::TRACE => "trace",
        tracing::Level::DEBUG => "debug",
        tracing::Level::INFO => "info",
        tracing::Level::WARN => "warn",
        tracing::Level::ERROR => "error",
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'w> tracing_subscriber::fmt::MakeWriter<'w> for Captured {
        type Writer = Captured;
        fn make_writer(&'w self) -> Self::Writer {
            self.clone()
        }
    }

    fn lines_of(body: impl FnOnce()) -> Vec<Value> {
        let captured = Captured::default();
        let process = ProcessFields {
            service: "svc".into(),
            version: "1.0".into(),
            env: "test".into(),
        };
        let layer = JsonLogLayer::new(&process, captured.clone(), false);
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, body);
        let bytes = captured.0.lock().expect("lock").clone();
        String::from_utf8(bytes)
            .expect("utf-8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("each line is JSON"))
            .collect()
    }

    #[test]
    fn a_line_has_the_fixed_fields_span_fields_and_its_own() {
        let lines = lines_of(|| {
            let span = tracing::info_span!(
                "request",
                svc.request_id = "req-1",
                svc.tenant_id = tracing::field::Empty,
                svc.hidden = "x",
                route = "/a"
            );
            span.record("svc.tenant_id", "t-1");
            let _entered = span.enter();
            tracing::info!(status = 200u16, duration_ms = 1.5, "request");
        });
        let line = &lines[0];
        for key in ["time", "service", "version", "env", "pid", "hostname"] {
            assert!(line.get(key).is_some(), "{key} in {line}");
        }
        assert_eq!(line["level"], "info");
        assert_eq!(line["service"], "svc");
        assert_eq!(line["requestId"], "req-1");
        assert_eq!(line["tenantId"], "t-1");
        assert_eq!(line["route"], "/a");
        assert_eq!(line["status"], 200);
        assert_eq!(line["duration_ms"], 1.5);
        assert_eq!(line["message"], "request");
        assert!(line.get("svc.hidden").is_none() && line.get("hidden").is_none());
        assert!(line.get("trace_id").is_none(), "no trace context here");
        assert!(chrono::DateTime::parse_from_rfc3339(line["time"].as_str().expect("time")).is_ok());
    }

    #[test]
    fn censored_keys_never_carry_their_value_at_any_level_logged() {
        let lines = lines_of(|| {
            let span = tracing::info_span!("s", token = "canary-span");
            let _entered = span.enter();
            tracing::info!(
                password = "canary-1",
                headers = r#"{"authorization":"Bearer canary-2","accept":"*/*"}"#,
                req = r#"{"headers":{"authorization":"canary-3"},"apiKey":"canary-4"}"#,
                "line"
            );
        });
        let text = lines[0].to_string();
        assert!(!text.contains("canary"), "{text}");
        assert_eq!(lines[0]["headers"]["accept"], "*/*");
        assert_eq!(lines[0]["req"]["headers"]["authorization"], "[redacted]");
    }

    #[test]
    fn an_inner_field_wins_over_an_outer_one_of_the_same_name() {
        let lines = lines_of(|| {
            let outer = tracing::info_span!("outer", step = "a");
            let _o = outer.enter();
            let inner = tracing::info_span!("inner", step = "b");
            let _i = inner.enter();
            tracing::info!(step = "c", "x");
            drop(_i);
            tracing::info!("y");
        });
        assert_eq!(lines[0]["step"], "c");
        assert_eq!(lines[1]["step"], "a");
        assert_eq!(
            lines[0]
                .as_object()
                .expect("object")
                .keys()
                .filter(|k| *k == "step")
                .count(),
            1
        );
    }

    #[test]
    fn a_remote_parent_gives_every_line_inside_its_trace_context_without_export() {
        let lines = lines_of(|| {
            let span = tracing::info_span!("request", svc.remote_parent = tracing::field::Empty);
            traces::continue_from(
                &span,
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            );
            let _entered = span.enter();
            let child = tracing::info_span!("child");
            let _c = child.enter();
            tracing::info!("inside");
        });
        assert_eq!(
            (&lines[0]["trace_id"], &lines[0]["span_id"]),
            (
                &json!("4bf92f3577b34da6a3ce929d0e0e4736"),
                &json!("00f067aa0ba902b7")
            )
        );
    }
}
