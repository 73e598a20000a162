//! What a route answers when its command can never be applied: the stage dead-letters it and
//! replies so, and the route answers that reply at once (500 `internal`, the reason kept out of
//! the answer) instead of waiting out `COMMAND_WAIT_SECONDS` and answering 504. And a body the
//! database could never store is refused before any command is produced.

use serde_json::json;
use uuid::Uuid;

use crate::support::apps::Tenant;
use crate::support::database;
use crate::support::modules::scoring;

const CONFIG: &str = "http://127.0.0.1:9/vendor";

#[tokio::test]
async fn a_command_the_stage_cannot_apply_is_answered_at_once_as_dead_lettered() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("kyc", "1.0.0")).await;
    let body = json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": CONFIG}});
    let (status, first) = tenant.install("kyc", body.clone()).await;
    assert_eq!(status, 200, "{first}");

    // A fault of this tenant's rows only: every write of its install fails with an error the
    // stage classes as the command's own (raise_exception), so it is dead-lettered at once.
    let pool = database().await;
    let fault = format!("test_refuse_{}", Uuid::new_v4().simple());
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "CREATE FUNCTION {fault}() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN RAISE EXCEPTION 'refused by {fault}'; END $$; \
         CREATE TRIGGER {fault} BEFORE UPDATE ON app_installs FOR EACH ROW \
         WHEN (NEW.tenant_id = '{}') EXECUTE FUNCTION {fault}();",
        tenant.id
    )))
    .execute(&pool)
    .await
    .expect("fault installed");

    let (status, answer) = tenant.install("kyc", body).await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP TRIGGER {fault} ON app_installs; DROP FUNCTION {fault}();"
    )))
    .execute(&pool)
    .await
    .expect("fault removed");

    assert_eq!(status, 500, "{answer}");
    assert_eq!(answer["error"]["code"], "internal");
    assert!(!answer.to_string().contains(&fault), "{answer}");
    let reasons: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT dead_letter_reason FROM inbox WHERE tenant_id = $1 AND stage = 'installs' \
         ORDER BY processed_at",
    )
    .bind(tenant.id)
    .fetch_all(&pool)
    .await
    .expect("inbox");
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert_eq!(reasons[0], None, "the first install applied");
    assert!(
        reasons[1].as_deref().is_some_and(|r| r.contains(&fault)),
        "{reasons:?}"
    );
    // The install is as the first command left it.
    let (_, apps) = tenant.call(reqwest::Method::GET, "/apps/kyc", None).await;
    assert_eq!(apps["install"]["enabled"], false, "{apps}");
}

#[tokio::test]
async fn a_nul_character_in_a_body_is_refused_with_its_path() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("kyc", "1.0.0")).await;
    let (status, refused) = tenant
        .install(
            "kyc",
            json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": "http://a\u{0}b"}}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "validation_error");
    assert_eq!(
        refused["error"]["details"]["issues"][0]["path"],
        "/config/baseUrl"
    );
    let (_, app) = tenant.call(reqwest::Method::GET, "/apps/kyc", None).await;
    assert!(app["install"].is_null(), "nothing was installed: {app}");
}
