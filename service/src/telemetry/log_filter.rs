//! Which lines are written: `LOG_LEVEL` decides for events, but spans at `info` and above are
//! always seen by the log layer, whatever the level. Their fields are what a line inside them
//! carries (`requestId`, `tenantId`, `runId`, `app`... SPEC "Logs"): filtered out with the
//! events below the level, a warning or an error at `LOG_LEVEL=warn` went out without them.

use tracing::level_filters::LevelFilter;
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, span};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::{Context, Filter};

/// `LOG_LEVEL`'s filter for events; spans at `info` and above always.
#[derive(Debug)]
pub(crate) struct LogFilter {
    events: EnvFilter,
}

impl LogFilter {
    pub(crate) fn new(events: EnvFilter) -> Self {
        Self { events }
    }
}

/// A span whose fields the lines inside it carry.
fn carries_context(metadata: &Metadata<'_>) -> bool {
    metadata.is_span() && *metadata.level() <= Level::INFO
}

impl<S> Filter<S> for LogFilter
where
    EnvFilter: Filter<S>,
{
    fn enabled(&self, metadata: &Metadata<'_>, cx: &Context<'_, S>) -> bool {
        carries_context(metadata) || Filter::enabled(&self.events, metadata, cx)
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        if carries_context(metadata) {
            Interest::always()
        } else {
            Filter::callsite_enabled(&self.events, metadata)
        }
    }

    fn event_enabled(&self, event: &Event<'_>, cx: &Context<'_, S>) -> bool {
        Filter::event_enabled(&self.events, event, cx)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        // None: the events' filter may enable anything.
        Filter::max_level_hint(&self.events).map(|hint| hint.max(LevelFilter::INFO))
    }

    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, cx: Context<'_, S>) {
        Filter::on_new_span(&self.events, attrs, id, cx);
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, cx: Context<'_, S>) {
        Filter::on_record(&self.events, id, values, cx);
    }

    fn on_enter(&self, id: &span::Id, cx: Context<'_, S>) {
        Filter::on_enter(&self.events, id, cx);
    }

    fn on_exit(&self, id: &span::Id, cx: Context<'_, S>) {
        Filter::on_exit(&self.events, id, cx);
    }

    fn on_close(&self, id: span::Id, cx: Context<'_, S>) {
        Filter::on_close(&self.events, id, cx);
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;
    use crate::telemetry::log_line::tests::Captured;
    use crate::telemetry::log_line::{JsonLogLayer, ProcessFields};

    #[test]
    fn at_warn_an_error_line_still_carries_its_requests_fields() {
        let captured = Captured::default();
        let process = ProcessFields {
            service: "svc".into(),
            version: "1.0".into(),
            env: "test".into(),
        };
        let layer = JsonLogLayer::new(&process, captured.clone(), false)
            .with_filter(LogFilter::new(EnvFilter::new("warn")));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("http.request", svc.request_id = "req-7");
            let _entered = span.enter();
            tracing::info!("not written at warn");
            tracing::error!(status = 503u16, "request failed");
        });
        let text = String::from_utf8(captured.0.lock().expect("lock").clone()).expect("utf-8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("JSON"))
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert_eq!(lines[0]["requestId"], "req-7", "{text}");
        assert_eq!(lines[0]["status"], 503, "{text}");
    }
}
