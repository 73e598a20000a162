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
    // Every line of an app attempt (SPEC "Logs": `action`, `attempt`), not only its last.
    ("svc.app.action", "action"),
    ("svc.app.attempt", "attempt"),
];

fn log_name(field: &'static str) -> Option<&'static str> {
    if let Some((_, name)) = LOGGED_ATTRIBUTES.iter().find(|(attr, _)| *attr == field) {
        return Some(name);
    }
    // The access line says `status` itself.
    if field.starts_with("svc.") || field.starts_with("otel.") || field == STATUS_ATTRIBUTE {
        return None;
    }
    Some(field)
}

/// The response status as a span attribute (HTTP semantic conventions).
const STATUS_ATTRIBUTE: &str = "http.response.status_code";

/// One `"name":value` member of a line, its value already JSON (and censored).
#[derive(Debug, Clone)]
struct Member {
    name: &'static str,
    json: Vec<u8>,
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

/// Where rendered fields go: a span's members, or straight into the line of an event.
enum Sink<'a> {
    Span(&'a mut Vec<Member>),
    /// The line being assembled, and the names written to it so far.
    Line(&'a mut Vec<u8>, &'a mut Vec<&'static str>),
}

/// Renders `tracing` fields as JSON members. The name is decided first, so a field that is
/// not logged (most of a span's `otel.` and `svc.` attributes) costs nothing, and an event's
/// values are written straight into its line.
struct Render<'a> {
    sink: Sink<'a>,
    /// A `svc.remote_parent` recorded on a span.
    remote_parent: Option<TraceContext>,
}

impl Render<'_> {
    /// The name `field` is logged under: events keep every field under its own name; spans
    /// map theirs ([`log_name`]).
    fn name(&self, field: &Field) -> Option<&'static str> {
        match self.sink {
            Sink::Line(..) => Some(field.name()),
            Sink::Span(_) => log_name(field.name()),
        }
    }

    /// Adds the member `name` whose JSON value `value` writes, unless `name` is censored.
    fn put(&mut self, name: &'static str, value: impl FnOnce(&mut Vec<u8>)) {
        let censored = censor::is_censored_key(name);
        match &mut self.sink {
            Sink::Span(members) => {
                let mut json = Vec::with_capacity(40);
                if censored {
                    json.extend_from_slice(REDACTED_JSON);
                } else {
                    value(&mut json);
                }
                members.push(Member { name, json });
            }
            Sink::Line(line, written) => {
                push_name(line, name);
                if censored {
                    line.extend_from_slice(REDACTED_JSON);
                } else {
                    value(line);
                }
                written.push(name);
            }
        }
    }

    fn put_text(&mut self, field: &Field, text: &str) {
        if field.name() == traces::REMOTE_PARENT_FIELD {
            self.remote_parent = TraceContext::parse(text);
            return;
        }
        if let Some(name) = self.name(field) {
            self.put(name, |out| write_text(out, name, text));
        }
    }

    fn put_display(&mut self, field: &Field, value: impl fmt::Display) {
        if let Some(name) = self.name(field) {
            self.put(name, |out| {
                let _ = write!(out, "{value}");
            });
        }
    }
}

const REDACTED_JSON: &[u8] = concat!("\"", "[redacted]", "\"").as_bytes();

fn push_name(line: &mut Vec<u8>, name: &str) {
    line.extend_from_slice(b",\"");
    line.extend_from_slice(name.as_bytes());
    line.extend_from_slice(b"\":");
}

/// Writes a string as JSON. A string that is a JSON object stays an object, censored one level
/// down (and `req.headers` two), so an object logged as text cannot carry a secret either.
fn write_text(out: &mut Vec<u8>, name: &str, text: &str) {
    if text.starts_with('{')
        && let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(text)
    {
        censor::censor_object(name, &mut object);
        let _ = serde_json::to_writer(out, &object);
        return;
    }
    write_quoted(out, text);
}

fn write_quoted(out: &mut Vec<u8>, text: &str) {
    // Writing a str to a Vec cannot fail.
    let _ = serde_json::to_writer(out, text);
}

