//! `GET /activity` (SPEC §2.2, §4.1): case events for every staff token, the definitions'
//! publish and approval events with `definitions:read`, newest first, exactly the item fields,
//! the actor named from the user directory.

use reqwest::Method;
use serde_json::{Value, json};

use crate::cases::{decide, open_case};
use crate::support::apps::{Tenant, call_with};
use crate::support::{analyst, applicant, database};

fn actions(feed: &Value) -> Vec<&str> {
    feed["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["action"].as_str().expect("action"))
        .collect()
}

#[tokio::test]
async fn the_feed_shows_case_events_to_all_and_definition_events_to_definition_readers() {
    let tenant = Tenant::new();
    let path = "/definitions/rule/limit/versions";
    let rule = json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": 5}});
    assert_eq!(tenant.call(Method::POST, path, Some(rule)).await.0, 201);
    let published = tenant
        .call(
            Method::POST,
            "/definitions/rule/limit/versions/1/publish",
            None,
        )
        .await;
    assert_eq!(published.0, 200, "{}", published.1);
    let case = open_case(
        &tenant,
        json!({"type": "kyc_review", "title": "Jane Doe", "priority": "low"}),
    )
    .await;
    assert_eq!(decide(&tenant, &case, "no_action").await.0, 200);

    let (status, feed) = tenant.call(Method::GET, "/activity", None).await;
    assert_eq!(status, 200, "{feed}");
    assert_eq!(actions(&feed), ["case.decided", "rule.published"]);
    let item = &feed["items"][0];
    let mut fields: Vec<&String> = item.as_object().expect("item").keys().collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "action",
            "actor",
            "href",
            "id",
            "occurredAt",
            "text",
            "tone"
        ]
    );
    assert_eq!(
        (&item["href"], &item["tone"], &item["actor"]["type"]),
        (&Value::Null, &json!("neutral"), &json!("human"))
    );
    assert!(
        !feed.to_string().contains("Jane"),
        "a case's title is not the feed's: {feed}"
    );

    // The sentence names the actor as the directory knows them.
    let actor = item["actor"]["id"].as_str().expect("actor id").to_owned();
    let pool = database().await;
    for _ in 0..100 {
        let updated = sqlx::query(
            "UPDATE tenant_users SET name = 'Grace Hopper' WHERE tenant_id = $1 AND subject = $2",
        )
        .bind(tenant.id)
        .bind(&actor)
        .execute(&pool)
        .await
        .expect("directory");
        if updated.rows_affected() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (_, feed) = tenant.call(Method::GET, "/activity?limit=1", None).await;
    assert_eq!(feed["items"].as_array().expect("items").len(), 1);
    assert_eq!(
        feed["items"][0]["text"],
        "Grace Hopper decided a kyc_review case: no action."
    );
    assert_eq!(feed["items"][0]["actor"]["name"], "Grace Hopper");

    // Without definitions:read, only the case events.
    let (status, feed) = call_with(&analyst(tenant.id), Method::GET, "/activity", None).await;
    assert_eq!(status, 200, "{feed}");
    assert_eq!(actions(&feed), ["case.decided"]);

    for bad in ["?limit=51", "?limit=0", "?since=yesterday"] {
        let (status, refused) = tenant
            .call(Method::GET, &format!("/activity{bad}"), None)
            .await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (400, &json!("validation_error")),
            "{bad}"
        );
    }
    let (status, _) = call_with(
        &applicant(tenant.id, uuid::Uuid::new_v4()),
        Method::GET,
        "/activity",
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, empty) = Tenant::new().call(Method::GET, "/activity", None).await;
    assert_eq!((status, &empty), (200, &json!({"items": []})));
}

#[tokio::test]
async fn the_feed_defaults_to_five_newest_and_marks_what_went_wrong() {
    let tenant = Tenant::new();
    tenant.set_approvals(true, true).await;
    let approver = tenant.other_admin();
    let rule = json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": 5}});
    for key in ["a", "b", "c"] {
        let path = format!("/definitions/rule/{key}/versions");
        assert_eq!(
            tenant.call(Method::POST, &path, Some(rule.clone())).await.0,
            201
        );
        let path = format!("/definitions/rule/{key}/versions/1/publish");
        let (status, requested) = tenant.call(Method::POST, &path, None).await;
        assert_eq!(status, 202, "{requested}");
        let decision = if key == "b" { "reject" } else { "approve" };
        let path = format!(
            "/approvals/{}/{decision}",
            requested["approval"]["id"].as_str().expect("id")
        );
        assert_eq!(approver.call(Method::POST, &path, None).await.0, 200);
    }
    let (_, feed) = tenant.call(Method::GET, "/activity", None).await;
    assert_eq!(
        actions(&feed),
        [
            "rule.published",
            "definition.approval.approved",
            "definition.approval.requested",
            "definition.approval.rejected",
            "definition.approval.requested"
        ]
    );
    let rejected = &feed["items"][3];
    assert_eq!(rejected["tone"], "alert");
    assert!(
        rejected["text"]
            .as_str()
            .expect("text")
            .ends_with("rejected publishing rule b version 1."),
        "{rejected}"
    );
    let (_, all) = tenant.call(Method::GET, "/activity?limit=50", None).await;
    assert_eq!(all["items"].as_array().expect("items").len(), 8);
}
