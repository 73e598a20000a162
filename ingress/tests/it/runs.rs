//! Workflow runs (docs/definitions-and-runs.md) through the real stack: a run's steps call an
//! installed app through the runner, each attempt that reaches the install is one invocation
//! record, retries follow the action's policy and then the step's, inputs and outputs are
//! checked against the action's schemas, an asynchronous action waits for its callback until a
//! durable timer times it out, rule sets evaluate field and app rules, and a run can be
//! cancelled. Tenant isolation and redaction as for every record.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::apps::Tenant;
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::modules::{manifest, module, trapping};
use crate::support::receiver::Receiver;
use crate::support::{StackUrls as _, admin, analyst};
use crate::webhook_endpoints::endpoint;

/// A secret value that must never show up in a record.
const CANARY: &str = "canary-run-secret-5f1c";

/// Uploads, publishes and installs (enabled, its secret stored) a module answering `answer`
/// with `manifest`.
async fn installed(tenant: &Tenant, manifest: &Value, answer: &Value) {
    let name = manifest["name"].as_str().expect("name");
    let version = tenant.published(module(manifest, answer)).await;
    assert_eq!(tenant.store_secret(name, "API_KEY", CANARY).await.0, 200);
    let install = json!({"versionId": version["id"], "config": {"baseUrl": "http://127.0.0.1:9"}});
    let (status, body) = tenant.install(name, install).await;
    assert_eq!(status, 200, "{body}");
}

/// Creates and publishes workflow `key` with `steps`.
pub(crate) async fn workflow(tenant: &Tenant, key: &str, steps: Value) {
    let path = format!("/definitions/workflow/{key}/versions");
    let (status, created) = tenant
        .call(Method::POST, &path, Some(json!({ "steps": steps })))
        .await;
    assert_eq!(status, 201, "{created}");
    let path = format!("/definitions/workflow/{key}/versions/1/publish");
    let (status, published) = tenant.call(Method::POST, &path, None).await;
    assert_eq!(status, 200, "{published}");
}

async fn start(tenant: &Tenant, key: &str, context: Value) -> Value {
    let body = json!({"definitionKey": key, "context": context});
    let (status, run) = tenant
        .call(Method::POST, "/workflow-runs", Some(body))
        .await;
    assert_eq!(status, 202, "{run}");
    assert_eq!(run["definitionVersion"], 1);
    run
}

