//! Vendor webhooks (SPEC §4.8, docs/vendor-webhooks.md) through the real stack: a run waits on
//! an asynchronous action's session, the vendor's webhook reaches the tenant route, the
//! session's module reads it, the event is recorded and settles the session once, and the run
//! goes on. Every row of §4.8's table, the look-ups made before any module runs, the forced
//! uninstall, concurrent copies of one event, and `GET /app-callbacks`.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::runs::until;
use crate::support::apps::Tenant;
use crate::support::callbacks::{self, EXTERNAL_ID};
use crate::support::instance::Instance;
use crate::support::{StackUrls, analyst, assert_envelope, client, database, stack};

/// A webhook module's event answer.
fn event(event_id: &str, status: &str, extra: Value) -> Value {
    let mut event = json!({"externalId": EXTERNAL_ID, "eventId": event_id, "status": status});
    event
        .as_object_mut()
        .expect("object")
        .extend(extra.as_object().cloned().unwrap_or_default());
    json!({"status": "event", "event": event})
}

/// A run waiting on `app`'s session, the app reading the external id at `/sessionId`.
async fn waiting_run(tenant: &Tenant, app: &str, webhook: Value, timeout_seconds: u64) -> Value {
    let handles = json!({"webhook": true, "webhookExternalId": {"json": "/sessionId"}});
    callbacks::waiting_run(tenant, app, handles, webhook, timeout_seconds).await
}

fn tenant_route(tenant: &Tenant, app: &str) -> String {
    stack().api(&format!("/webhooks/apps/{app}/tenants/{}", tenant.id))
}

