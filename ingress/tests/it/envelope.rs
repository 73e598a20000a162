//! Every non-2xx answer is the error envelope with the right code.

use serde_json::Value;
use uuid::Uuid;

use crate::support::{StackUrls, admin, assert_envelope, client, stack};

fn issue_paths(body: &Value) -> Vec<String> {
    body["error"]["details"]["issues"]
        .as_array()
        .expect("details.issues")
        .iter()
        .map(|i| i["path"].as_str().expect("path").to_owned())
        .collect()
}

#[tokio::test]
async fn unknown_route_is_404_not_found() {
    let response = client()
        .get(stack().api("/definitely/not/here"))
        .send()
        .await
        .expect("request");
    assert_envelope(response, 404, "not_found").await;
}

#[tokio::test]
async fn wrong_method_is_405_with_allow() {
    let response = client()
        .delete(stack().api("/app-invocations"))
        .bearer_auth(admin(Uuid::new_v4()))
        .send()
        .await
        .expect("request");
    assert_eq!(response.headers()["allow"], "GET, HEAD");
    assert_envelope(response, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn body_over_the_limit_is_413() {
    let response = client()
        .get(stack().api("/app-invocations"))
        .bearer_auth(admin(Uuid::new_v4()))
        .header("content-type", "application/json")
        .body(vec![b' '; 1024 * 1024 + 1])
        .send()
        .await
        .expect("request");
    let body = assert_envelope(response, 413, "payload_too_large").await;
    assert_eq!(body["error"]["details"]["limitBytes"], 1024 * 1024);
}

#[tokio::test]
async fn a_client_still_sending_an_oversized_body_reads_the_413() {
    // 16 MiB, far more than the socket buffers hold: the client is still writing when ingress
    // decides; ingress reads the rest before it answers, so the client is not reset.
    for _ in 0..3 {
        let response = client()
            .get(stack().api("/app-invocations"))
            .bearer_auth(admin(Uuid::new_v4()))
            .header("content-type", "application/json")
            .body(vec![b' '; 16 * 1024 * 1024])
            .send()
            .await
            .expect("an answer, not a reset");
        assert_envelope(response, 413, "payload_too_large").await;
    }
}

#[tokio::test]
async fn each_bad_query_parameter_is_a_validation_issue() {
    let token = admin(Uuid::new_v4());
    let cases = [
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("limit=100000", "limit"),
        ("offset=-1", "offset"),
        ("offset=1.5", "offset"),
        ("status=done", "status"),
        ("from=yesterday", "from"),
        ("to=2026-02-30T00:00:00Z", "to"),
        ("workflowRunId=42", "workflowRunId"),
        ("appName=Not_An_App", "appName"),
        ("colour=blue", "colour"),
    ];
    for (query, parameter) in cases {
        let response = client()
            .get(stack().api(&format!("/app-invocations?{query}")))
            .bearer_auth(&token)
            .send()
            .await
            .expect("request");
        let body = assert_envelope(response, 400, "validation_error").await;
        assert_eq!(issue_paths(&body), vec![parameter], "{query}: {body}");
        assert_eq!(body["error"]["details"]["issues"][0]["in"], "query");
    }
}

#[tokio::test]
async fn all_issues_are_reported_together() {
    let response = client()
        .get(stack().api("/app-invocations?limit=0&offset=x&status=nope"))
        .bearer_auth(admin(Uuid::new_v4()))
        .send()
        .await
        .expect("request");
    let body = assert_envelope(response, 400, "validation_error").await;
    assert_eq!(issue_paths(&body), vec!["limit", "offset", "status"]);
}

#[tokio::test]
async fn a_path_id_that_is_not_a_uuid_is_400() {
    for id in ["123", "not-a-uuid", "%00", "..%2F..%2Fetc"] {
        let response = client()
            .get(stack().api(&format!("/app-invocations/{id}")))
            .bearer_auth(admin(Uuid::new_v4()))
            .send()
            .await
            .expect("request");
        let body = assert_envelope(response, 400, "validation_error").await;
        assert_eq!(body["error"]["details"]["issues"][0]["in"], "path", "{id}");
    }
}

#[tokio::test]
async fn head_answers_as_get_without_a_body() {
    let token = admin(Uuid::new_v4());
    let get = client()
        .get(stack().api("/app-invocations"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("request");
    assert_eq!(get.status(), 200);
    let head = client()
        .head(stack().api("/app-invocations"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("request");
    assert_eq!(head.status(), 200);
    assert_eq!(
        head.headers()["content-type"],
        get.headers()["content-type"]
    );
    assert!(head.headers().contains_key("x-request-id"));
    assert!(head.bytes().await.expect("body").is_empty());
    // Without a token HEAD is refused as GET is.
    let anonymous = client()
        .head(stack().api("/app-invocations"))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), 401);
    let health = client()
        .head(stack().api("/health"))
        .send()
        .await
        .expect("request");
    assert_eq!(health.status(), 200);
}
