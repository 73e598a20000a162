//! One trace from the request to the vendor (SPEC Operations "Traces"; issue 31): an API, a
//! pipeline and a runner of the test's own export their spans over OTLP/HTTP to a receiver the
//! test starts. They run on a database and a broker of their own (`support::backends`): on the
//! stack's broker the stack's pipeline, which exports nowhere, could take the run's command.
//!
//! A workflow run whose one step calls the example app, which calls its vendor, started with a
//! `traceparent` of the test's, is one trace, each span under the one before:
//! the request's server span (ingress) → the command's producer span `runs.commands send` → the
//! runs stage's `runs apply` (pipeline; its `db.transaction` and `db.query` spans under it) →
//! `app.invoke` → the runner's server span → the vendor request's client span `vendor.request`
//! (runner). The vendor answers the first call too late, so the call times out and is retried:
//! the run's timer carries the trace on (the resume's `runs apply` is under the first
//! `app.invoke`), and so does the timeout's outcome on its way to the circuits stage through the
//! outbox (`circuits apply`).

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use service::testing::ServiceProcess;
use uuid::Uuid;

use crate::support::apps::{answer, call_url};
use crate::support::backends::{Broker, BrokerTurn, Database};
use crate::support::instance::Instance;
use crate::support::otlp::{self, ExportedSpan};
use crate::support::receiver::Receiver;
use crate::support::{admin, client, vendor};

/// The test's broker: a port pair of its own beside broker_loss's (29192), below the kernel's
/// ephemeral range, where one of the suite's connections took it.
const BROKER_PORT: u16 = 29292;
const WORKFLOW: &str = "traced";

