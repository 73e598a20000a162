//! Versioned definitions (docs/definitions-and-runs.md): versions numbered by the stage,
//! bodies checked at the edge with paths, publishing with its warnings (`unknown_app`,
//! `app_disabled`) and its refusal (an app rule calling an asynchronous action), the app's
//! usage, and tenant isolation.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::apps::Tenant;
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::modules::{manifest, module, scoring};
use crate::support::{analyst, token_with};

fn call_step(app: &str) -> Value {
    json!({"steps": [{"id": "kyc", "type": "call_app", "app": app, "action": "check",
                      "inputMapping": {"name": "subject.name"}, "outputKey": "kyc"}]})
}

async fn create(tenant: &Tenant, kind: &str, key: &str, body: Value) -> (u16, Value) {
    let path = format!("/definitions/{kind}/{key}/versions");
    tenant.call(Method::POST, &path, Some(body)).await
}

async fn publish(tenant: &Tenant, kind: &str, key: &str, version: i64) -> (u16, Value) {
    let path = format!("/definitions/{kind}/{key}/versions/{version}/publish");
    tenant.call(Method::POST, &path, None).await
}

fn codes(warnings: &Value) -> Vec<&str> {
    warnings
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| w["code"].as_str().expect("code"))
        .collect()
}

#[tokio::test]
async fn versions_are_numbered_and_one_is_published_with_its_warnings() {
    let tenant = Tenant::new();
    let (status, first) = create(&tenant, "workflow", "onboarding", call_step("kyc-wf")).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(
        (first["version"].as_i64(), &first["published"]),
        (Some(1), &json!(false))
    );
    let (status, second) = create(&tenant, "workflow", "onboarding", call_step("kyc-wf")).await;
    assert_eq!((status, second["version"].as_i64()), (201, Some(2)));

    // Not installed: published, with a warning naming the step.
    let (status, published) = publish(&tenant, "workflow", "onboarding", 1).await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(codes(&published["warnings"]), ["unknown_app"]);
    assert_eq!(published["warnings"][0]["path"], "/steps/0");
    assert_eq!(published["definition"]["published"], true);
    let (status, again) = publish(&tenant, "workflow", "onboarding", 1).await;
    assert_eq!(
        (status, again["error"]["code"].as_str()),
        (409, Some("conflict"))
    );

    // Installed but disabled: `app_disabled`.
    let version = tenant.published(scoring("kyc-wf", "1.0.0")).await;
    let install = json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": "http://127.0.0.1:9"}});
    assert_eq!(tenant.install("kyc-wf", install).await.0, 200);
    let (status, published) = publish(&tenant, "workflow", "onboarding", 2).await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(codes(&published["warnings"]), ["app_disabled"]);

    let (status, key) = tenant
        .call(Method::GET, "/definitions/workflow/onboarding", None)
        .await;
    assert_eq!(status, 200, "{key}");
    assert_eq!(
        (
            key["latestVersion"].as_i64(),
            key["publishedVersion"].as_i64()
        ),
        (Some(2), Some(2))
    );
    let listed: Vec<(i64, bool)> = key["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| {
            (
                v["version"].as_i64().expect("n"),
                v["published"].as_bool().expect("b"),
            )
        })
        .collect();
    assert_eq!(listed, [(2, true), (1, false)]);

    let (status, usage) = tenant.call(Method::GET, "/apps/kyc-wf/usage", None).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(
        usage["items"],
        json!([{"kind": "workflow", "key": "onboarding", "version": 2, "actions": ["check"]}])
    );
    let (status, one) = tenant
        .call(
            Method::GET,
            "/definitions/workflow/onboarding/versions/1",
            None,
        )
        .await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["body"], call_step("kyc-wf"));
}

#[tokio::test]
async fn an_app_rule_calling_an_asynchronous_action_is_refused() {
    let tenant = Tenant::new();
    let mut async_manifest = manifest("kyc-async", "1.0.0");
    async_manifest["actions"]["check"]["async"] = json!({"callbackTimeoutSeconds": 60});
    async_manifest["handles"] = json!({"webhook": true});
    let answer = json!({"status": "pending", "externalId": "x-1"});
    let version = tenant.published(module(&async_manifest, &answer)).await;
    let install = json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": "http://127.0.0.1:9"}});
    assert_eq!(tenant.install("kyc-async", install).await.0, 200);
    let rule = json!({"type": "app", "app": "kyc-async", "action": "check",
                      "resultPath": "score", "failWhen": {"op": "gt", "value": 0.5}});
    let (status, _) = create(&tenant, "rule_set", "screening", json!({"rules": [rule]})).await;
    assert_eq!(status, 201);
    let (status, refused) = publish(&tenant, "rule_set", "screening", 1).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "validation_error");
    assert_eq!(refused["error"]["details"]["issues"][0]["path"], "/rules/0");
    assert_eq!(
        refused["error"]["details"]["issues"][0]["code"],
        "async_action_in_rule"
    );
    let (_, key) = tenant
        .call(Method::GET, "/definitions/rule_set/screening", None)
        .await;
    assert_eq!(
        key["publishedVersion"],
        Value::Null,
        "nothing was published"
    );
    // The same action from a workflow step is fine.
    let (_, _) = create(&tenant, "workflow", "async-flow", call_step("kyc-async")).await;
    let (status, published) = publish(&tenant, "workflow", "async-flow", 1).await;
    assert_eq!(status, 200, "{published}");
}