impl Visit for Render<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put_text(field, value);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put_display(field, value);
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put_display(field, value);
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        if let Some(name) = self.name(field) {
            // A non-finite number is `null`, as JSON has no other spelling for it.
            self.put(name, |out| {
                let _ = serde_json::to_writer(out, &value);
            });
        }
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put_display(field, value);
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if let Some(name) = self.name(field) {
            self.put(name, |out| write_quoted(out, &value.to_string()));
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() != traces::REMOTE_PARENT_FIELD && self.name(field).is_none() {
            return;
        }
        let mut text = String::with_capacity(64);
        let _ = write!(text, "{value:?}");
        self.put_text(field, &text);
    }
}

/// A `tracing` layer writing one JSON line per event to `W`.
pub(crate) struct JsonLogLayer<W> {
    /// `,"service":…,"version":…,"env":…,"pid":…,"hostname":…`, serialised once.
    fixed: Vec<u8>,
    make_writer: W,
    /// Spans are exported (OTLP): their own ids name the trace, not the remote context.
    exported: bool,
}

impl<W> fmt::Debug for JsonLogLayer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLogLayer")
            .field("fixed", &String::from_utf8_lossy(&self.fixed))
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
        let mut fixed = Vec::with_capacity(128);
        for (name, value) in [
            ("service", process.service.as_str()),
            ("version", process.version.as_str()),
            ("env", process.env.as_str()),
        ] {
            push_name(&mut fixed, name);
            write_quoted(&mut fixed, value);
        }
        push_name(&mut fixed, "pid");
        let _ = write!(fixed, "{}", std::process::id());
        push_name(&mut fixed, "hostname");
        write_quoted(&mut fixed, &host);
        Self {
            fixed,
            make_writer,
            exported,
        }
    }
}

thread_local! {
    /// The line being assembled and the names of its members so far, reused by every event.
    static LINE: RefCell<(Vec<u8>, Vec<&'static str>)> =
        RefCell::new((Vec::with_capacity(1024), Vec::with_capacity(32)));
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// `2026-11-23T10:00:00.123456Z`; the part up to the second is formatted once a second.
fn write_time(line: &mut Vec<u8>) {
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
        line.extend_from_slice(text.as_bytes());
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
            sink: Sink::Span(&mut members),
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
            sink: Sink::Span(&mut members),
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
        LINE.with_borrow_mut(|(line, written)| {
            line.clear();
            written.clear();
            line.extend_from_slice(b"{\"time\":\"");
            write_time(line);
            line.extend_from_slice(b"\",\"level\":\"");
            line.extend_from_slice(level_name(event.metadata().level()).as_bytes());
            line.push(b'"');
            line.extend_from_slice(&self.fixed);
            line.extend_from_slice(b",\"target\":");
            write_quoted(line, event.metadata().target());

            // The event's own fields, then each span's from the innermost out: the first
            // member of a name wins, so an inner value hides an outer one of the same name.
            event.record(&mut Render {
                sink: Sink::Line(line, written),
                remote_parent: None,
            });
            let mut leaf = None;
            let mut trace = None;
            for span in ctx.event_scope(event).into_iter().flatten() {
                if leaf.is_none() {
                    leaf = Some(span.id());
                }
                let extensions = span.extensions();
                let Some(fields) = extensions.get::<SpanFields>() else {
                    continue;
                };
                for member in &fields.members {
                    if !written.contains(&member.name) {
                        push_name(line, member.name);
                        line.extend_from_slice(&member.json);
                        written.push(member.name);
                    }
                }
                trace = trace.or(fields.trace);
            }
            let ids = if self.exported {
                leaf.and_then(|leaf| traces::exported_ids(&leaf))
            } else {
                trace.map(|t| (t.trace_id_hex(), t.span_id_hex()))
            };
            if let Some((trace_id, span_id)) = ids {
                let _ = write!(
                    line,
                    ",\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\""
                );
            }
            line.extend_from_slice(b"}\n");
            // A line that cannot be written is dropped: logging never fails a request.
            let _ = self.make_writer.make_writer().write_all(line);
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
pub(crate) mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[derive(Clone, Default)]
    pub(crate) struct Captured(pub(crate) Arc<Mutex<Vec<u8>>>);

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