/// Posts `body` to `url` as a vendor would: no token.
async fn post(url: &str, body: &Value) -> (u16, Value) {
    let response = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

/// Posts as a vendor retrying 503 (`Retry-After`) does, for at most a minute.
async fn post_until_answered(url: &str, body: &Value) -> (u16, Value) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (status, answer) = post(url, body).await;
        if status != 503 || tokio::time::Instant::now() > deadline {
            return (status, answer);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn vendor_body() -> Value {
    json!({"sessionId": EXTERNAL_ID, "result": "whatever the vendor says"})
}

/// The session of `run`, as `GET /app-callbacks` answers it to the tenant's admin.
async fn session_of(tenant: &Tenant, run: &Value) -> Value {
    let path = format!(
        "/app-callbacks?workflowRunId={}",
        run["id"].as_str().expect("id")
    );
    let (status, page) = tenant.call(Method::GET, &path, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 1, "{page}");
    page["items"][0].clone()
}

/// The recorded events of a session: (event id, outcome), oldest first, once `count` are there.
async fn recorded_events(session: &Value, count: usize) -> Vec<(String, String)> {
    let pool = database().await;
    let session = Uuid::try_parse(session["id"].as_str().expect("id")).expect("uuid");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT event_id, outcome FROM app_callback_events WHERE session_id = $1 \
             ORDER BY recorded_at",
        )
        .bind(session)
        .fetch_all(&pool)
        .await
        .expect("events");
        if rows.len() >= count || tokio::time::Instant::now() > deadline {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `app.callback.received` audit payloads of the tenant.
async fn received_audits(tenant: &Tenant) -> Vec<Value> {
    let pool = database().await;
    sqlx::query_scalar(
        "SELECT payload FROM audit_events WHERE tenant_id = $1 \
         AND action = 'app.callback.received' ORDER BY occurred_at",
    )
    .bind(tenant.id)
    .fetch_all(&pool)
    .await
    .expect("audit")
}

#[tokio::test]
async fn a_completed_event_settles_the_session_once_and_the_run_goes_on() {
    let tenant = Tenant::new();
    let completed = event("evt-1", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, "hook-completed", completed, 600).await;
    let url = tenant_route(&tenant, "hook-completed");

    let (status, answer) = post(&url, &vendor_body()).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["received"], true);
    assert_eq!(answer["status"], "completed");
    let session = session_of(&tenant, &run).await;
    assert_eq!(answer["callbackId"], session["id"]);
    let (status, again) = post(&url, &vendor_body()).await;
    assert_eq!(
        (status, again),
        (200, json!({"received": false, "duplicate": true}))
    );

    let ended = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["context"]["idv"], json!({"verified": true}));
    assert_eq!(ended["context"]["idvExternalId"], EXTERNAL_ID);
    let session = session_of(&tenant, &run).await;
    assert_eq!(session["status"], "completed");
    assert_eq!(session["output"], json!({"verified": true}));
    assert_eq!(session["externalId"], EXTERNAL_ID);
    assert!(session["completedAt"].is_string(), "{session}");
    assert_eq!(
        recorded_events(&session, 1).await,
        [("evt-1".into(), "settled".into())]
    );
    let audits = received_audits(&tenant).await;
    assert_eq!(
        audits,
        [
            json!({"app": "hook-completed", "externalId": EXTERNAL_ID, "status": "completed",
                "eventId": "evt-1"})
        ]
    );

    // An analyst has no runs:context: values redacted, keys kept.
    let path = format!(
        "/app-callbacks?workflowRunId={}",
        run["id"].as_str().expect("id")
    );
    let (status, page) =
        crate::support::apps::call_with(&analyst(tenant.id), Method::GET, &path, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        page["items"][0]["output"],
        json!({"verified": "[redacted]"})
    );
}

#[tokio::test]
async fn a_failed_event_fails_the_run_naming_only_the_app_and_the_action() {
    let tenant = Tenant::new();
    let failed = event(
        "evt-f",
        "failed",
        json!({"error": "declined: passport expired"}),
    );
    let run = waiting_run(&tenant, "hook-failed", failed, 600).await;

    let (status, answer) = post(&tenant_route(&tenant, "hook-failed"), &vendor_body()).await;
    assert_eq!(
        (status, &answer["status"]),
        (202, &json!("failed")),
        "{answer}"
    );
    let ended = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(ended["status"], "failed");
    assert_eq!(ended["error"], "AppCallbackFailed: hook-failed check");
    let session = session_of(&tenant, &run).await;
    assert_eq!(session["status"], "failed");
    assert_eq!(session["error"], "declined: passport expired");
}

#[tokio::test]
async fn an_output_outside_the_actions_schema_fails_the_session_instead_of_reaching_the_run() {
    let tenant = Tenant::new();
    let wrong = event("evt-o", "completed", json!({"output": {"verified": "yes"}}));
    let run = waiting_run(&tenant, "hook-output", wrong, 600).await;

    let (status, answer) = post(&tenant_route(&tenant, "hook-output"), &vendor_body()).await;
    assert_eq!(
        (status, &answer["status"]),
        (202, &json!("failed")),
        "{answer}"
    );
    let ended = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(ended["error"], "AppCallbackFailed: hook-output check");
    let session = session_of(&tenant, &run).await;
    let error = session["error"].as_str().expect("error");
    assert!(
        error.starts_with("validation_error:") && error.contains("/output/verified"),
        "{error}"
    );
}

#[tokio::test]
async fn a_pending_event_is_accepted_and_the_session_keeps_waiting() {
    let tenant = Tenant::new();
    let progress = event("evt-p", "pending", json!({}));
    let run = waiting_run(&tenant, "hook-pending", progress, 600).await;

    let (status, answer) = post(&tenant_route(&tenant, "hook-pending"), &vendor_body()).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(
        (&answer["received"], &answer["accepted"], &answer["status"]),
        (&json!(true), &json!(true), &json!("pending"))
    );
    let session = session_of(&tenant, &run).await;
    assert_eq!(
        recorded_events(&session, 1).await,
        [("evt-p".into(), "accepted".into())]
    );
    assert_eq!(session_of(&tenant, &run).await["status"], "pending");
    assert_eq!(
        until(&tenant, &run, &["waiting_callback"]).await["status"],
        "waiting_callback"
    );
    assert_eq!(received_audits(&tenant).await.len(), 1);
}

#[tokio::test]
async fn an_event_for_a_timed_out_session_is_recorded_and_answered_stale() {
    let tenant = Tenant::new();
    let late = event(
        "evt-late",
        "completed",
        json!({"output": {"verified": true}}),
    );
    let run = waiting_run(&tenant, "hook-late", late, 1).await;
    let ended = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(ended["error"], "CallbackTimeout: hook-late check");

    let (status, answer) = post(&tenant_route(&tenant, "hook-late"), &vendor_body()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        (&answer["received"], &answer["stale"], &answer["status"]),
        (&json!(false), &json!(true), &json!("timed_out"))
    );
    let session = session_of(&tenant, &run).await;
    assert_eq!(
        recorded_events(&session, 1).await,
        [("evt-late".into(), "stale".into())]
    );
    assert_eq!(session["status"], "timed_out");
    assert!(received_audits(&tenant).await.is_empty());
}

#[tokio::test]
async fn ignored_rejected_and_failing_modules_change_nothing() {
    let tenant = Tenant::new();
    let cases = [
        ("hook-ignored", json!({"status": "ignored"}), 202, None),
        (
            "hook-rejected",
            json!({"status": "rejected", "message": "bad signature"}),
            401,
            Some("webhook_rejected"),
        ),
        (
            "hook-erring",
            json!({"status": "error", "message": "vendor down"}),
            502,
            Some("app_webhook_failed"),
        ),
    ];
    for (app, webhook, expected, code) in cases {
        let run = waiting_run(&tenant, app, webhook, 600).await;
        let response = client()
            .post(tenant_route(&tenant, app))
            .json(&vendor_body())
            .send()
            .await
            .expect("request");
        match code {
            Some(code) => {
                assert_envelope(response, expected, code).await;
            }
            None => {
                assert_eq!(response.status().as_u16(), expected);
                let answer: Value = response.json().await.expect("JSON");
                assert_eq!(answer, json!({"received": false, "ignored": true}));
            }
        }
        let session = session_of(&tenant, &run).await;
        assert_eq!(session["status"], "pending", "{app}");
    }
    // Nothing was produced for any of them. The stage applies a moment after the answers: an
    // event produced after theirs and seen recorded bounds the wait for anything they produced.
    let barrier = event(
        "evt-barrier",
        "completed",
        json!({"output": {"verified": true}}),
    );
    let run = waiting_run(&tenant, "hook-barrier", barrier, 600).await;
    let (status, _) = post(&tenant_route(&tenant, "hook-barrier"), &vendor_body()).await;
    assert_eq!(status, 202);
    recorded_events(&session_of(&tenant, &run).await, 1).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pool = database().await;
    let events: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM app_callback_events WHERE tenant_id = $1 AND app_name <> 'hook-barrier'",
    )
    .bind(tenant.id)
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(events, 0);
}

