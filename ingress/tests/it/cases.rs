//! Cases (docs/cases-activity-audit.md "Cases"): opened by `POST /cases` or a workflow's
//! `open_case` step, decided once, their SLA deadline a durable timer that records
//! `case.sla.breached` once; isolation.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::runs::{until, workflow};
use crate::support::apps::{Tenant, call_with};
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::{analyst, database, pipeline_metric};

pub(crate) async fn open_case(tenant: &Tenant, body: Value) -> Value {
    let (status, case) = tenant.call(Method::POST, "/cases", Some(body)).await;
    assert_eq!(status, 201, "{case}");
    case
}

pub(crate) async fn decide(tenant: &Tenant, case: &Value, outcome: &str) -> (u16, Value) {
    let path = format!("/cases/{}/decide", case["id"].as_str().expect("id"));
    tenant
        .call(
            Method::POST,
            &path,
            Some(json!({"outcome": outcome, "comment": "checked"})),
        )
        .await
}

async fn audited(tenant: &Tenant, action: &str) -> Vec<(String, Value)> {
    sqlx::query_as(
        "SELECT actor_type, payload FROM audit_events WHERE tenant_id = $1 AND action = $2 \
         ORDER BY occurred_at",
    )
    .bind(tenant.id)
    .bind(action)
    .fetch_all(&database().await)
    .await
    .expect("audit rows")
}

#[tokio::test]
async fn a_case_opened_by_post_is_decided_once_and_its_title_stays_out_of_the_audit() {
    let tenant = Tenant::new();
    let title = format!("Review of Jane Canary-{}", Uuid::new_v4().simple());
    let case = open_case(
        &tenant,
        json!({"type": "kyc_review", "title": title, "priority": "high", "slaHours": 4}),
    )
    .await;
    assert_eq!(
        (
            &case["status"],
            &case["priority"],
            &case["type"],
            &case["outcome"]
        ),
        (
            &json!("open"),
            &json!("high"),
            &json!("kyc_review"),
            &Value::Null
        )
    );
    let path = format!("/cases/{}", case["id"].as_str().expect("id"));
    let (status, read) = tenant.call(Method::GET, &path, None).await;
    assert_eq!((status, &read), (200, &case));

    // An analyst works cases.
    let worker = Tenant {
        id: tenant.id,
        token: analyst(tenant.id),
    };
    let (status, decided) = decide(&worker, &case, "rejected").await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(
        (
            &decided["status"],
            &decided["outcome"],
            &decided["decisionComment"]
        ),
        (&json!("decided"), &json!("rejected"), &json!("checked"))
    );
    let (status, again) = decide(&tenant, &case, "approved").await;
    assert_eq!((status, &again["error"]["code"]), (409, &json!("conflict")));

    let rows = audited(&tenant, "case.decided").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].1["outcome"], "rejected");
    assert_eq!(rows[0].1["slaBreached"], false);
    assert!(!rows[0].1.to_string().contains("Canary"), "{:?}", rows[0]);
    let timers: i64 = sqlx::query_scalar("SELECT count(*) FROM case_timers WHERE case_id = $1")
        .bind(Uuid::parse_str(case["id"].as_str().expect("id")).expect("uuid"))
        .fetch_one(&database().await)
        .await
        .expect("timers");
    assert_eq!(timers, 0, "a decided case has no deadline left");

    let (status, page) = tenant
        .call(Method::GET, "/cases?status=decided", None)
        .await;
    assert_eq!(
        (status, &page["total"], &page["items"][0]["id"]),
        (200, &json!(1), &case["id"])
    );
    let (_, open) = tenant.call(Method::GET, "/cases?status=open", None).await;
    assert_eq!(open["total"], 0);
}

#[tokio::test]
async fn bad_cases_and_decisions_are_refused_with_paths() {
    let tenant = Tenant::new();
    for (body, path) in [
        (json!({"type": "KYC", "title": "t"}), "/type"),
        (json!({"type": "kyc", "title": "  "}), "/title"),
        (
            json!({"type": "kyc", "title": "t", "slaHours": 0}),
            "/slaHours",
        ),
        (
            json!({"type": "kyc", "title": "t", "slaHours": 8761}),
            "/slaHours",
        ),
        (
            json!({"type": "kyc", "title": "t", "priority": "urgent"}),
            "/priority",
        ),
        (
            json!({"type": "kyc", "title": "t", "colour": "red"}),
            "/colour",
        ),
    ] {
        let (status, refused) = tenant
            .call(Method::POST, "/cases", Some(body.clone()))
            .await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (400, &json!("validation_error")),
            "{body}"
        );
        let issues = refused["error"]["details"]["issues"]
            .as_array()
            .expect("issues");
        assert!(
            issues.iter().any(|i| i["path"] == path),
            "{body}: {refused}"
        );
    }
    let case = open_case(&tenant, json!({"type": "aml_alert", "title": "t"})).await;
    assert_eq!(
        (&case["priority"], case["slaDueAt"].is_string()),
        (&json!("medium"), true)
    );
    let path = format!("/cases/{}/decide", case["id"].as_str().expect("id"));
    for body in [
        json!({"outcome": "maybe"}),
        json!({}),
        json!({"outcome": "approved", "comment": "x".repeat(2001)}),
    ] {
        let (status, _) = tenant.call(Method::POST, &path, Some(body.clone())).await;
        assert_eq!(status, 400, "{body}");
    }
    let stranger = Tenant::new();
    let id = case["id"].as_str().expect("id");
    let random = Uuid::new_v4();
    assert_foreign_is_absent(
        &stranger.token,
        &format!("/cases/{id}"),
        &format!("/cases/{random}"),
    )
    .await;
    for target in [id.to_owned(), random.to_string()] {
        let (status, refused) = decide(&stranger, &json!({"id": target}), "approved").await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (404, &json!("not_found"))
        );
    }
    let (_, listed) = stranger.call(Method::GET, "/cases", None).await;
    assert_eq!(listed["total"], 0);
    let machine = call_with(
        &crate::support::token(tenant.id, &[]),
        Method::GET,
        "/cases",
        None,
    )
    .await;
    assert_eq!(machine.0, 403);
}

