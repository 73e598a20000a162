//! Installs, secrets and the test call (SPEC §3.4b, §4.7 rules 1-4, 7).

use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::support::apps::Tenant;
use crate::support::modules::{manifest, module, scoring};
use crate::support::{analyst, database, token_with};

const CONFIG: &str = "http://127.0.0.1:9/vendor";

#[tokio::test]
async fn an_install_needs_its_secrets_before_it_is_enabled() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("kyc", "1.0.0")).await;
    let id = &version["id"];

    let (status, refused) = tenant
        .install(
            "kyc",
            json!({"versionId": id, "config": {"baseUrl": CONFIG}}),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "app_not_configured");
    assert_eq!(
        refused["error"]["details"]["missingSecrets"],
        json!(["API_KEY"])
    );

    let (status, invalid) = tenant
        .install(
            "kyc",
            json!({"versionId": id, "enabled": false, "config": {"baseUrl": 7, "extra": 1}}),
        )
        .await;
    assert_eq!(status, 400, "{invalid}");
    let paths: Vec<&str> = invalid["error"]["details"]["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|i| i["path"].as_str().expect("path"))
        .collect();
    assert!(paths.contains(&"/config/baseUrl"), "{invalid}");

    let (status, disabled) = tenant
        .install(
            "kyc",
            json!({"versionId": id, "enabled": false, "config": {"baseUrl": CONFIG}}),
        )
        .await;
    assert_eq!(status, 200, "{disabled}");
    assert_eq!(disabled["enabled"], false);
    assert_eq!(disabled["missingSecrets"], json!(["API_KEY"]));
    assert_eq!(disabled["approvedHosts"], json!(["127.0.0.1"]));
    assert_eq!(disabled["updateAvailable"], false);

    let (status, stored) = tenant.store_secret("kyc", "API_KEY", "sk-test").await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["missingSecrets"], json!([]));
    let (status, enabled) = tenant
        .install(
            "kyc",
            json!({"versionId": id, "config": {"baseUrl": CONFIG}}),
        )
        .await;
    assert_eq!((status, enabled["enabled"].as_bool()), (200, Some(true)));

    let newer = tenant.published(scoring("kyc", "1.1.0")).await;
    let (_, catalogue) = tenant.call(Method::GET, "/apps", None).await;
    let entry = catalogue["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|e| e["name"] == "kyc")
        .expect("kyc listed");
    assert_eq!(entry["install"]["updateAvailable"], true, "{entry}");
    let (status, upgraded) = tenant
        .install(
            "kyc",
            json!({"versionId": newer["id"], "config": {"baseUrl": CONFIG}}),
        )
        .await;
    assert_eq!((status, upgraded["version"].as_str()), (200, Some("1.1.0")));
    assert_eq!(upgraded["updateAvailable"], false);

    let (status, _) = tenant
        .call(Method::DELETE, "/apps/kyc/secrets/API_KEY", None)
        .await;
    assert_eq!(status, 200);
    let (status, _) = tenant
        .call(Method::DELETE, "/apps/kyc/secrets/API_KEY", None)
        .await;
    assert_eq!(status, 404, "nothing stored any more");
}

#[tokio::test]
async fn a_withdrawn_version_keeps_its_install_but_takes_no_new_one() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("legacy", "1.0.0")).await;
    let body = json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": CONFIG}});
    assert_eq!(tenant.install("legacy", body.clone()).await.0, 200);
    let path = crate::support::apps::version_path(&version);
    assert_eq!(tenant.call(Method::DELETE, &path, None).await.0, 200);
    let (status, kept) = tenant.install("legacy", body.clone()).await;
    assert_eq!(status, 200, "the install already runs it: {kept}");
    assert_eq!(
        tenant
            .call(Method::DELETE, "/apps/legacy/install", None)
            .await
            .0,
        200
    );
    let (status, refused) = tenant.install("legacy", body).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("conflict"))
    );
}