/// Polls the run until its status is one of `statuses`.
pub(crate) async fn until(tenant: &Tenant, run: &Value, statuses: &[&str]) -> Value {
    let path = format!("/workflow-runs/{}", run["id"].as_str().expect("id"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let (status, run) = tenant.call(Method::GET, &path, None).await;
        assert_eq!(status, 200, "{run}");
        if statuses.contains(&run["status"].as_str().unwrap_or_default()) {
            return run;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run never reached {statuses:?}: {run}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The run's invocation records, oldest first.
pub(crate) async fn invocations(tenant: &Tenant, run: &Value) -> Vec<Value> {
    let path = format!(
        "/app-invocations?workflowRunId={}&limit=100",
        run["id"].as_str().expect("id")
    );
    let (status, page) = tenant.call(Method::GET, &path, None).await;
    assert_eq!(status, 200, "{page}");
    let mut items = page["items"].as_array().expect("items").clone();
    items.reverse();
    items
}

fn call_step(app: &str) -> Value {
    json!([{"id": "kyc", "type": "call_app", "app": app, "action": "check",
            "input": {"depth": 1}, "inputMapping": {"name": "subject.name"}, "outputKey": "kyc"}])
}

#[tokio::test]
async fn a_call_app_step_runs_the_install_and_its_output_lands_under_the_output_key() {
    let tenant = Tenant::new();
    let answer = json!({"status": "ok", "output": {"score": 0.25}});
    installed(&tenant, &manifest("runs-ok", "1.0.0"), &answer).await;
    workflow(&tenant, "onboarding", call_step("runs-ok")).await;

    let run = start(&tenant, "onboarding", json!({"subject": {"name": "Ada"}})).await;
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["context"]["kyc"], json!({"score": 0.25}));
    assert_eq!(run["context"]["subject"], json!({"name": "Ada"}));
    assert_eq!(run["steps"][0]["status"], "completed");
    assert_eq!(run["steps"][0]["attempts"], 1);
    assert!(run["finishedAt"].is_string());

    let records = invocations(&tenant, &run).await;
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record["status"], "success");
    assert_eq!(record["attempt"], 1);
    assert_eq!(record["input"], json!({"depth": 1, "name": "Ada"}));
    let key = format!("run:{}:step:kyc", run["id"].as_str().expect("id"));
    assert_eq!(record["idempotencyKey"], key.as_str());
    assert!(record["usage"]["logLines"].is_number(), "{record}");
    assert!(!record.to_string().contains(CANARY));
    assert!(!run.to_string().contains(CANARY));

    // Analysts read runs with the values hidden; they cannot start one.
    let reader = analyst(tenant.id);
    let path = format!("/workflow-runs/{}", run["id"].as_str().expect("id"));
    let (status, shown) = crate::support::apps::call_with(&reader, Method::GET, &path, None).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["context"]["kyc"]["score"], "[redacted]");
    let body = json!({"definitionKey": "onboarding", "context": {}});
    let (status, _) =
        crate::support::apps::call_with(&reader, Method::POST, "/workflow-runs", Some(body)).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn a_retryable_failure_is_retried_by_the_action_then_by_the_step_and_each_attempt_recorded_once()
 {
    let tenant = Tenant::new();
    let mut manifest = manifest("runs-flaky", "1.0.0");
    manifest["actions"]["check"]["retry"] = json!({"maxAttempts": 2, "backoffMs": 0});
    let answer = json!({"status": "error", "message": "vendor down", "retryable": true});
    installed(&tenant, &manifest, &answer).await;
    workflow(&tenant, "flaky", call_step("runs-flaky")).await;

    let run = start(&tenant, "flaky", json!({"subject": {"name": "Ada"}})).await;
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(run["status"], "failed", "{run}");
    // The run's error names the app and the action, never the vendor's words.
    assert_eq!(run["error"], "AppCallFailed: runs-flaky check (error)");
    assert!(!run.to_string().contains("vendor down"));
    // Two action attempts in each of the three step attempts.
    assert_eq!(run["steps"][0]["attempts"], 6, "{run}");
    let records = invocations(&tenant, &run).await;
    let attempts: Vec<i64> = records
        .iter()
        .map(|r| r["attempt"].as_i64().expect("attempt"))
        .collect();
    assert_eq!(attempts, [1, 2, 3, 4, 5, 6]);
    assert!(
        records
            .iter()
            .all(|r| r["status"] == "error" && r["error"] == "vendor down")
    );
    let keys: std::collections::HashSet<&str> = records
        .iter()
        .map(|r| r["idempotencyKey"].as_str().expect("key"))
        .collect();
    assert_eq!(keys.len(), 1, "every attempt carries the same key");
}

#[tokio::test]
async fn calls_that_cannot_reach_the_install_fail_the_run_without_a_record() {
    let tenant = Tenant::new();
    let answer = json!({"status": "ok", "output": {"score": 1}});
    installed(&tenant, &manifest("runs-guarded", "1.0.0"), &answer).await;
    // The input schema needs `name`: a context without it fails before the runner.
    workflow(&tenant, "no-name", call_step("runs-guarded")).await;
    let run = start(&tenant, "no-name", json!({})).await;
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(run["status"], "failed");
    let error = run["error"].as_str().expect("error");
    assert!(
        error.starts_with("AppCallFailed: runs-guarded check (validation_error"),
        "{error}"
    );
    assert!(invocations(&tenant, &run).await.is_empty());

    // A disabled install: app_not_configured.
    let (status, install) = tenant.call(Method::GET, "/apps/runs-guarded", None).await;
    assert_eq!(status, 200, "{install}");
    let version_id = install["install"]["versionId"].clone();
    let disable = json!({"versionId": version_id, "enabled": false, "config": {"baseUrl": "http://127.0.0.1:9"}});
    assert_eq!(tenant.install("runs-guarded", disable).await.0, 200);
    workflow(&tenant, "disabled", call_step("runs-guarded")).await;
    let run = start(&tenant, "disabled", json!({"subject": {"name": "Ada"}})).await;
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    let error = run["error"].as_str().expect("error");
    assert!(error.contains("(app_not_configured"), "{error}");
    assert!(invocations(&tenant, &run).await.is_empty());

    // An app that is not installed: unknown_app.
    workflow(&tenant, "missing", call_step("runs-nowhere")).await;
    let run = start(&tenant, "missing", json!({"subject": {"name": "Ada"}})).await;
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert!(
        run["error"]
            .as_str()
            .expect("error")
            .contains("(unknown_app"),
        "{run}"
    );
}

#[tokio::test]
async fn an_output_outside_the_schema_is_recorded_and_never_reaches_the_run() {
    let tenant = Tenant::new();
    let mut manifest = manifest("runs-badout", "1.0.0");
    manifest["actions"]["check"]["output"] = json!({"type": "object", "required": ["score"], "properties": {"score": {"type": "number"}}});
    installed(
        &tenant,
        &manifest,
        &json!({"status": "ok", "output": {"score": "high"}}),
    )
    .await;
    workflow(&tenant, "badout", call_step("runs-badout")).await;
    let run = start(&tenant, "badout", json!({"subject": {"name": "Ada"}})).await;
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(
        run["error"],
        "AppCallFailed: runs-badout check (bad_output)"
    );
    assert!(run["context"].get("kyc").is_none(), "{run}");
    let records = invocations(&tenant, &run).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "error");
}

#[tokio::test]
async fn an_asynchronous_action_waits_for_its_callback_until_its_durable_timeout() {
    let tenant = Tenant::new();
    let mut manifest = manifest("runs-async", "1.0.0");
    manifest["actions"]["check"]["async"] = json!({"callbackTimeoutSeconds": 2});
    manifest["handles"] = json!({"webhook": true});
    installed(
        &tenant,
        &manifest,
        &json!({"status": "pending", "externalId": "vendor-42"}),
    )
    .await;
    workflow(&tenant, "waits", call_step("runs-async")).await;

    let run = start(&tenant, "waits", json!({"subject": {"name": "Ada"}})).await;
    let waiting = until(&tenant, &run, &["waiting_callback", "completed", "failed"]).await;
    assert_eq!(waiting["status"], "waiting_callback", "{waiting}");
    assert_eq!(waiting["context"]["kycExternalId"], "vendor-42");
    assert_eq!(waiting["steps"][0]["status"], "waiting_callback");
    let records = invocations(&tenant, &run).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "pending");

    let ended = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(ended["status"], "failed");
    assert_eq!(ended["error"], "CallbackTimeout: runs-async check");
    let pool = crate::support::database().await;
    let (status, external_id): (String, String) = sqlx::query_as(
        "SELECT status, external_id FROM app_callback_sessions WHERE workflow_run_id = $1",
    )
    .bind(uuid::Uuid::try_parse(run["id"].as_str().expect("id")).expect("uuid"))
    .fetch_one(&pool)
    .await
    .expect("the session");
    assert_eq!(
        (status.as_str(), external_id.as_str()),
        ("timed_out", "vendor-42")
    );
}

