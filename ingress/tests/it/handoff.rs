//! The applicant's hand-off (SPEC §4.9, docs/hand-off.md) through the stack: a run waits on a
//! session of an app that handles hand-off; a submission is opened on the run; its applicant
//! sees `handoff: true` and gets the module's fresh token, which no log line, table or audit
//! row ever holds; once the session settles nothing waits (409). Another submission's id is
//! 404 for the applicant, and the routes are the applicant's only.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::apps::{Tenant, call_with};
use crate::support::callbacks::{self, EXTERNAL_ID};
use crate::support::instance::Instance;
use crate::support::{applicant, assert_envelope, client, database};

/// The hand-off token the test module answers: it must never be written anywhere.
const TOKEN: &str = "handoff-canary-token-7d41";

/// A run of `app` waiting on a session of an app that handles hand-off, whose `handoff` (and
/// `handle_webhook`) answer `answer`, and a submission opened on the run.
async fn waiting_submission(tenant: &Tenant, app: &str, answer: Value) -> (Value, Uuid) {
    let handles = json!({"webhook": true, "handoff": "vendor-sdk"});
    let run = callbacks::waiting_run(tenant, app, handles, answer, 600).await;
    let (status, submission) = tenant
        .call(
            Method::POST,
            "/collection-submissions",
            Some(json!({"workflowRunId": run["id"]})),
        )
        .await;
    assert_eq!(status, 201, "{submission}");
    assert_eq!(submission["workflowRunId"], run["id"]);
    let id = Uuid::try_parse(submission["id"].as_str().expect("id")).expect("uuid");
    (run, id)
}

