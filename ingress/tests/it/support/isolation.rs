//! Tenant isolation: another tenant's record answers exactly what an absent one answers.

use serde_json::Value;

use super::{StackUrls, client, stack};

/// `GET path_of(foreign_id)` and `GET path_of(random_id)` with `token` both answer 404
/// `not_found`, with bodies identical except for the request id.
pub async fn assert_foreign_is_absent(token: &str, foreign_path: &str, random_path: &str) {
    let http = client();
    let mut bodies = Vec::new();
    for path in [foreign_path, random_path] {
        let response = http
            .get(stack().api(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status().as_u16(), 404, "{path}");
        let mut body: Value = response.json().await.expect("JSON");
        assert_eq!(body["error"]["code"], "not_found", "{path}: {body}");
        body["error"]
            .as_object_mut()
            .expect("error object")
            .remove("requestId");
        bodies.push(body);
    }
    assert_eq!(bodies[0], bodies[1], "a foreign record must look absent");
}