#[tokio::test]
async fn the_session_is_found_before_any_module_runs_and_only_on_its_own_route() {
    let tenant = Tenant::new();
    let completed = event("evt-x", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, "hook-lookup", completed, 600).await;
    let url = tenant_route(&tenant, "hook-lookup");
    let send = |url: String, body: Vec<u8>| async move {
        client().post(url).body(body).send().await.expect("request")
    };

    // No id in the URL and none where the manifest says (a JSON body without /sessionId).
    assert_envelope(
        send(url.clone(), b"{}".to_vec()).await,
        400,
        "missing_external_id",
    )
    .await;
    assert_envelope(
        send(url.clone(), b"not json".to_vec()).await,
        400,
        "missing_external_id",
    )
    .await;
    // An id no session has.
    assert_envelope(
        send(format!("{url}?externalId=nobody"), vec![]).await,
        404,
        "not_found",
    )
    .await;
    // The id given, another tenant's route and the platform route find nothing; neither does
    // a tenant that is not a uuid or an app name that cannot be one.
    let other = Tenant::new();
    let id = format!("?externalId={EXTERNAL_ID}");
    let body = vendor_body().to_string().into_bytes();
    for foreign in [
        format!("{}{id}", tenant_route(&other, "hook-lookup")),
        stack().api(&format!("/webhooks/apps/hook-lookup{id}")),
        stack().api(&format!("/webhooks/apps/hook-lookup/tenants/x{id}")),
        stack().api(&format!("/webhooks/apps/Bad_App{id}")),
    ] {
        assert_envelope(send(foreign, body.clone()).await, 404, "not_found").await;
    }
    // Without the id in the URL, a route whose publisher has no version declaring where it is
    // cannot read one.
    assert_envelope(
        send(tenant_route(&other, "hook-lookup"), body.clone()).await,
        400,
        "missing_external_id",
    )
    .await;
    // Over 256 KiB.
    let big = vec![b' '; 256 * 1024 + 1];
    assert_envelope(send(url.clone(), big).await, 413, "payload_too_large").await;
    // The URL's id wins over the body's.
    let response = send(format!("{url}?externalId={EXTERNAL_ID}"), b"{}".to_vec()).await;
    assert_eq!(response.status().as_u16(), 202);
    assert_eq!(
        until(&tenant, &run, &["completed", "failed"]).await["status"],
        "completed"
    );
}

