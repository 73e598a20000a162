//! The access line of every API request (SPEC "Logs"): its request id, and once the token is
//! checked the tenant and the principal's kind; the caller's trace; never the token itself.

use serde_json::Value;
use uuid::Uuid;

use crate::support::instance::Instance;
use crate::support::{analyst, client};

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn access_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["message"] == "request")
        .collect()
}

#[tokio::test]
async fn an_access_line_names_the_request_its_caller_and_its_trace_but_not_the_token() {
    let log = tempfile::NamedTempFile::new().expect("log file");
    let mut api = Instance::start_logging_to(&[], log.path()).await;
    let tenant = Uuid::new_v4();
    let token = analyst(tenant);
    let http = client();

    let answered = http
        .get(api.url("/app-invocations?limit=1"))
        .bearer_auth(&token)
        .header("x-request-id", "access-line-1")
        .header("traceparent", TRACEPARENT)
        .send()
        .await
        .expect("answer");
    assert_eq!(answered.status(), 200);
    let refused = http
        .get(api.url("/app-invocations"))
        .bearer_auth(format!("{token}x"))
        .header("x-request-id", "access-line-2")
        .send()
        .await
        .expect("answer");
    assert_eq!(refused.status(), 401);
    assert!(api.terminate().success(), "the log is flushed on exit");

    let text = std::fs::read_to_string(log.path()).expect("log");
    assert!(!text.contains(&token), "the bearer token reached the log");
    let lines = access_lines(&text);
    let line = |id: &str| {
        lines
            .iter()
            .find(|line| line["requestId"] == id)
            .unwrap_or_else(|| panic!("no access line for {id} in {lines:?}"))
    };
    let ok = line("access-line-1");
    assert_eq!(ok["status"], 200);
    assert_eq!(ok["tenantId"], tenant.to_string());
    assert_eq!(ok["principalKind"], "human");
    assert_eq!(ok["http.route"], "/app-invocations");
    assert_eq!(ok["http.request.method"], "GET");
    assert_eq!(ok["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert!(
        ok["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{ok}"
    );
    for key in ["service", "version", "env", "pid", "hostname", "time"] {
        assert!(ok.get(key).is_some(), "{key} missing from {ok}");
    }
    let refused = line("access-line-2");
    assert_eq!(refused["status"], 401);
    assert!(
        refused.get("tenantId").is_none(),
        "a refused token names no tenant: {refused}"
    );
}