#[tokio::test]
async fn the_applicant_gets_a_fresh_token_while_a_session_waits_and_it_is_kept_nowhere() {
    let log = tempfile::NamedTempFile::new().expect("log file");
    let api = Instance::start_logging_to(&[], log.path()).await;
    let tenant = Tenant::new();
    let answer = json!({"status": "ok", "handoff":
        {"sdk": "vendor-sdk", "token": TOKEN, "expiresAt": "2026-11-25T02:00:00Z"}});
    let (run, submission) = waiting_submission(&tenant, "handoff-app", answer).await;
    let token = applicant(tenant.id, submission);
    let get = |path: String, token: String| {
        let request = client().get(api.url(&path)).bearer_auth(token);
        async move { request.send().await.expect("request") }
    };

    let status: Value = get(
        format!("/collection-submissions/{submission}/status"),
        token.clone(),
    )
    .await
    .json()
    .await
    .expect("JSON");
    assert_eq!(
        status,
        json!({"id": submission, "workflowRunId": run["id"], "runStatus": "waiting_callback",
               "handoff": true})
    );
    let response = get(
        format!("/collection-submissions/{submission}/handoff"),
        token.clone(),
    )
    .await;
    assert_eq!(response.status().as_u16(), 200);
    let handoff: Value = response.json().await.expect("JSON");
    assert_eq!(handoff["handoff"]["token"], TOKEN);
    assert_eq!(handoff["handoff"]["sdk"], "vendor-sdk");

    // Another submission of the same tenant, one of another tenant, one that does not exist:
    // all absent for this applicant.
    let nothing = json!({"status": "ok", "handoff": null});
    let (_, sibling) = waiting_submission(&tenant, "handoff-sibling", nothing.clone()).await;
    let stranger = Tenant::new();
    let (_, foreign) = waiting_submission(&stranger, "handoff-app", nothing).await;
    for other in [sibling, foreign, Uuid::now_v7()] {
        for route in ["status", "handoff"] {
            let path = format!("/collection-submissions/{other}/{route}");
            assert_envelope(get(path, token.clone()).await, 404, "not_found").await;
        }
    }
    // A token naming the stranger's submission under this tenant finds nothing either.
    let path = format!("/collection-submissions/{foreign}/handoff");
    assert_envelope(
        get(path, applicant(tenant.id, foreign)).await,
        404,
        "not_found",
    )
    .await;
    assert_envelope(
        get(
            format!("/collection-submissions/{submission}/handoff"),
            tenant.token.clone(),
        )
        .await,
        403,
        "forbidden",
    )
    .await;
    let (status, _) = call_with(&token, Method::GET, "/apps", None).await;
    assert_eq!(status, 403, "an applicant holds no other permission");

    // The token went from the runner's answer to the applicant, and nowhere else.
    let pool = database().await;
    let stored: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM audit_events WHERE payload::text LIKE '%' || $1 || '%') \
              + (SELECT count(*) FROM app_callback_sessions WHERE output::text LIKE '%' || $1 || '%') \
              + (SELECT count(*) FROM inbox WHERE outcome::text LIKE '%' || $1 || '%')",
    )
    .bind(TOKEN)
    .fetch_one(&pool)
    .await
    .expect("search");
    assert_eq!(stored, 0);
    // Once the session settles, nothing waits.
    let webhook = client()
        .post(api.url(&format!(
            "/webhooks/apps/handoff-app/tenants/{}?externalId={EXTERNAL_ID}",
            tenant.id
        )))
        .body("{}")
        .send()
        .await
        .expect("request");
    // The module answers hand-off JSON to the webhook too: not an event, so 502; settle by
    // cancelling the run instead.
    assert_eq!(webhook.status().as_u16(), 502);
    let path = format!("/workflow-runs/{}/cancel", run["id"].as_str().expect("id"));
    assert_eq!(tenant.call(Method::POST, &path, None).await.0, 200);
    let status: Value = get(
        format!("/collection-submissions/{submission}/status"),
        token.clone(),
    )
    .await
    .json()
    .await
    .expect("JSON");
    assert_eq!(
        (&status["handoff"], &status["runStatus"]),
        (&json!(false), &json!("cancelled"))
    );
    assert_envelope(
        get(
            format!("/collection-submissions/{submission}/handoff"),
            token,
        )
        .await,
        409,
        "handoff_unavailable",
    )
    .await;

    // Stopped, the instance has written every line; the stack's runner ran the exports.
    let mut api = api;
    assert!(api.terminate().success());
    let logged = std::fs::read_to_string(log.path()).expect("log");
    assert!(
        logged.contains("/handoff"),
        "the instance logged the requests"
    );
    assert!(
        !logged.contains(TOKEN),
        "the hand-off token is in the API's log"
    );
    let runner_log = crate::support::repo_root().join(".stack/logs/runner.log");
    let runner_logged = std::fs::read_to_string(runner_log).unwrap_or_default();
    assert!(
        !runner_logged.contains(TOKEN),
        "the hand-off token is in the runner's log"
    );
}

#[tokio::test]
async fn a_vendor_with_everything_answers_null_and_a_failing_app_502() {
    let tenant = Tenant::new();
    let (_, done) = waiting_submission(
        &tenant,
        "handoff-done",
        json!({"status": "ok", "handoff": null}),
    )
    .await;
    let (status, answer) = call_with(
        &applicant(tenant.id, done),
        Method::GET,
        &format!("/collection-submissions/{done}/handoff"),
        None,
    )
    .await;
    assert_eq!((status, answer), (200, json!({"handoff": null})));

    let failing = json!({"status": "error", "message": "vendor down"});
    let (_, broken) = waiting_submission(&tenant, "handoff-broken", failing).await;
    let (status, answer) = call_with(
        &applicant(tenant.id, broken),
        Method::GET,
        &format!("/collection-submissions/{broken}/handoff"),
        None,
    )
    .await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (502, &json!("handoff_failed")),
        "{answer}"
    );

    // A submission names a run of the tenant.
    let (status, refused) = tenant
        .call(
            Method::POST,
            "/collection-submissions",
            Some(json!({"workflowRunId": Uuid::now_v7()})),
        )
        .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (404, &json!("not_found"))
    );
}