#[tokio::test]
async fn an_open_case_past_its_deadline_is_marked_breached_once() {
    let tenant = Tenant::new();
    let case = open_case(
        &tenant,
        json!({"type": "kyc_review", "title": "late", "slaHours": 1}),
    )
    .await;
    let id = Uuid::parse_str(case["id"].as_str().expect("id")).expect("uuid");
    // The deadline moved into the past, as an hour passing would.
    let pool = database().await;
    sqlx::query("UPDATE cases SET sla_due_at = now() - interval '1 second' WHERE id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .expect("backdated");
    sqlx::query("UPDATE case_timers SET due_at = now() - interval '1 second' WHERE case_id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .expect("backdated");
    let path = format!("/cases/{id}");
    let mut breached = Value::Null;
    for _ in 0..300 {
        let (_, read) = tenant.call(Method::GET, &path, None).await;
        if read["slaBreachedAt"].is_string() {
            breached = read;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(breached["status"], "open", "the breach was never recorded");
    let rows = audited(&tenant, "case.sla.breached").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].0.as_str(), &rows[0].1["type"]),
        ("system", &json!("kyc_review"))
    );
    let (status, decided) = decide(&tenant, &case, "approved").await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(
        audited(&tenant, "case.decided").await[0].1["slaBreached"],
        true
    );
}

#[tokio::test]
async fn a_workflow_opens_a_case_when_its_rule_set_fails() {
    let tenant = Tenant::new();
    let steps = json!([
        {"id": "screen", "type": "rule_set", "outputKey": "screening",
         "rules": [{"type": "field", "path": "score", "failWhen": {"op": "gt", "value": 50}}]},
        {"id": "review", "type": "open_case", "caseType": "manual_review", "priority": "critical",
         "slaHours": 8, "when": {"path": "screening.outcome", "op": "eq", "value": "fail"}}
    ]);
    workflow(&tenant, "screened", steps).await;
    let subject = Uuid::new_v4();
    let mut runs = Vec::new();
    for score in [70, 10] {
        let body =
            json!({"definitionKey": "screened", "subjectId": subject, "context": {"score": score}});
        let (status, run) = tenant
            .call(Method::POST, "/workflow-runs", Some(body))
            .await;
        assert_eq!(status, 202, "{run}");
        runs.push(until(&tenant, &run, &["completed", "failed"]).await);
    }
    assert_eq!(runs[0]["status"], "completed", "{}", runs[0]);
    let review = &runs[0]["context"]["review"];
    assert_eq!(review["opened"], true, "{review}");
    let (status, case) = tenant
        .call(
            Method::GET,
            &format!("/cases/{}", review["caseId"].as_str().expect("caseId")),
            None,
        )
        .await;
    assert_eq!(status, 200, "{case}");
    assert_eq!(
        (
            &case["type"],
            &case["priority"],
            &case["workflowRunId"],
            &case["stepId"],
            &case["subjectId"]
        ),
        (
            &json!("manual_review"),
            &json!("critical"),
            &runs[0]["id"],
            &json!("review"),
            &json!(subject)
        )
    );
    assert_eq!(runs[1]["context"]["review"], json!({"opened": false}));
    let (_, page) = tenant.call(Method::GET, "/cases", None).await;
    assert_eq!(page["total"], 1);

    // SPEC "Metrics": each rule set's decision and the reviewer's are counted, under the
    // workflow's key; the case's time to decision by its type.
    let (status, decided) = decide(&tenant, &case, "approved").await;
    assert_eq!(status, 200, "{decided}");
    let id = tenant.id.to_string();
    let decisions = |outcome, source| {
        [
            ("tenant", id.as_str()),
            ("outcome", outcome),
            ("source", source),
            ("definition_key", "screened"),
        ]
    };
    for (outcome, source) in [
        ("fail", "workflow"),
        ("pass", "workflow"),
        ("approved", "case"),
    ] {
        let labels = decisions(outcome, source);
        let counted = pipeline_metric("svc_decision_count_total", &labels).await;
        assert_eq!(counted, 1.0, "{labels:?}");
    }
    let labels = [("tenant", id.as_str()), ("type", "manual_review")];
    let timed = pipeline_metric("svc_case_time_to_decision_count", &labels).await;
    assert_eq!(timed, 1.0);
}