#[tokio::test]
async fn a_waiting_run_is_cancelled_once_and_its_session_settles() {
    let tenant = Tenant::new();
    let mut manifest = manifest("runs-cancel", "1.0.0");
    manifest["actions"]["check"]["async"] = json!({"callbackTimeoutSeconds": 600});
    manifest["handles"] = json!({"webhook": true});
    installed(
        &tenant,
        &manifest,
        &json!({"status": "pending", "externalId": "vendor-7"}),
    )
    .await;
    workflow(&tenant, "cancelled", call_step("runs-cancel")).await;
    let run = start(&tenant, "cancelled", json!({"subject": {"name": "Ada"}})).await;
    until(&tenant, &run, &["waiting_callback"]).await;

    let path = format!("/workflow-runs/{}/cancel", run["id"].as_str().expect("id"));
    let (status, cancelled) = tenant.call(Method::POST, &path, None).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["steps"][0]["status"], "cancelled");
    let (status, again) = tenant.call(Method::POST, &path, None).await;
    assert_eq!(
        (status, again["error"]["code"].as_str()),
        (409, Some("conflict"))
    );
    let pool = crate::support::database().await;
    let (session, timers): (String, i64) = sqlx::query_as(
        "SELECT (SELECT status FROM app_callback_sessions WHERE workflow_run_id = $1), \
                (SELECT count(*) FROM run_timers WHERE run_id = $1)",
    )
    .bind(uuid::Uuid::try_parse(run["id"].as_str().expect("id")).expect("uuid"))
    .fetch_one(&pool)
    .await
    .expect("the session");
    assert_eq!((session.as_str(), timers), ("failed", 0));
}