#[tokio::test]
async fn a_forced_uninstall_fails_the_session_and_ends_the_run_at_once() {
    let tenant = Tenant::new();
    let completed = event("evt-u", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, "hook-uninstall", completed, 600).await;

    let (status, refused) = tenant
        .call(Method::DELETE, "/apps/hook-uninstall/install", None)
        .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (409, &json!("app_in_use"))
    );
    assert_eq!(refused["error"]["details"]["pendingCallbacks"], 1);
    let (status, body) = tenant
        .call(
            Method::DELETE,
            "/apps/hook-uninstall/install?force=true",
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Well before the ten minutes of its callback timeout.
    let ended = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(ended["error"], "app_uninstalled: hook-uninstall check");
    let session = session_of(&tenant, &run).await;
    assert_eq!(
        (&session["status"], &session["error"]),
        (&json!("failed"), &json!("app_uninstalled"))
    );

    let response = client()
        .post(tenant_route(&tenant, "hook-uninstall"))
        .json(&vendor_body())
        .send()
        .await
        .expect("request");
    assert_envelope(response, 409, "app_not_installed").await;
}

#[tokio::test]
async fn a_blocked_module_reads_no_webhook() {
    let tenant = Tenant::new();
    let completed = event("evt-b", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, "hook-blocked", completed, 600).await;
    let pool = database().await;
    let sha: String = sqlx::query_scalar(
        "SELECT v.sha256 FROM app_callback_sessions s JOIN app_versions v ON v.id = s.version_id \
         WHERE s.workflow_run_id = $1",
    )
    .bind(Uuid::try_parse(run["id"].as_str().expect("id")).expect("uuid"))
    .fetch_one(&pool)
    .await
    .expect("sha");
    let instance = Instance::start(&[("APP_BLOCKED_SHA256", &sha)]).await;
    let url = instance.url(&format!(
        "/webhooks/apps/hook-blocked/tenants/{}",
        tenant.id
    ));
    let response = client()
        .post(url)
        .json(&vendor_body())
        .send()
        .await
        .expect("request");
    assert_envelope(response, 409, "app_blocked").await;
    assert_eq!(session_of(&tenant, &run).await["status"], "pending");
}

#[tokio::test]
async fn fifty_concurrent_copies_of_one_event_are_received_once() {
    let tenant = Tenant::new();
    let completed = event("evt-50", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, "hook-copies", completed, 600).await;
    let url = tenant_route(&tenant, "hook-copies");

    let body = vendor_body();
    let copies = (0..50).map(|_| post_until_answered(&url, &body));
    let answers = futures::future::join_all(copies).await;
    let received: Vec<_> = answers
        .iter()
        .filter(|(_, a)| a["received"] == true)
        .collect();
    let duplicates = answers
        .iter()
        .filter(|(status, a)| *status == 200 && a["duplicate"] == true)
        .count();
    assert_eq!(received.len(), 1, "{answers:?}");
    assert_eq!(received[0].0, 202);
    assert_eq!(duplicates, 49, "{answers:?}");

    assert_eq!(
        until(&tenant, &run, &["completed", "failed"]).await["status"],
        "completed"
    );
    let session = session_of(&tenant, &run).await;
    assert_eq!(recorded_events(&session, 1).await.len(), 1);
    assert_eq!(received_audits(&tenant).await.len(), 1);
}

