//! What a route answers when its command can never be applied: the stage dead-letters it and
//! replies so, and the route answers that reply at once (500 `internal`, the reason kept out of
//! the answer) instead of waiting out `COMMAND_WAIT_SECONDS` and answering 504. And a body the
//! database could never store is refused before any command is produced.

use serde_json::json;

use crate::support::apps::Tenant;
use crate::support::database;
use crate::support::modules::scoring;

const CONFIG: &str = "http://127.0.0.1:9/vendor";

#[tokio::test]
async fn a_command_the_stage_cannot_apply_is_answered_at_once_as_dead_lettered() {
    let pool = database().await;
    install_fault(&pool).await;
    let tenant = Tenant::new();
    let version = tenant.published(scoring(FAULTY_APP, "1.0.0")).await;
    let body = json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": CONFIG}});
    let (status, first) = tenant.install(FAULTY_APP, body.clone()).await;
    assert_eq!(status, 200, "{first}");

    let (status, answer) = tenant.install(FAULTY_APP, body).await;
    assert_eq!(status, 500, "{answer}");
    assert_eq!(answer["error"]["code"], "internal");
    assert!(!answer.to_string().contains(FAULT), "{answer}");
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
        reasons[1].as_deref().is_some_and(|r| r.contains(FAULT)),
        "{reasons:?}"
    );
    // The install is as the first command left it.
    let (_, app) = tenant
        .call(reqwest::Method::GET, &format!("/apps/{FAULTY_APP}"), None)
        .await;
    assert_eq!(app["install"]["enabled"], false, "{app}");
}

/// The app whose install updates fail, for every tenant.
const FAULTY_APP: &str = "fault-injected-kyc";
const FAULT: &str = "test_fault_injected_install";

/// A fault in the database: every update of an install of [`FAULTY_APP`] fails with an error
/// the stage classes as the command's own (raise_exception), so it is dead-lettered at once.
/// Created once per database, so no test takes a lock on `app_installs` while others run; no
/// other app name matches it.
async fn install_fault(pool: &sqlx::PgPool) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "SELECT pg_advisory_xact_lock(7245002); \
         CREATE OR REPLACE FUNCTION {FAULT}() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN RAISE EXCEPTION 'refused by {FAULT}'; END $$; \
         DO $$ BEGIN \
           IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '{FAULT}') THEN \
             CREATE TRIGGER {FAULT} BEFORE UPDATE ON app_installs FOR EACH ROW \
             WHEN (NEW.app_name = '{FAULTY_APP}') EXECUTE FUNCTION {FAULT}(); \
           END IF; \
         END $$;"
    )))
    .execute(pool)
    .await
    .expect("fault installed");
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