#[tokio::test]
async fn a_rule_set_step_evaluates_field_and_app_rules_on_the_context() {
    let tenant = Tenant::new();
    let answer = json!({"status": "ok", "output": {"score": 0.25, "hits": [{"list": "PEP"}]}});
    installed(&tenant, &manifest("runs-rules", "1.0.0"), &answer).await;
    let steps = json!([
        {"id": "kyc", "type": "call_app", "app": "runs-rules", "action": "check",
         "inputMapping": {"name": "subject.name"}, "outputKey": "kyc"},
        {"id": "checks", "type": "rule_set", "outputKey": "checks", "rules": [
            {"type": "field", "id": "score-low", "path": "kyc.score",
             "failWhen": {"op": "lt", "value": 0.1}},
            {"type": "app", "id": "pep", "app": "runs-rules", "action": "check",
             "inputMapping": {"name": "subject.name"}, "resultPath": "hits.0.list",
             "failWhen": {"op": "eq", "value": "PEP"}}
        ]}
    ]);
    workflow(&tenant, "screening", steps).await;
    let run = start(&tenant, "screening", json!({"subject": {"name": "Ada"}})).await;
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["context"]["checks"],
        json!({"outcome": "fail", "rules": [
            {"id": "score-low", "type": "field", "outcome": "pass"},
            {"id": "pep", "type": "app", "outcome": "fail"}
        ]})
    );
    assert_eq!(run["steps"][1]["attempts"], 1);
    let records = invocations(&tenant, &run).await;
    let key = format!(
        "run:{}:step:checks/rules/1",
        run["id"].as_str().expect("id")
    );
    assert_eq!(records[1]["idempotencyKey"], key.as_str());
}