#[tokio::test]
async fn a_run_is_one_trace_from_the_request_to_the_vendor() {
    let _turn = BrokerTurn::take().await;
    let collector = Receiver::start().await;
    // Past the example app's 5 s timeout for `check`.
    let vendor = vendor::scoring(Duration::from_secs(6)).await;
    let database = Database::create("traces").await;
    let dir = std::env::temp_dir().join(format!("traces-{}", Uuid::new_v4().simple()));
    let mut broker = Broker::start(dir, BROKER_PORT);
    broker.wait_accepting().await;
    let brokers = broker.address();
    let env = [
        ("DATABASE_URL", database.url.as_str()),
        ("KAFKA_BROKERS", brokers.as_str()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.origin.as_str()),
        // Batches leave every 200 ms rather than every 5 s, so the test does not wait for them.
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ("API_RATE_LIMIT_PER_MINUTE", "0"),
    ];
    // The API publishes the release's catalogue (the example app) into its database, inspected
    // by the stack's runner; its commands wait on the broker until the pipeline applies them.
    let api = Instance::start(&env).await;
    let modules = tempfile::tempdir().expect("runner cache");
    let internal = api.internal_url("");
    let mut runner_env = env.to_vec();
    runner_env.extend([
        ("RUNNER_HOST", "127.0.0.1"),
        ("RUNNER_PORT", "0"),
        ("API_INTERNAL_URL", internal.trim_end_matches('/')),
        (
            "RUNNER_MODULE_CACHE_DIR",
            modules.path().to_str().expect("utf-8"),
        ),
    ]);
    let runner = ServiceProcess::start("runner", &runner_env, &["runner"], None).await;
    let runner_url = runner.url("runner", "");
    let mut pipeline_env = env.to_vec();
    pipeline_env.extend([
        ("WORKER_HEALTH_HOST", "127.0.0.1"),
        ("WORKER_HEALTH_PORT", "0"),
        ("APP_RUNNER_URL", runner_url.trim_end_matches('/')),
    ]);
    let pipeline = ServiceProcess::start("pipeline", &pipeline_env, &["health"], None).await;

    let tenant = Uuid::new_v4();
    let token = admin(tenant);
    let version = published_example_app(&database.url).await;
    let call = |method, path: &str, body| request(&api, &token, method, path.to_owned(), body);
    let (status, body) = call(
        Method::POST,
        "/apps/vendor-app/secrets/API_KEY",
        Some(json!({ "value": "trace-test-key" })),
    )
    .await;
    assert!(status < 300, "secret stored: {status} {body}");
    let install = json!({ "versionId": version, "config": { "baseUrl": vendor } });
    let (status, body) = call(Method::PUT, "/apps/vendor-app/install", Some(install)).await;
    assert_eq!(status, 200, "{body}");
    let steps = json!([{
        "id": "kyc", "type": "call_app", "app": "vendor-app", "action": "check",
        "inputMapping": { "name": "subject.name", "country": "subject.country" },
        "outputKey": "kyc"
    }]);
    let path = format!("/definitions/workflow/{WORKFLOW}/versions");
    let (status, body) = call(Method::POST, &path, Some(json!({ "steps": steps }))).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = call(Method::POST, &format!("{path}/1/publish"), None).await;
    assert_eq!(status, 200, "{body}");

    let trace_id = Uuid::new_v4().simple().to_string();
    let parent_id = &Uuid::new_v4().simple().to_string()[..16];
    let run_id = start_run(&api, &token, &format!("00-{trace_id}-{parent_id}-01")).await;
    let run = ended(&api, &token, &run_id).await;
    assert_eq!(run["status"], "completed", "{run}");

    let trace = hex(&trace_id);
    let spans = whole_trace(&collector, &trace).await;
    let request = one(&spans, "ingress", "POST /workflow-runs");
    assert_eq!(
        request.parent_span_id,
        hex(parent_id),
        "continues the caller's"
    );
    let send = one(&spans, "ingress", "runs.commands send");
    assert_eq!(send.parent_span_id, request.span_id);
    let start = spans
        .iter()
        .find(|s| s.name == "runs apply" && s.parent_span_id == send.span_id)
        .unwrap_or_else(|| panic!("the stage continues the command's span: {}", names(&spans)));
    assert_eq!(start.service, "pipeline");
    assert_eq!(
        start.attribute("svc.tenant_id"),
        Some(tenant.to_string().as_str())
    );
    let transaction = spans
        .iter()
        .find(|s| s.name == "db.transaction" && s.parent_span_id == start.span_id)
        .unwrap_or_else(|| panic!("the stage's transaction: {}", names(&spans)));
    assert_eq!(transaction.attribute("db.system.name"), Some("postgresql"));
    let statement = spans
        .iter()
        .find(|s| s.name == "db.query" && descends(&spans, s, start))
        .unwrap_or_else(|| panic!("a statement of the stage: {}", names(&spans)));
    assert_eq!(statement.attribute("db.system.name"), Some("postgresql"));
    assert!(
        statement
            .attribute("db.query.text")
            .is_some_and(|text| !text.is_empty())
    );

    // The first call: it timed out at the runner, and its outcome went on to the circuits stage.
    let first = stage_child(&spans, "app.invoke", start);
    assert_eq!(first.service, "pipeline");
    assert_eq!(first.attribute("svc.app.name"), Some("vendor-app"));
    assert_eq!(first.attribute("svc.run_id"), Some(run_id.as_str()));
    let served = under(&spans, "POST /v1/invoke", first);
    assert_eq!(served.service, "runner", "the runner continues app.invoke");
    under(&spans, "circuits apply", first);

    // The retry: the run's timer resumed it in the first call's trace.
    let resume = under(&spans, "runs apply", first);
    let second = stage_child(&spans, "app.invoke", resume);
    let served = under(&spans, "POST /v1/invoke", second);
    let vendor_request = under(&spans, "vendor.request", served);
    assert_eq!(vendor_request.service, "runner");
    assert_eq!(
        vendor_request.attribute("server.address"),
        Some("127.0.0.1")
    );

    drop(pipeline);
    drop(runner);
    drop(api);
    drop(broker);
    drop(database);
}