#[tokio::test]
async fn uninstall_waits_for_pending_callbacks_unless_forced() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("async-kyc", "1.0.0")).await;
    tenant.store_secret("async-kyc", "API_KEY", "sk-x").await;
    let body = json!({"versionId": version["id"], "config": {"baseUrl": CONFIG}});
    assert_eq!(tenant.install("async-kyc", body).await.0, 200);
    let pool = database().await;
    let session = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO app_callback_sessions (id, tenant_id, app_name, version_id, action, \
         external_id, status, created_at) VALUES ($1, $2, 'async-kyc', $3, 'check', 'x-1', \
         'pending', now())",
    )
    .bind(session)
    .bind(tenant.id)
    .bind(Uuid::parse_str(version["id"].as_str().expect("id")).expect("uuid"))
    .execute(&pool)
    .await
    .expect("session");

    let (status, refused) = tenant
        .call(Method::DELETE, "/apps/async-kyc/install", None)
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("app_in_use"))
    );
    assert_eq!(refused["error"]["details"]["pendingCallbacks"], 1);

    let (status, gone) = tenant
        .call(Method::DELETE, "/apps/async-kyc/install?force=true", None)
        .await;
    assert_eq!((status, gone["failedCallbacks"].as_u64()), (200, Some(1)));
    let (state, error): (String, Option<String>) =
        sqlx::query_as("SELECT status, error FROM app_callback_sessions WHERE id = $1")
            .bind(session)
            .fetch_one(&pool)
            .await
            .expect("kept");
    assert_eq!(
        (state.as_str(), error.as_deref()),
        ("failed", Some("app_uninstalled"))
    );
    let secrets: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM app_secrets WHERE tenant_id = $1 AND app_name = 'async-kyc'",
    )
    .bind(tenant.id)
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(secrets, 0, "secrets go with the install");
    let (status, _) = tenant
        .call(Method::DELETE, "/apps/async-kyc/install", None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_version_declaring_no_config_schema_takes_only_an_empty_config() {
    // The API checks the config against the manifest as stored at upload (kept per version),
    // where an undeclared `configSchema` is absent: the default still applies.
    let tenant = Tenant::new();
    let mut bare = manifest("bare", "1.0.0");
    bare.as_object_mut().expect("object").remove("configSchema");
    bare["secrets"] = json!([]);
    let version = tenant
        .published(module(&bare, &json!({"status": "ok", "output": {}})))
        .await;
    for _ in 0..2 {
        // The second time from the kept version.
        let (status, invalid) = tenant
            .install(
                "bare",
                json!({"versionId": version["id"], "config": {"baseUrl": CONFIG}}),
            )
            .await;
        assert_eq!(status, 400, "{invalid}");
        assert_eq!(invalid["error"]["code"], "validation_error", "{invalid}");
    }
    let (status, installed) = tenant
        .install("bare", json!({"versionId": version["id"], "config": {}}))
        .await;
    assert_eq!(status, 200, "{installed}");
    assert_eq!(installed["config"], json!({}));
}

#[tokio::test]
async fn an_uploaded_version_is_no_version_to_whoever_cannot_see_it() {
    // The API asks whether the caller sees the version before it takes the version's stored
    // part from its cache: a writer without apps:publish does not see an `uploaded` version
    // (404, as for a version that does not exist), an admin does and the stage refuses it.
    let tenant = Tenant::new();
    let (status, uploaded) = tenant.upload(scoring("draft", "1.0.0")).await;
    assert_eq!(status, 201, "{uploaded}");
    let install =
        json!({"versionId": uploaded["id"], "config": {"baseUrl": CONFIG}, "enabled": false});
    let writer = token_with(tenant.id, &[], &["apps:write", "apps:read"]);
    for _ in 0..2 {
        let (status, refused) = tenant.install("draft", install.clone()).await;
        assert_eq!(status, 409, "{refused}");
        assert_eq!(refused["error"]["code"], "conflict", "{refused}");
        let (status, hidden) = crate::support::apps::call_with(
            &writer,
            Method::PUT,
            "/apps/draft/install",
            Some(install.clone()),
        )
        .await;
        assert_eq!(status, 404, "{hidden}");
        assert_eq!(hidden["error"]["code"], "not_found", "{hidden}");
    }
}

#[tokio::test]
async fn a_secret_must_be_named_by_the_installed_or_a_published_version() {
    let tenant = Tenant::new();
    let mut with_token = manifest("named", "2.0.0");
    with_token["secrets"] = json!([{"name": "API_KEY"}, {"name": "WEBHOOK_TOKEN"}]);
    tenant.published(scoring("named", "1.0.0")).await;
    let (status, _) = tenant.store_secret("named", "WEBHOOK_TOKEN", "t").await;
    assert_eq!(status, 400, "no version names it yet");
    tenant
        .published(module(&with_token, &json!({"status": "ok", "output": {}})))
        .await;
    let (status, stored) = tenant.store_secret("named", "WEBHOOK_TOKEN", "t").await;
    assert_eq!(
        status, 200,
        "a newer version's secret is stored before the upgrade: {stored}"
    );
    let (status, _) = tenant.store_secret("nothing-here", "API_KEY", "t").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_test_call_answers_the_modules_outcome_redacted_without_runs_context() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("tested", "1.0.0")).await;
    let (status, refused) = tenant
        .call(
            Method::POST,
            "/apps/tested/test",
            Some(json!({"action": "check", "input": {"name": "Ada"}})),
        )
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("app_not_installed"))
    );
    let body = json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": CONFIG}});
    assert_eq!(tenant.install("tested", body).await.0, 200);
    tenant.store_secret("tested", "API_KEY", "sk-t").await;

    let call = json!({"action": "check", "input": {"name": "Ada"}});
    let (status, outcome) = tenant
        .call(Method::POST, "/apps/tested/test", Some(call.clone()))
        .await;
    assert_eq!(status, 200, "a disabled install is tested too: {outcome}");
    assert_eq!(outcome["status"], "success");
    assert_eq!(
        outcome["output"],
        json!({"score": 0.25, "hits": [{"list": "PEP"}]})
    );
    assert!(outcome["durationMs"].as_f64().is_some_and(|d| d >= 0.0));
    assert_eq!(outcome["usage"]["httpRequests"], 0);

    let writer = token_with(tenant.id, &[], &["apps:write", "apps:read"]);
    let (status, hidden) =
        crate::support::apps::call_with(&writer, Method::POST, "/apps/tested/test", Some(call))
            .await;
    assert_eq!(status, 200, "{hidden}");
    assert_eq!(
        hidden["output"],
        json!({"score": "[redacted]", "hits": [{"list": "[redacted]"}]})
    );

    let (status, invalid) = tenant
        .call(
            Method::POST,
            "/apps/tested/test",
            Some(json!({"action": "check", "input": {}})),
        )
        .await;
    assert_eq!(status, 400, "{invalid}");
    assert_eq!(invalid["error"]["details"]["issues"][0]["path"], "/input");
    let (status, _) = tenant
        .call(
            Method::POST,
            "/apps/tested/test",
            Some(json!({"action": "nope", "input": {}})),
        )
        .await;
    assert_eq!(status, 400);

    let reader = analyst(tenant.id);
    let (status, _) = crate::support::apps::call_with(
        &reader,
        Method::POST,
        "/apps/tested/test",
        Some(json!({"action": "check", "input": {"name": "Ada"}})),
    )
    .await;
    assert_eq!(status, 403, "testing needs apps:write");

    let pool = database().await;
    let tested: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND action = 'app.tested'",
    )
    .bind(tenant.id)
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(tested, 2, "one audit row per call that ran");
    let invocations: i64 =
        sqlx::query_scalar("SELECT count(*) FROM app_invocations WHERE tenant_id = $1")
            .bind(tenant.id)
            .fetch_one(&pool)
            .await
            .expect("count");
    assert_eq!(invocations, 0, "a test call records no invocation");
}