#[tokio::test]
async fn the_callback_list_filters_pages_and_belongs_to_its_tenant() {
    let tenant = Tenant::new();
    let completed = event("evt-l", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, "hook-list", completed, 600).await;

    let (status, page) = tenant
        .call(
            Method::GET,
            "/app-callbacks?status=pending&appName=hook-list",
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        (page["total"].clone(), page["totalIsEstimate"].clone()),
        (json!(1), json!(false))
    );
    let item = &page["items"][0];
    assert_eq!(item["workflowRunId"], run["id"]);
    assert_eq!(item["stepId"], "idv");
    assert_eq!(item["action"], "check");
    assert_eq!(item["tenantId"], json!(tenant.id));
    for query in ["status=completed", "appName=other-app", "limit=1&offset=1"] {
        let (status, page) = tenant
            .call(Method::GET, &format!("/app-callbacks?{query}"), None)
            .await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["items"], json!([]), "{query}");
    }
    let (status, bad) = tenant
        .call(Method::GET, "/app-callbacks?status=settled&limit=0", None)
        .await;
    assert_eq!(
        (status, &bad["error"]["code"]),
        (400, &json!("validation_error"))
    );
    // Another tenant sees none of it, even naming the run.
    let other = Tenant::new();
    let path = format!(
        "/app-callbacks?workflowRunId={}",
        run["id"].as_str().expect("id")
    );
    let (status, page) = other.call(Method::GET, &path, None).await;
    assert_eq!((status, page["total"].clone()), (200, json!(0)));
}

#[tokio::test]
async fn the_client_address_is_what_a_trusted_proxy_says_it_is() {
    // Two requests a minute per caller: the third from one address is limited, another
    // address behind the same proxy is not, and an untrusted peer's header is not believed.
    let trusting = Instance::start(&[
        ("API_RATE_LIMIT_PER_MINUTE", "2"),
        ("API_TRUST_FORWARDED_FOR", "127.0.0.0/8"),
    ])
    .await;
    let url = trusting.url(&format!(
        "/webhooks/apps/hook-nobody/tenants/{}",
        Uuid::now_v7()
    ));
    let from = |address: &'static str| {
        client()
            .post(url.clone())
            .header("x-forwarded-for", address)
            .body("{}")
            .send()
    };
    for _ in 0..2 {
        assert_eq!(
            from("198.51.100.1")
                .await
                .expect("request")
                .status()
                .as_u16(),
            400
        );
    }
    assert_envelope(
        from("198.51.100.1").await.expect("request"),
        429,
        "rate_limited",
    )
    .await;
    assert_eq!(
        from("198.51.100.2")
            .await
            .expect("request")
            .status()
            .as_u16(),
        400
    );

    let untrusting = Instance::start(&[("API_RATE_LIMIT_PER_MINUTE", "2")]).await;
    let url = untrusting.url(&format!(
        "/webhooks/apps/hook-nobody/tenants/{}",
        Uuid::now_v7()
    ));
    for address in ["198.51.100.3", "198.51.100.4"] {
        let response = client()
            .post(url.clone())
            .header("x-forwarded-for", address)
            .body("{}");
        assert_eq!(
            response.send().await.expect("request").status().as_u16(),
            400
        );
    }
    let response = client()
        .post(url)
        .header("x-forwarded-for", "198.51.100.5")
        .body("{}");
    assert_envelope(response.send().await.expect("request"), 429, "rate_limited").await;
}

#[tokio::test]
async fn a_repeat_whose_event_id_the_app_declares_is_answered_without_the_module() {
    let tenant = Tenant::new();
    let app = "hook-declared";
    let handles = json!({"webhook": true, "webhookExternalId": {"json": "/sessionId"},
                         "webhookEventId": {"header": "x-event-id"}});
    let completed = event("evt-h", "completed", json!({"output": {"verified": true}}));
    callbacks::waiting_run(&tenant, app, handles, completed, 600).await;
    let deliver = |url: String, event_id: &'static str| async move {
        client()
            .post(url)
            .header("x-event-id", event_id)
            .json(&vendor_body())
            .send()
            .await
            .expect("request")
    };

    let first = deliver(tenant_route(&tenant, app), "evt-h").await;
    assert_eq!(first.status().as_u16(), 202);
    // An instance whose runner does not answer: only a repeat it can answer alone succeeds.
    let blind = Instance::start(&[("APP_RUNNER_URL", "http://127.0.0.1:9")]).await;
    let url = blind.url(&format!("/webhooks/apps/{app}/tenants/{}", tenant.id));
    let repeat = deliver(url.clone(), "evt-h").await;
    assert_eq!(repeat.status().as_u16(), 200);
    let answer: Value = repeat.json().await.expect("JSON");
    assert_eq!(answer, json!({"received": false, "duplicate": true}));
    let unknown = deliver(url, "evt-other").await;
    assert_envelope(unknown, 502, "app_webhook_failed").await;
}

