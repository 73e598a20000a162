//! Rule evaluations and backtests (docs/definitions-and-runs.md "Backtests"): a run's rule-set step
//! records what it evaluated; a backtest replays a rule, rule set or workflow version over recorded
//! evaluations built by hand, where every number of the summary is known; app rules come back
//! `skipped` and no app is called; limits; isolation; the approval detail shows the latest
//! completed backtest. (Killing a worker mid-backtest: the pipeline's `backtests` tests.)

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::runs::{until, workflow};
use crate::support::apps::{Tenant, call_with};
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::{admin, analyst, database, token_with};

/// Creates version `version` of `kind` `key` with `body`, publishing it when `publish`.
async fn version(tenant: &Tenant, (kind, key): (&str, &str), body: Value, publish: bool) -> i64 {
    let path = format!("/definitions/{kind}/{key}/versions");
    let (status, created) = tenant.call(Method::POST, &path, Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let version = created["version"].as_i64().expect("version");
    if publish {
        let path = format!("/definitions/{kind}/{key}/versions/{version}/publish");
        let (status, published) = tenant.call(Method::POST, &path, None).await;
        assert_eq!(status, 200, "{published}");
    }
    version
}

fn field(path: &str, op: &str, value: Value) -> Value {
    json!({"type": "field", "path": path, "failWhen": {"op": op, "value": value}})
}

/// Records, by hand, one evaluation per score in `scores` of rule set `checks` (rule `score`
/// at `gt 50` and an inline rule `flag` that fails when `flag` is true), each of its own run of
/// workflow `onboarding`, one a minute back from now.
async fn record(tenant: &Tenant, scores: &[i64], flagged: &[i64]) {
    let pool = database().await;
    for (minute, score) in scores.iter().enumerate() {
        let score_fails = *score > 50;
        let flag = flagged.contains(score);
        let outcome = |fails: bool| if fails { "fail" } else { "pass" };
        sqlx::query(
            "INSERT INTO rule_evaluations (id, tenant_id, subject_id, run_id, workflow_key, \
             workflow_version, step_id, rule_set_key, rule_set_version, decision, rules, \
             rule_keys, data, duration_ms, evaluated_at) \
             VALUES (gen_random_uuid(), $1, gen_random_uuid(), gen_random_uuid(), 'onboarding', \
                     1, 'checks', 'checks', 1, $2, $3, ARRAY['score'], $4, 0.2, \
                     now() - make_interval(mins => $5))",
        )
        .bind(tenant.id)
        .bind(outcome(score_fails || flag))
        .bind(json!([
            {"id": "score", "key": "score", "version": 1, "type": "field",
             "outcome": outcome(score_fails)},
            {"id": "flag", "type": "field", "outcome": outcome(flag)}
        ]))
        .bind(json!({"subject": {"name": "Ada"}, "score": score, "flag": flag}))
        .bind(minute as i32)
        .execute(&pool)
        .await
        .expect("an evaluation");
    }
}

/// Starts a backtest with `body` and polls it until it is finished.
async fn backtest(tenant: &Tenant, body: Value) -> Value {
    let (status, queued) = tenant.call(Method::POST, "/backtests", Some(body)).await;
    assert_eq!(status, 202, "{queued}");
    assert!(
        ["queued", "running", "completed"].contains(&queued["status"].as_str().unwrap_or("")),
        "{queued}"
    );
    let path = format!("/backtests/{}", queued["id"].as_str().expect("id"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let (status, found) = tenant.call(Method::GET, &path, None).await;
        assert_eq!(status, 200, "{found}");
        if ["completed", "failed"].contains(&found["status"].as_str().unwrap_or("")) {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "{found}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Rule `score` published at `gt 50` (version 1), version 2 at `gt 40`.
async fn score_rule(tenant: &Tenant) {
    version(
        tenant,
        ("rule", "score"),
        field("score", "gt", json!(50)),
        true,
    )
    .await;
    version(
        tenant,
        ("rule", "score"),
        field("score", "gt", json!(40)),
        false,
    )
    .await;
}

/// A row of `rule_evaluations`, as far as a test reads it.
#[derive(Debug, sqlx::FromRow)]
struct RecordedEvaluation {
    workflow_key: String,
    rule_set_key: Option<String>,
    rule_set_version: Option<i32>,
    decision: String,
    rules: Value,
    rule_keys: Vec<String>,
    data: Value,
    step_id: String,
}

#[tokio::test]
async fn a_rule_set_step_records_what_it_evaluated_once() {
    let tenant = Tenant::new();
    score_rule(&tenant).await;
    let set = json!({"rules": [{"rule": "score"}, {"id": "flag", "type": "field", "path": "flag",
                                "failWhen": {"op": "eq", "value": true}}]});
    version(&tenant, ("rule_set", "checks"), set, true).await;
    let steps = json!([{"id": "checks", "type": "rule_set", "ruleSet": "checks",
                        "outputKey": "verdict"}]);
    workflow(&tenant, "onboarding", steps).await;
    let context = json!({"score": 45, "flag": true});
    let body = json!({"definitionKey": "onboarding", "context": context});
    let (status, run) = tenant
        .call(Method::POST, "/workflow-runs", Some(body))
        .await;
    assert_eq!(status, 202, "{run}");
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(run["status"], "completed", "{run}");

    let rows: Vec<RecordedEvaluation> = sqlx::query_as(
        "SELECT workflow_key, rule_set_key, rule_set_version, decision, rules, rule_keys, \
             data, step_id FROM rule_evaluations WHERE tenant_id = $1 AND run_id = $2",
    )
    .bind(tenant.id)
    .bind(Uuid::try_parse(run["id"].as_str().expect("id")).expect("uuid"))
    .fetch_all(&database().await)
    .await
    .expect("evaluations");
    assert_eq!(rows.len(), 1, "one evaluation per step: {rows:?}");
    let row = &rows[0];
    assert_eq!(
        (
            row.workflow_key.as_str(),
            row.rule_set_key.as_deref(),
            row.rule_set_version,
            row.decision.as_str(),
            row.step_id.as_str()
        ),
        ("onboarding", Some("checks"), Some(1), "fail", "checks")
    );
    assert_eq!(
        row.rules,
        json!([
            {"id": "score", "key": "score", "version": 1, "type": "field", "outcome": "pass"},
            {"id": "flag", "type": "field", "outcome": "fail"}
        ])
    );
    assert_eq!(row.rule_keys, ["score"]);
    assert_eq!(row.data, context, "the data the rules saw");
}

#[tokio::test]
async fn a_rule_changed_from_gt_50_to_gt_40_changes_exactly_the_evaluations_between() {
    let tenant = Tenant::new();
    score_rule(&tenant).await;
    let scores: Vec<i64> = (0..100).collect();
    // Two evaluations fail on the other rule: one the change moves (45), one it does not (10).
    record(&tenant, &scores, &[45, 10]).await;
    let done = backtest(
        &tenant,
        json!({"ruleKey": "score", "ruleVersion": 2, "sample": {"lastDays": 1, "limit": 5000}}),
    )
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        (done["ruleKey"].as_str(), done["ruleVersion"].as_i64()),
        (Some("score"), Some(2))
    );
    assert_eq!(done["progress"], json!({"done": 100, "total": 100}));
    assert_eq!(
        done["engineWorkflowId"],
        format!("backtest-{}/1", done["id"].as_str().expect("id"))
    );
    let summary = &done["summary"];
    assert_eq!(summary["evaluated"], 100);
    assert_eq!(
        summary["outcomes"],
        json!({"pass": 41, "fail": 59, "error": 0, "skipped": 0})
    );
    // 41..=50 fail now; 45 failed already on the other rule.
    assert_eq!(summary["wouldChange"], json!({"pass->fail": 9}));
    assert_eq!(
        summary["overlap"],
        json!({"both": 49, "versionOnly": 10, "neither": 41})
    );
    assert_eq!(summary["decisions"], json!({"fail": 60, "pass": 40}));
    let failures = summary["sampleFailures"].as_array().expect("failures");
    assert_eq!(failures.len(), 20, "the newest twenty hits");
    assert_eq!(failures[0]["reasons"], json!(["score: score gt 40"]));
    let days: i64 = summary["daily"]
        .as_array()
        .expect("daily")
        .iter()
        .map(|day| day["evaluated"].as_i64().expect("evaluated"))
        .sum();
    let hits: i64 = summary["daily"]
        .as_array()
        .expect("daily")
        .iter()
        .map(|day| day["versionHits"].as_i64().expect("hits"))
        .sum();
    assert_eq!((days, hits), (100, 59));

    // `limit` takes the newest: the 30 newest are scores 0 to 29, none of them changed.
    let newest = backtest(
        &tenant,
        json!({"ruleKey": "score", "ruleVersion": 2, "sample": {"limit": 30}}),
    )
    .await;
    assert_eq!(newest["summary"]["evaluated"], 30);
    assert_eq!(newest["summary"]["wouldChange"], json!({}));
}

#[tokio::test]
async fn app_rules_are_skipped_and_no_app_is_called() {
    let tenant = Tenant::new();
    score_rule(&tenant).await;
    record(&tenant, &[10, 60, 45], &[]).await;
    // A rule set version and a workflow version that name an app nobody installed: a call
    // would fail the replay's rules with `error`, and record an invocation.
    let app_rule = json!({"type": "app", "id": "pep", "app": "screening", "action": "check",
                          "resultPath": "hit", "failWhen": {"op": "eq", "value": true}});
    let set = json!({"rules": [{"rule": "score"}, app_rule]});
    let set_version = version(&tenant, ("rule_set", "checks"), set, false).await;
    let set_done = backtest(
        &tenant,
        json!({"ruleSetKey": "checks", "ruleSetVersion": set_version}),
    )
    .await;
    assert_eq!(set_done["status"], "completed", "{set_done}");
    assert_eq!(
        set_done["summary"]["outcomes"],
        json!({"pass": 2, "fail": 1, "error": 0, "skipped": 3})
    );
    assert_eq!(
        set_done["summary"]["decisions"],
        json!({"fail": 1, "pass": 2})
    );

    let steps = json!([
        {"id": "kyc", "type": "call_app", "app": "screening", "action": "check", "outputKey": "kyc"},
        {"id": "checks", "type": "rule_set", "outputKey": "verdict", "rules": [
            app_rule, field("score", "gt", json!(40)),
            {"id": "seen", "type": "field", "path": "kyc", "failWhen": {"op": "exists"}}
        ]},
        {"id": "after", "type": "rule_set", "rules": [
            {"id": "chained", "type": "field", "path": "verdict.outcome",
             "failWhen": {"op": "eq", "value": "fail"}}
        ]}
    ]);
    let body = json!({"steps": steps});
    let flow = version(&tenant, ("workflow", "onboarding"), body, false).await;
    let dry = backtest(
        &tenant,
        json!({"workflowKey": "onboarding", "workflowVersion": flow}),
    )
    .await;
    assert_eq!(dry["status"], "completed", "{dry}");
    let summary = &dry["summary"];
    assert_eq!(summary["evaluated"], 3, "three runs");
    // Per run: the app rule skipped, `score gt 40`, `kyc` never set (no call), and the next
    // step reading the first's output: 60 and 45 fail twice, 10 passes.
    assert_eq!(
        summary["outcomes"],
        json!({"pass": 2 + 3, "fail": 4, "error": 0, "skipped": 3})
    );
    assert_eq!(
        summary["wouldChange"],
        json!({"pass->fail": 1}),
        "45 now fails"
    );

    let calls: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM app_invocations WHERE tenant_id = $1) \
              + (SELECT count(*) FROM workflow_run_calls c JOIN workflow_runs r ON r.id = c.run_id \
                 WHERE r.tenant_id = $1)",
    )
    .bind(tenant.id)
    .fetch_one(&database().await)
    .await
    .expect("calls");
    assert_eq!(calls, 0, "a backtest calls no app");
}

#[tokio::test]
async fn a_backtest_needs_one_existing_version_and_a_sample_within_limits() {
    let tenant = Tenant::new();
    score_rule(&tenant).await;
    let refused = |body: Value| {
        let tenant = &tenant;
        async move {
            let (status, answer) = tenant.call(Method::POST, "/backtests", Some(body)).await;
            assert_eq!(status, 400, "{answer}");
            assert_eq!(answer["error"]["code"], "validation_error");
            answer["error"]["details"]["issues"]
                .as_array()
                .expect("issues")
                .iter()
                .map(|issue| issue["path"].as_str().expect("path").to_owned())
                .collect::<Vec<_>>()
        }
    };
    let rule = |sample: Value| json!({"ruleKey": "score", "ruleVersion": 2, "sample": sample});
    assert_eq!(
        refused(rule(json!({"lastDays": 0}))).await,
        ["/sample/lastDays"]
    );
    assert_eq!(
        refused(rule(json!({"lastDays": 181}))).await,
        ["/sample/lastDays"]
    );
    assert_eq!(refused(rule(json!({"limit": 0}))).await, ["/sample/limit"]);
    assert_eq!(
        refused(rule(json!({"limit": 5001, "lastDays": -1}))).await,
        ["/sample/lastDays", "/sample/limit"]
    );
    assert_eq!(refused(json!({})).await, [""]);
    assert_eq!(refused(json!({"ruleKey": "score"})).await, ["/ruleVersion"]);
    assert_eq!(
        refused(json!({"ruleVersion": 1})).await,
        ["/ruleVersion", ""]
    );
    assert_eq!(
        refused(
            json!({"ruleKey": "score", "ruleVersion": 1, "workflowKey": "w",
                       "workflowVersion": 1})
        )
        .await,
        ["/workflowKey"]
    );
    assert_eq!(
        refused(json!({"ruleKey": "Not A Key", "ruleVersion": 1})).await,
        ["/ruleKey"]
    );
    let (status, answer) = tenant
        .call(
            Method::POST,
            "/backtests",
            Some(json!({"ruleKey": "score", "ruleVersion": 3})),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{answer}"
    );
    let (status, answer) = tenant
        .call(Method::GET, "/backtests?status=done&version=0", None)
        .await;
    assert_eq!(status, 400, "{answer}");
}

#[tokio::test]
async fn backtests_belong_to_their_tenant_and_analysts_run_them() {
    let tenant = Tenant::new();
    score_rule(&tenant).await;
    record(&tenant, &[10, 60], &[]).await;
    // Analysts run backtests too.
    let worker = Tenant {
        id: tenant.id,
        token: analyst(tenant.id),
    };
    let done = backtest(&worker, json!({"ruleKey": "score", "ruleVersion": 2})).await;
    assert_eq!(done["status"], "completed", "{done}");
    let id = done["id"].as_str().expect("id");
    let (status, page) = tenant
        .call(
            Method::GET,
            "/backtests?ruleKey=score&version=2&status=completed",
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        (page["total"].as_i64(), page["items"][0]["id"].as_str()),
        (Some(1), Some(id))
    );
    let (_, none) = tenant
        .call(Method::GET, "/backtests?workflowKey=score", None)
        .await;
    assert_eq!(none["total"], 0);

    let stranger = admin(Uuid::new_v4());
    assert_foreign_is_absent(
        &stranger,
        &format!("/backtests/{id}"),
        &format!("/backtests/{}", Uuid::now_v7()),
    )
    .await;
    let (_, theirs) = call_with(&stranger, Method::GET, "/backtests", None).await;
    assert_eq!(theirs["total"], 0);
    // Another tenant's version is absent too.
    let (status, _) = call_with(
        &stranger,
        Method::POST,
        "/backtests",
        Some(json!({"ruleKey": "score", "ruleVersion": 2})),
    )
    .await;
    assert_eq!(status, 404);
    // Without the permission: 403.
    let reader = token_with(tenant.id, &[], &["definitions:read"]);
    let (status, _) = call_with(&reader, Method::GET, "/backtests", None).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn the_approval_detail_shows_the_versions_latest_completed_backtest() {
    let tenant = Tenant::new();
    score_rule(&tenant).await;
    record(&tenant, &[45], &[]).await;
    let (status, _) = tenant
        .call(
            Method::PUT,
            "/approval-settings",
            Some(json!({"required": true})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, requested) = tenant
        .call(
            Method::POST,
            "/definitions/rule/score/versions/2/publish",
            None,
        )
        .await;
    assert_eq!(status, 202, "{requested}");
    let path = format!(
        "/approvals/{}",
        requested["approval"]["id"].as_str().expect("id")
    );
    let (_, before) = tenant.call(Method::GET, &path, None).await;
    assert_eq!(before["backtest"], Value::Null);

    backtest(
        &tenant,
        json!({"ruleKey": "score", "ruleVersion": 2, "sample": {"limit": 5}}),
    )
    .await;
    let latest = backtest(&tenant, json!({"ruleKey": "score", "ruleVersion": 2})).await;
    // Another version's backtest is not this one's.
    backtest(&tenant, json!({"ruleKey": "score", "ruleVersion": 1})).await;
    let (status, detail) = tenant.call(Method::GET, &path, None).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["backtest"], latest);
    assert_eq!(
        detail["backtest"]["summary"]["wouldChange"],
        json!({"pass->fail": 1})
    );
}