/// The catalogue's example app, once the API has published it into the test's database.
async fn published_example_app(database_url: &str) -> String {
    let pool = sqlx::PgPool::connect(database_url).await.expect("postgres");
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let version: Option<String> = sqlx::query_scalar(
            "SELECT id::text FROM app_versions WHERE tenant_id IS NULL \
             AND name = 'vendor-app' AND status = 'published'",
        )
        .fetch_optional(&pool)
        .await
        .expect("catalogue read");
        if let Some(version) = version {
            return version;
        }
        assert!(
            Instant::now() < deadline,
            "the example app was not published within 180 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn request(
    api: &Instance,
    token: &str,
    method: Method,
    path: String,
    body: Option<Value>,
) -> (u16, Value) {
    call_url(token, method, api.url(&path), body).await
}

async fn start_run(api: &Instance, token: &str, traceparent: &str) -> String {
    let response = client()
        .post(api.url("/workflow-runs"))
        .bearer_auth(token)
        .header("traceparent", traceparent)
        .json(&json!({
            "definitionKey": WORKFLOW,
            "context": { "subject": { "name": "Ada Lovelace", "country": "GB" } }
        }))
        .send()
        .await
        .expect("request");
    let (status, body) = answer(response).await;
    assert_eq!(status, 202, "{body}");
    body["id"].as_str().expect("run id").to_owned()
}

/// The run once it ended (60 s at most).
async fn ended(api: &Instance, token: &str, run_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, run) = request(
            api,
            token,
            Method::GET,
            format!("/workflow-runs/{run_id}"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{run}");
        if ["completed", "failed", "cancelled"].contains(&run["status"].as_str().unwrap_or("")) {
            return run;
        }
        assert!(Instant::now() < deadline, "the run did not end: {run}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The trace's spans once the retry's vendor request and the circuits stage's span arrived
/// (each process exports its own, every 200 ms).
async fn whole_trace(collector: &Receiver, trace: &[u8]) -> Vec<ExportedSpan> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let spans: Vec<ExportedSpan> = otlp::spans(collector)
            .into_iter()
            .filter(|s| s.trace_id == trace)
            .collect();
        let count = |name: &str| spans.iter().filter(|s| s.name == name).count();
        if count("runs apply") >= 2
            && count("app.invoke") >= 2
            && count("POST /v1/invoke") >= 2
            && count("circuits apply") >= 1
            && count("vendor.request") >= 1
            && count("POST /workflow-runs") == 1
        {
            return spans;
        }
        assert!(
            Instant::now() < deadline,
            "the trace is incomplete after 60 s: {}",
            names(&spans)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The span named `name` whose nearest stage span (`runs apply`) is `stage`: its own, not one
/// of a later command of the run that also descends from it.
fn stage_child<'a>(
    spans: &'a [ExportedSpan],
    name: &str,
    stage: &ExportedSpan,
) -> &'a ExportedSpan {
    spans
        .iter()
        .find(|s| {
            s.name == name
                && nearest(spans, s, &stage.name).is_some_and(|n| n.span_id == stage.span_id)
        })
        .unwrap_or_else(|| panic!("no {name} of that {}: {}", stage.name, names(spans)))
}

/// The closest ancestor of `span` named `name`.
fn nearest<'a>(
    spans: &'a [ExportedSpan],
    span: &ExportedSpan,
    name: &str,
) -> Option<&'a ExportedSpan> {
    let mut at = spans.iter().find(|s| s.span_id == span.parent_span_id)?;
    for _ in 0..spans.len() {
        if at.name == name {
            return Some(at);
        }
        at = spans.iter().find(|s| s.span_id == at.parent_span_id)?;
    }
    None
}

/// The span named `name` under `ancestor`.
fn under<'a>(spans: &'a [ExportedSpan], name: &str, ancestor: &ExportedSpan) -> &'a ExportedSpan {
    spans
        .iter()
        .find(|s| s.name == name && s.span_id != ancestor.span_id && descends(spans, s, ancestor))
        .unwrap_or_else(|| panic!("no {name} under {}: {}", ancestor.name, names(spans)))
}

fn one<'a>(spans: &'a [ExportedSpan], service: &str, name: &str) -> &'a ExportedSpan {
    spans
        .iter()
        .find(|s| s.service == service && s.name == name)
        .unwrap_or_else(|| panic!("no {name} span of {service}: {}", names(spans)))
}

/// Whether `span` is `ancestor` or under it, following parents within the trace.
fn descends(spans: &[ExportedSpan], span: &ExportedSpan, ancestor: &ExportedSpan) -> bool {
    let mut at = span;
    for _ in 0..spans.len() {
        if at.span_id == ancestor.span_id {
            return true;
        }
        match spans.iter().find(|s| s.span_id == at.parent_span_id) {
            Some(parent) => at = parent,
            None => return false,
        }
    }
    false
}

fn names(spans: &[ExportedSpan]) -> String {
    let names: Vec<String> = spans
        .iter()
        .map(|s| format!("{}:{}", s.service, s.name))
        .collect();
    names.join(", ")
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}