#[tokio::test]
async fn a_run_needs_a_workflow_and_belongs_to_its_tenant() {
    let tenant = Tenant::new();
    let body = json!({"definitionKey": "nowhere", "context": {}});
    let (status, refused) = tenant
        .call(Method::POST, "/workflow-runs", Some(body))
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        refused["error"]["details"]["issues"][0]["path"],
        "/definitionKey"
    );
    let (status, refused) = tenant
        .call(
            Method::POST,
            "/workflow-runs",
            Some(json!({"definitionKey": "x", "context": []})),
        )
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (400, Some("validation_error"))
    );

    let answer = json!({"status": "ok", "output": {"score": 0.25}});
    installed(&tenant, &manifest("runs-own", "1.0.0"), &answer).await;
    workflow(&tenant, "own", call_step("runs-own")).await;
    let run = start(&tenant, "own", json!({"subject": {"name": "Ada"}})).await;
    let id = run["id"].as_str().expect("id");
    let stranger = admin(uuid::Uuid::new_v4());
    assert_foreign_is_absent(
        &stranger,
        &format!("/workflow-runs/{id}"),
        &format!("/workflow-runs/{}", uuid::Uuid::now_v7()),
    )
    .await;
    let path = format!("/workflow-runs/{id}/cancel");
    let (status, _) = crate::support::apps::call_with(&stranger, Method::POST, &path, None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn five_counted_failures_open_the_circuit_and_a_successful_trial_closes_it() {
    let tenant = Tenant::new();
    let broken = manifest("runs-circuit", "1.0.0");
    let version = tenant.published(trapping(&broken)).await;
    assert_eq!(
        tenant
            .store_secret("runs-circuit", "API_KEY", CANARY)
            .await
            .0,
        200
    );
    let config = json!({"baseUrl": "http://127.0.0.1:9"});
    let install = json!({"versionId": version["id"], "config": config});
    assert_eq!(tenant.install("runs-circuit", install).await.0, 200);
    workflow(&tenant, "tripping", call_step("runs-circuit")).await;
    let receiver = Receiver::start().await;
    let subscribed = endpoint(&tenant, &receiver.url, json!({})).await;
    let secret = subscribed["secret"].as_str().expect("secret").to_owned();

    // Each run traps three times (its step attempts): two runs make six counted failures.
    let context = json!({"subject": {"name": "Ada"}});
    let first = start(&tenant, "tripping", context.clone()).await;
    let second = start(&tenant, "tripping", context.clone()).await;
    let mut trapped = 0;
    for run in [&first, &second] {
        let ended = until(&tenant, run, &["completed", "failed"]).await;
        // The last attempts may find the circuit already open.
        let error = ended["error"].as_str().expect("error");
        assert!(
            error == "AppCallFailed: runs-circuit check (trapped)"
                || error == "AppCallFailed: runs-circuit check (app_circuit_open)",
            "{error}"
        );
        trapped += invocations(&tenant, run)
            .await
            .iter()
            .filter(|r| {
                r["error"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("trapped"))
            })
            .count();
    }
    assert!(trapped >= 5, "{trapped} trapped calls");
    let pool = crate::support::database().await;
    let opened = async || -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND action = $2")
            .bind(tenant.id)
            .bind("app.circuit.opened")
            .fetch_one(&pool)
            .await
            .expect("audit")
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while opened().await == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the circuit never opened"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Open: the next run's calls fail at once, recorded, never sent.
    let refused = start(&tenant, "tripping", context.clone()).await;
    let refused = until(&tenant, &refused, &["completed", "failed"]).await;
    assert_eq!(
        refused["error"],
        "AppCallFailed: runs-circuit check (app_circuit_open)"
    );
    let records = invocations(&tenant, &refused).await;
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| {
        r["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("app_circuit_open"))
    }));

    // The tenant heard of it: a notification for everyone, a signed event to its endpoint
    // (checked after the refused run: waiting for them could outlast the circuit's 30 s).
    let reader = analyst(tenant.id);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let notes = loop {
        let (status, notes) =
            crate::support::apps::call_with(&reader, Method::GET, "/notifications", None).await;
        assert_eq!(status, 200, "{notes}");
        if notes["items"] != json!([]) {
            break notes;
        }
        assert!(tokio::time::Instant::now() < deadline, "no notification");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let degraded = notes["items"].as_array().expect("items");
    assert_eq!(degraded.len(), 1, "{notes}");
    assert_eq!(
        (&degraded[0]["type"], &degraded[0]["data"]["appName"]),
        (&json!("app_degraded"), &json!("runs-circuit"))
    );
    // Read marks are the reader's own: the analyst marking every one read leaves the admin's.
    let (status, marked) = crate::support::apps::call_with(
        &reader,
        Method::POST,
        "/notifications/read",
        Some(json!({})),
    )
    .await;
    assert_eq!((status, &marked["marked"]), (200, &json!(1)), "{marked}");
    let (_, theirs) =
        crate::support::apps::call_with(&reader, Method::GET, "/notifications", None).await;
    assert_eq!(
        (&theirs["unread"], &theirs["items"][0]["read"]),
        (&json!(0), &json!(true))
    );
    let (_, admins) = tenant.call(Method::GET, "/notifications", None).await;
    assert_eq!(admins["unread"], 1, "{admins}");
    let opened_event = &receiver.until(1, Duration::from_secs(30)).await[0];
    assert!(opened_event.verifies_with(&secret));
    let body = opened_event.json();
    assert_eq!(
        (&body["type"], &body["tenantId"], &body["data"]["appName"]),
        (
            &json!("app.circuit.opened"),
            &json!(tenant.id),
            &json!("runs-circuit")
        ),
        "{body}"
    );

    // The install moves to a working version; 30 s later (moved back here) one trial goes out
    // and its success closes the circuit.
    let working = manifest("runs-circuit", "1.0.1");
    let fixed = tenant
        .published(module(
            &working,
            &json!({"status": "ok", "output": {"score": 1}}),
        ))
        .await;
    let upgrade = json!({"versionId": fixed["id"], "config": config});
    assert_eq!(tenant.install("runs-circuit", upgrade).await.0, 200);
    sqlx::query(
        "UPDATE app_circuits SET opened_at = now() - interval '31 seconds' \
         WHERE tenant_id = $1 AND app_name = 'runs-circuit'",
    )
    .bind(tenant.id)
    .execute(&pool)
    .await
    .expect("the circuit");
    let trial = start(&tenant, "tripping", context).await;
    let trial = until(&tenant, &trial, &["completed", "failed"]).await;
    assert_eq!(trial["status"], "completed", "{trial}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let state: String = sqlx::query_scalar(
            "SELECT state FROM app_circuits WHERE tenant_id = $1 AND app_name = 'runs-circuit'",
        )
        .bind(tenant.id)
        .fetch_one(&pool)
        .await
        .expect("the circuit");
        if state == "closed" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the circuit stayed {state}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(opened().await, 1);
    let closed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND action = 'app.circuit.closed'",
    )
    .bind(tenant.id)
    .fetch_one(&pool)
    .await
    .expect("audit");
    assert_eq!(closed, 1);
    let received = receiver.until(2, Duration::from_secs(30)).await;
    assert_eq!(received.len(), 2, "one event each");
    assert!(received[1].verifies_with(&secret));
    let body = received[1].json();
    assert_eq!(
        (&body["type"], &body["data"]),
        (
            &json!("app.circuit.closed"),
            &json!({"appName": "runs-circuit"})
        ),
        "{body}"
    );
}

