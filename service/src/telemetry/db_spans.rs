//! `db.query` spans (SPEC Operations "Traces") from sqlx's own statement events. sqlx reports
//! each statement once it finished (target `sqlx::query`: a summary, the text with its
//! placeholders, never the bound values, the rows, how long it took); [`DbQuerySpans`] turns each
//! into a client span under the span the statement ran in, back-dated to when it started. A
//! statement outside any traced span (a poll of the outbox or the timers) makes none: a root span
//! per poll would bury the traces that matter. It is installed only when spans are exported, with
//! a filter of its own: elsewhere sqlx does not even build the events (the log layer's filter
//! keeps `sqlx` at `warn`).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{Span as _, SpanKind, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context as OtelContext, KeyValue};
use opentelemetry_sdk::trace::Tracer;
use tracing::dispatcher::WeakDispatch;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The events it reads: every statement sqlx reports, at `debug` (slow ones at `warn`).
pub(crate) fn statements() -> Targets {
    Targets::new().with_target("sqlx::query", LevelFilter::DEBUG)
}

/// The subscriber the layer is part of, set once it is built ([`DbQuerySpans::dispatch`]).
pub(crate) type DispatchCell = Arc<OnceLock<WeakDispatch>>;

/// The layer: one span per statement event.
pub(crate) struct DbQuerySpans {
    tracer: Tracer,
    /// The subscriber, to read the current span's trace context from: a scoped dispatcher is
    /// busy dispatching the event, so a layer cannot ask for the default one from inside it.
    dispatch: DispatchCell,
}

impl DbQuerySpans {
    pub(crate) fn new(tracer: Tracer) -> Self {
        Self {
            tracer,
            dispatch: DispatchCell::default(),
        }
    }

    /// Where to put the subscriber once it is built (the layer sits in an `Option` and a
    /// filter, which do not hand it on at registration).
    pub(crate) fn dispatch(&self) -> DispatchCell {
        Arc::clone(&self.dispatch)
    }

    /// The trace context of the span the statement ran in, when it ran in a traced one.
    fn parent<S>(&self, ctx: &Context<'_, S>) -> Option<OtelContext>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        // The current span whatever this layer's own filter enabled (it enables no span).
        let id = ctx.current_span().id()?.clone();
        let dispatch = self.dispatch.get()?.upgrade()?;
        let parent = tracing_opentelemetry::get_otel_context(&id, &dispatch)?;
        parent.span().span_context().is_valid().then_some(parent)
    }
}

impl<S> Layer<S> for DbQuerySpans
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut statement = Statement::default();
        event.record(&mut statement);
        let Some(elapsed) = statement.elapsed_secs else {
            return;
        };
        let Some(parent) = self.parent(&ctx) else {
            return;
        };
        let ended = SystemTime::now();
        let started = ended
            .checked_sub(Duration::from_secs_f64(elapsed.max(0.0)))
            .unwrap_or(ended);
        let mut attributes = vec![
            KeyValue::new("db.system.name", "postgresql"),
            KeyValue::new("db.query.summary", statement.summary.clone()),
        ];
        // sqlx gives the text only when it is longer than the summary.
        let text = statement.text.trim();
        attributes.push(KeyValue::new(
            "db.query.text",
            if text.is_empty() {
                statement.summary
            } else {
                text.to_owned()
            },
        ));
        if let Some(rows) = statement.rows_returned {
            attributes.push(KeyValue::new("db.response.returned_rows", rows));
        }
        let mut span = self
            .tracer
            .span_builder("db.query")
            .with_kind(SpanKind::Client)
            .with_start_time(started)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        span.end_with_timestamp(ended);
    }
}

/// The fields of one statement event.
#[derive(Default)]
struct Statement {
    summary: String,
    text: String,
    rows_returned: Option<i64>,
    elapsed_secs: Option<f64>,
}

impl Visit for Statement {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "summary" => value.clone_into(&mut self.summary),
            "db.statement" => value.clone_into(&mut self.text),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "rows_returned" {
            self.rows_returned = i64::try_from(value).ok();
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if field.name() == "elapsed_secs" {
            self.elapsed_secs = Some(value);
        }
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanKind, TracerProvider as _};
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// sqlx's event for one finished statement, as `sqlx-core`'s logger writes it.
    fn statement_finished() {
        tracing::debug!(
            target: "sqlx::query",
            summary = "select id from …",
            db.statement = "\n\nselect id from inbox where command_id = $1\n",
            rows_affected = 0u64,
            rows_returned = 1u64,
            elapsed_secs = 0.002f64,
        );
    }

    #[test]
    fn a_statement_in_a_traced_span_is_a_client_span_under_it_and_one_outside_is_none() {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let queries = DbQuerySpans::new(provider.tracer("test"));
        let cell = queries.dispatch();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")))
            .with(queries.with_filter(statements()));
        let dispatch = tracing::Dispatch::new(subscriber);
        cell.set(dispatch.downgrade()).ok();
        tracing::dispatcher::with_default(&dispatch, || {
            statement_finished();
            tracing::info_span!("runs apply").in_scope(statement_finished);
        });

        let spans = exporter.get_finished_spans().expect("spans");
        let parent = spans
            .iter()
            .find(|s| s.name == "runs apply")
            .expect("parent");
        let queries: Vec<_> = spans.iter().filter(|s| s.name == "db.query").collect();
        assert_eq!(queries.len(), 1, "none outside a traced span: {spans:?}");
        let query = queries[0];
        assert_eq!(query.parent_span_id, parent.span_context.span_id());
        assert_eq!(
            query.span_context.trace_id(),
            parent.span_context.trace_id()
        );
        assert_eq!(query.span_kind, SpanKind::Client);
        let attribute = |key: &str| {
            query
                .attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| kv.value.to_string())
        };
        assert_eq!(attribute("db.system.name").as_deref(), Some("postgresql"));
        assert_eq!(
            attribute("db.query.text").as_deref(),
            Some("select id from inbox where command_id = $1")
        );
        assert_eq!(attribute("db.response.returned_rows").as_deref(), Some("1"));
        let took = query
            .end_time
            .duration_since(query.start_time)
            .expect("ordered");
        assert!(
            took >= Duration::from_millis(2),
            "back-dated to its start: {took:?}"
        );
    }
}
