//! A deployment switching from 0.1 (docs/operations.md "Upgrading from 0.1"): the pipelines run
//! this build while ingresses of 0.1 still write commands where 0.1 wrote them. A webhook
//! endpoint's command on `endpoints.commands` and a tenant's settings on `apps.commands` apply
//! once, as from their own topics, and their outcomes are stored in the reply format the 0.1
//! ingress waiting on them reads.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use topics::apps::AppsCommand;
use topics::settings::SetApprovalSettings;
use topics::webhook_endpoints::{Delete, WebhookEndpointsCommand};
use topics::{Cluster, Envelope, Message, Principal, Producer};
use uuid::Uuid;

use crate::support::apps::Tenant;
use crate::support::{database, stack};
use crate::webhook_endpoints::endpoint;

/// Sends `body` on `topic` as an ingress of 0.1 would; answers the command's id.
async fn sent_by_0_1(topic: &str, tenant: Uuid, body: impl Message) -> Uuid {
    let producer =
        Producer::new(&Cluster::read(&mut stack().env()), "upgrade-test").expect("producer");
    let envelope = Envelope::new(
        Some(tenant),
        Principal::system("test"),
        "req-upgrade-test",
        None,
        body,
    );
    let id = envelope.id.to_string();
    let payload = envelope.encode().expect("encoded");
    producer
        .send_raw(topic, &envelope.key(), &payload, &[("id", id.as_bytes())])
        .await
        .expect("produced");
    envelope.id
}

/// The outcome the inbox holds for `command`, once a stage applied it.
async fn stored_outcome(command: Uuid) -> Value {
    let pool = database().await;
    for _ in 0..120 {
        let row: Option<(Option<Value>,)> =
            sqlx::query_as("SELECT outcome FROM inbox WHERE command_id = $1")
                .bind(command)
                .fetch_optional(&pool)
                .await
                .expect("the inbox");
        if let Some((Some(outcome),)) = row {
            return outcome;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("command {command} was not applied within a minute");
}

#[tokio::test]
async fn an_endpoint_deleted_by_an_ingress_of_0_1_is_deleted() {
    let tenant = Tenant::new();
    let created = endpoint(
        &tenant,
        "https://hooks.example.com/upgrade",
        json!({"eventTypes": ["app.circuit.opened"]}),
    )
    .await;
    let id = created["id"].as_str().expect("an id");
    let delete = WebhookEndpointsCommand::from(Delete {
        endpoint_id: id.parse().expect("a uuid"),
    });
    let command = sent_by_0_1("endpoints.commands", tenant.id, delete).await;

    let outcome = stored_outcome(command).await;
    assert_eq!(outcome["result"], "done", "{outcome}");
    assert_eq!(
        outcome["v"],
        WebhookEndpointsCommand::REPLY_VERSION,
        "{outcome}"
    );
    let (status, _) = tenant
        .call(Method::GET, &format!("/webhook-endpoints/{id}"), None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn settings_set_by_an_ingress_of_0_1_on_the_apps_topic_are_set() {
    let tenant = Tenant::new();
    let settings = AppsCommand::from(SetApprovalSettings {
        required: true,
        required_for: Some(vec!["rule".into()]),
        four_eyes: false,
    });
    let command = sent_by_0_1("apps.commands", tenant.id, settings).await;

    let outcome = stored_outcome(command).await;
    assert_eq!(outcome["result"], "done", "{outcome}");
    // The format of the apps topic's replies, which the 0.1 ingress reads.
    assert_eq!(outcome["v"], AppsCommand::REPLY_VERSION, "{outcome}");
    let (status, read) = tenant.call(Method::GET, "/approval-settings", None).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(
        (&read["required"], &read["requiredFor"], &read["fourEyes"]),
        (&json!(true), &json!(["rule"]), &json!(false)),
        "{read}"
    );
}