#[tokio::test]
async fn one_trace_runs_from_the_request_through_the_stage_to_the_runner() {
    let tenant = Tenant::new();
    let answer = json!({"status": "ok", "output": {"score": 0.5}});
    installed(&tenant, &manifest("runs-traced", "1.0.0"), &answer).await;
    workflow(&tenant, "traced", call_step("runs-traced")).await;

    // A caller's trace: ingress continues it, the envelope carries it over the topic, the runs
    // stage continues it, and its call to the runner sends it on.
    let trace = format!("{:032x}", uuid::Uuid::new_v4().as_u128());
    let response = crate::support::client()
        .post(crate::support::stack().api("/workflow-runs"))
        .bearer_auth(&tenant.token)
        .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
        .json(&json!({"definitionKey": "traced", "context": {"subject": {"name": "Ada"}}}))
        .send()
        .await
        .expect("ingress answers");
    assert_eq!(response.status(), 202);
    let run: Value = response.json().await.expect("the run");
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(run["status"], "completed", "{run}");

    // Each service's log lines of the work name the trace (`.stack/logs`, JSON lines).
    let logs = concat!(env!("CARGO_MANIFEST_DIR"), "/../.stack/logs");
    for service in ["ingress", "pipeline", "runner"] {
        let path = format!("{logs}/{service}.log");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let traced = text
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .any(|line| line["trace_id"] == trace.as_str());
            if traced {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no line of {path} names trace {trace}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    // SPEC "Logs": every pipeline line of the app attempt carries its tenant, app, action and
    // attempt, not only the line that reports its end.
    let text = std::fs::read_to_string(format!("{logs}/pipeline.log")).expect("pipeline log");
    let attempt_lines: Vec<Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["trace_id"] == trace.as_str() && line["appName"] == "runs-traced")
        .collect();
    assert!(!attempt_lines.is_empty(), "no line of the attempt");
    for line in &attempt_lines {
        assert_eq!(
            (&line["tenantId"], &line["action"], &line["attempt"]),
            (&json!(tenant.id), &json!("check"), &json!(1)),
            "{line}"
        );
    }
}