#[tokio::test]
async fn a_platform_external_id_that_names_sessions_of_two_tenants_reaches_neither() {
    let pool = database().await;
    let version: Uuid = sqlx::query_scalar(
        "SELECT id FROM app_versions WHERE tenant_id IS NULL AND name = 'vendor-app' \
         AND status = 'published' LIMIT 1",
    )
    .fetch_one(&pool)
    .await
    .expect("the catalogue's vendor-app");
    let external_id = format!("shared-{}", Uuid::now_v7());
    for tenant in [Uuid::new_v4(), Uuid::new_v4()] {
        sqlx::query(
            "INSERT INTO app_callback_sessions (id, tenant_id, app_name, version_id, action, \
             external_id, status, created_at) \
             VALUES ($1, $2, 'vendor-app', $3, 'verify', $4, 'pending', now())",
        )
        .bind(Uuid::now_v7())
        .bind(tenant)
        .bind(version)
        .bind(&external_id)
        .execute(&pool)
        .await
        .expect("session");
    }
    let url = stack().api(&format!(
        "/webhooks/apps/vendor-app?externalId={external_id}"
    ));
    let response = client()
        .post(url)
        .json(&vendor_body())
        .send()
        .await
        .expect("request");
    assert_envelope(response, 409, "conflict").await;
}

