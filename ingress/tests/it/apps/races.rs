//! Races decided by the single writer of each app (ARCHITECTURE "Write path" rule 3).

use futures::future::join_all;
use reqwest::Method;
use serde_json::json;

use crate::support::apps::{Tenant, version_path};
use crate::support::database;
use crate::support::modules::scoring;

#[tokio::test]
async fn twenty_concurrent_uploads_of_one_version_make_one_version() {
    let tenant = Tenant::new();
    let module = scoring("raced", "1.0.0");
    let statuses: Vec<u16> = join_all((0..20).map(|_| tenant.upload(module.clone())))
        .await
        .into_iter()
        .map(|(status, _)| status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        19,
        "{statuses:?}"
    );
}

/// Each round: an approval and a withdraw of one version sent together. Exactly one wins and
/// the other is 409, unless the withdraw was accepted only after the approval applied (then it
/// saw `published` and rightly applied too, after it).
#[tokio::test]
async fn approve_racing_withdraw_has_one_winner() {
    let tenant = Tenant::new();
    tenant.set_approvals(true, true).await;
    let reviewer = tenant.other_admin();
    let pool = database().await;
    for round in 0..5 {
        let (_, version) = tenant
            .upload(scoring("contested", &format!("1.0.{round}")))
            .await;
        assert_eq!(tenant.publish(&version).await.0, 202);
        let path = version_path(&version);
        let approve = format!("{path}/approve");
        let ((approved, _), (withdrawn, _)) = tokio::join!(
            reviewer.call(Method::POST, &approve, None),
            tenant.call(Method::DELETE, &path, None)
        );
        let id = uuid::Uuid::parse_str(version["id"].as_str().expect("id")).expect("uuid");
        let transitions: Vec<String> = sqlx::query_scalar(
            "SELECT action FROM audit_events WHERE subject_id = $1 \
             AND action IN ('app.published', 'app.withdrawn') ORDER BY id",
        )
        .bind(id.to_string())
        .fetch_all(&pool)
        .await
        .expect("audit");
        match (approved, withdrawn) {
            (200, 409) => assert_eq!(transitions, vec!["app.published"]),
            (200, 200) => assert_eq!(transitions, vec!["app.published", "app.withdrawn"]),
            other => panic!("round {round}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn concurrent_installs_apply_one_after_another() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("busy", "1.0.0")).await;
    let tenant = &tenant;
    let puts = (0..20).map(|i| {
        let body = json!({
            "versionId": version["id"],
            "enabled": false,
            "config": {"baseUrl": format!("http://127.0.0.1:9/{i}")}
        });
        async move { tenant.install("busy", body).await }
    });
    let answers = join_all(puts).await;
    assert!(
        answers.iter().all(|(status, _)| *status == 200),
        "{answers:?}"
    );
    let (_, catalogue) = tenant.call(Method::GET, "/apps/busy", None).await;
    let final_config = &catalogue["install"]["config"];
    assert!(
        answers
            .iter()
            .any(|(_, install)| &install["config"] == final_config),
        "the final state is one of the requests"
    );
    // Each PUT answered the install as its own command left it: the answers' update times
    // are distinct, and the one applied last is the final state.
    let last = answers
        .iter()
        .max_by_key(|(_, install)| {
            let at = install["updatedAt"].as_str().unwrap_or_default();
            chrono::DateTime::parse_from_rfc3339(at).expect("updatedAt")
        })
        .expect("answers");
    assert_eq!(&last.1["config"], final_config);
    let pool = database().await;
    let actions: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_events WHERE tenant_id = $1 AND subject_type = 'app_install' ORDER BY id",
    )
    .bind(tenant.id)
    .fetch_all(&pool)
    .await
    .expect("audit");
    assert_eq!(actions.len(), 20);
    assert_eq!(actions[0], "app.installed");
    assert!(actions[1..].iter().all(|a| a == "app.configured"));
}