#[tokio::test]
async fn bad_bodies_and_paths_are_400_with_where() {
    let tenant = Tenant::new();
    let (status, typo) = create(
        &tenant,
        "workflow",
        "w",
        json!({"steps": [{"id": "a", "type": "call_app", "app": "x", "action": "y", "imput": {}}]}),
    )
    .await;
    assert_eq!(status, 400, "{typo}");
    assert_eq!(typo["error"]["details"]["issues"][0]["path"], "/steps/0");
    let duplicate = json!({"steps": [
        {"id": "a", "type": "call_app", "app": "x", "action": "y"},
        {"id": "a", "type": "call_app", "app": "x", "action": "y"}]});
    let (status, body) = create(&tenant, "workflow", "w", duplicate).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["details"]["issues"][0]["path"], "/steps/1/id");
    let (status, body) = create(&tenant, "pipeline", "w", json!({})).await;
    assert_eq!(
        (
            status,
            body["error"]["details"]["issues"][0]["path"].as_str()
        ),
        (400, Some("kind"))
    );
    let (status, body) = create(&tenant, "workflow", "Not_A_Key", call_step("x")).await;
    assert_eq!(
        (
            status,
            body["error"]["details"]["issues"][0]["path"].as_str()
        ),
        (400, Some("key"))
    );
    let (status, _) = publish(&tenant, "workflow", "never", 1).await;
    assert_eq!(status, 404);
    let (status, _) = tenant
        .call(Method::GET, "/definitions/workflow/never/versions/0", None)
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn definitions_need_their_permissions_and_stay_in_their_tenant() {
    let tenant = Tenant::new();
    assert_eq!(
        create(
            &tenant,
            "rule",
            "pep",
            json!({"type": "field", "path": "subject.pep", "failWhen": {"op": "eq", "value": true}})
        )
        .await
        .0,
        201
    );
    let reader = token_with(tenant.id, &[], &["definitions:read"]);
    let (status, _) =
        crate::support::apps::call_with(&reader, Method::GET, "/definitions/rule/pep", None).await;
    assert_eq!(status, 200);
    let (status, body) = crate::support::apps::call_with(
        &analyst(tenant.id),
        Method::POST,
        "/definitions/rule/pep/versions/1/publish",
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("forbidden"))
    );
    let other = Tenant::new();
    assert_foreign_is_absent(
        &other.token,
        "/definitions/rule/pep",
        "/definitions/rule/nothing-here",
    )
    .await;
    assert_foreign_is_absent(
        &other.token,
        "/definitions/rule/pep/versions/1",
        "/definitions/rule/nothing-here/versions/1",
    )
    .await;
    let (status, _) = publish(&other, "rule", "pep", 1).await;
    assert_eq!(status, 404, "another tenant cannot publish it");
}

/// A member sent as `null` is refused where it stands, one issue each (400 `validation_error`):
/// the document types none of them with `null`, so the body is not read as if they were left
/// out (schemathesis: `outputKey: null` was taken, schema-violating data accepted).
#[tokio::test]
async fn a_member_sent_as_null_is_refused() {
    let tenant = Tenant::new();
    let body = json!({"steps": [
        {"id": "review", "type": "open_case", "caseType": "manual", "priority": "low",
         "slaHours": 4, "outputKey": null, "title": null, "when": null}
    ]});
    let (status, refused) = create(&tenant, "workflow", "nulls", body).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "validation_error", "{refused}");
    let paths: Vec<&str> = refused["error"]["details"]["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|issue| issue["path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        paths,
        ["/steps/0/outputKey", "/steps/0/title", "/steps/0/when"]
    );
    let (status, read) = tenant
        .call(Method::GET, "/definitions/workflow/nulls", None)
        .await;
    assert_eq!(status, 404, "nothing was created: {read}");
}
