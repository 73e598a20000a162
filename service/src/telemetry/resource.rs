//! The OpenTelemetry resource every exported span and metric carries: `service.name`
//! (`OTEL_SERVICE_NAME` overrides the process's own), `service.version` and
//! `deployment.environment.name` (`NODE_ENV`).

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;

pub(crate) fn build(service: &str, version: &str, env: &str) -> Resource {
    let service_name = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| service.to_owned());
    Resource::builder()
        .with_service_name(service_name)
        .with_attributes([
            KeyValue::new("service.version", version.to_owned()),
            KeyValue::new("deployment.environment.name", env.to_owned()),
        ])
        .build()
}
