//! The spans an OTLP/HTTP exporter posted to a [`Receiver`] standing in for a collector
//! (`POST /v1/traces`, protobuf), decoded with the OpenTelemetry project's own message types.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use prost::Message as _;

use super::receiver::Receiver;

/// One exported span, with the service that exported it.
#[derive(Debug, Clone)]
pub struct ExportedSpan {
    pub service: String,
    pub name: String,
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    /// Empty for a root span.
    pub parent_span_id: Vec<u8>,
    attributes: Vec<KeyValue>,
}

impl ExportedSpan {
    /// A string attribute's value.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| text(kv.value.as_ref()))
    }
}

/// Every span posted to `receiver` so far.
pub fn spans(receiver: &Receiver) -> Vec<ExportedSpan> {
    let mut spans = Vec::new();
    for post in receiver.received() {
        if post.path != "/v1/traces" {
            continue;
        }
        let export = ExportTraceServiceRequest::decode(post.body.as_ref())
            .expect("an OTLP trace export decodes");
        for resource in export.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| text(kv.value.as_ref()))
                .unwrap_or_default()
                .to_owned();
            for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                spans.push(ExportedSpan {
                    service: service.clone(),
                    name: span.name,
                    trace_id: span.trace_id,
                    span_id: span.span_id,
                    parent_span_id: span.parent_span_id,
                    attributes: span.attributes,
                });
            }
        }
    }
    spans
}

fn text(value: Option<&AnyValue>) -> Option<&str> {
    match value?.value.as_ref()? {
        Value::StringValue(text) => Some(text),
        _ => None,
    }
}