#[tokio::test]
async fn hostile_input_on_either_webhook_route_is_a_4xx_with_the_envelope_and_logs_no_error() {
    let tenant = Tenant::new();
    let app = "hook-hostile";
    let completed = event("evt-z", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, app, completed, 600).await;
    let log = tempfile::NamedTempFile::new().expect("log file");
    let api = Instance::start_logging_to(&[], log.path()).await;
    let tenant_url = api.url(&format!("/webhooks/apps/{app}/tenants/{}", tenant.id));
    let platform_url = api.url(&format!("/webhooks/apps/{app}"));
    let post = |url: String, body: Vec<u8>| async move {
        client().post(url).body(body).send().await.expect("request")
    };

    // (query, what either route answers): an id no session can have is refused before any
    // lookup; one that could be an id but is no session's is 404.
    let long = "x".repeat(201);
    let longest = "%C3%A9".repeat(200);
    let in_the_url = [
        ("externalId=%00".to_owned(), 400, "validation_error"),
        ("externalId=a%00b".to_owned(), 400, "validation_error"),
        (format!("externalId={long}"), 400, "validation_error"),
        (
            "externalId=a&externalId=b".to_owned(),
            400,
            "validation_error",
        ),
        ("externalId=%FF%FE".to_owned(), 404, "not_found"),
        ("externalId=%01%1F%7F".to_owned(), 404, "not_found"),
        ("externalId=%E2%80%AEdi".to_owned(), 404, "not_found"),
        ("externalId=%25%2e%2e%2F".to_owned(), 404, "not_found"),
        (format!("externalId={longest}"), 404, "not_found"),
    ];
    for url in [&tenant_url, &platform_url] {
        for (query, status, code) in &in_the_url {
            let response = post(format!("{url}?{query}"), b"{}".to_vec()).await;
            let answer = assert_envelope(response, *status, code).await;
            if *status == 400 {
                let issue = &answer["error"]["details"]["issues"][0];
                assert_eq!(
                    (&issue["in"], &issue["path"]),
                    (&json!("query"), &json!("externalId")),
                    "{query}: {answer}"
                );
            }
        }
    }

    // Bodies read where the app declares the id (`/sessionId`); the platform publishes no
    // version of this app, so its route reads no body at all.
    let in_the_body: [(Vec<u8>, u16, &str); 5] = [
        (
            br#"{"sessionId": "a\u0000b"}"#.to_vec(),
            400,
            "validation_error",
        ),
        (
            json!({"sessionId": long}).to_string().into_bytes(),
            400,
            "validation_error",
        ),
        (
            br#"{"sessionId": "\u0001\u001f"}"#.to_vec(),
            404,
            "not_found",
        ),
        (b"\xff\xfe{}".to_vec(), 400, "missing_external_id"),
        (
            br#"{"sessionId": 1e400}"#.to_vec(),
            400,
            "missing_external_id",
        ),
    ];
    for (body, status, code) in &in_the_body {
        let answer =
            assert_envelope(post(tenant_url.clone(), body.clone()).await, *status, code).await;
        if *status == 400 && *code == "validation_error" {
            let issue = &answer["error"]["details"]["issues"][0];
            assert_eq!(
                (&issue["in"], &issue["path"]),
                (&json!("body"), &json!("/sessionId")),
                "{answer}"
            );
        }
        assert_envelope(
            post(platform_url.clone(), body.clone()).await,
            400,
            "missing_external_id",
        )
        .await;
    }
    // Paths that cannot name a publisher or an app.
    for path in [
        format!("/webhooks/apps/{app}/tenants/%00"),
        format!("/webhooks/apps/{app}/tenants/{}%00", tenant.id),
        "/webhooks/apps/%00".to_owned(),
        format!("/webhooks/apps/{}", "a".repeat(101)),
    ] {
        let url = api.url(&format!("{path}?externalId={EXTERNAL_ID}"));
        assert_envelope(post(url, b"{}".to_vec()).await, 404, "not_found").await;
    }

    // None of it reached the session, and none of it was an error of ours.
    assert_eq!(session_of(&tenant, &run).await["status"], "pending");
    let lines = std::fs::read_to_string(log.path()).expect("log");
    let errors: Vec<&str> = lines
        .lines()
        .filter(|line| line.contains(r#""level":"error""#))
        .collect();
    assert!(errors.is_empty(), "logged at error: {errors:#?}");
}

#[tokio::test]
async fn a_session_finishes_on_the_version_that_started_it_after_an_upgrade() {
    let tenant = Tenant::new();
    let app = "hook-upgraded";
    let first = event("evt-v1", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, app, first, 600).await;

    // Version 2 reads webhooks otherwise: its event would fail the session.
    let mut manifest = crate::support::modules::manifest(app, "2.0.0");
    manifest["actions"]["check"]["async"] = json!({"callbackTimeoutSeconds": 600});
    manifest["handles"] = json!({"webhook": true, "webhookExternalId": {"json": "/sessionId"}});
    let pending = json!({"status": "pending", "externalId": "another-session"});
    let second = event("evt-v2", "failed", json!({"error": "version 2 read this"}));
    let upgraded = tenant
        .published(crate::support::modules::with_webhook(
            &manifest, &pending, &second,
        ))
        .await;
    let install = json!({"versionId": upgraded["id"], "config": {"baseUrl": "http://127.0.0.1:9"}});
    let (status, body) = tenant.install(app, install).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["version"], "2.0.0");

    let (status, answer) = post(&tenant_route(&tenant, app), &vendor_body()).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(
        (&answer["received"], &answer["status"]),
        (&json!(true), &json!("completed"))
    );
    let ended = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["context"]["idv"], json!({"verified": true}));
    let session = session_of(&tenant, &run).await;
    assert_eq!(
        recorded_events(&session, 1).await,
        [("evt-v1".into(), "settled".into())]
    );
}

#[tokio::test]
async fn without_redis_two_copies_of_one_event_are_received_once_and_duplicate_once() {
    let tenant = Tenant::new();
    let app = "hook-no-redis";
    let completed = event("evt-r", "completed", json!({"output": {"verified": true}}));
    let run = waiting_run(&tenant, app, completed, 600).await;
    // No claims and no replies: the stage decides, and its answers are read from the database.
    let api = Instance::start(&[("REDIS_URL", "redis://127.0.0.1:9")]).await;
    let url = api.url(&format!("/webhooks/apps/{app}/tenants/{}", tenant.id));

    let body = vendor_body();
    let copies = (0..2).map(|_| post(&url, &body));
    let mut answers = futures::future::join_all(copies).await;
    answers.sort_by_key(|(status, _)| *status);
    assert_eq!(
        answers,
        [
            (200, json!({"received": false, "duplicate": true})),
            (
                202,
                json!({"received": true, "callbackId": session_of(&tenant, &run).await["id"],
                        "status": "completed"})
            ),
        ]
    );
}
