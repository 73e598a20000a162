//! SPEC §4.7 rule 9: without a runner (or object storage) every `/apps` route answers 503
//! `apps_unavailable`, while the invocation routes answer as ever.

use crate::support::instance::Instance;
use crate::support::{admin, assert_envelope, client};

#[tokio::test]
async fn without_a_runner_apps_routes_answer_503_and_invocations_answer() {
    let instance = Instance::start(&[("APP_RUNNER_URL", "")]).await;
    let token = admin(uuid::Uuid::new_v4());
    let http = client();
    for path in [
        "/apps",
        "/apps/kyc",
        "/apps/approvals",
        "/apps/kyc/versions",
    ] {
        let response = http
            .get(instance.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .expect("request");
        assert_envelope(response, 503, "apps_unavailable").await;
    }
    let response = http
        .put(instance.url("/apps/kyc/install"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"versionId": uuid::Uuid::new_v4()}))
        .send()
        .await
        .expect("request");
    assert_envelope(response, 503, "apps_unavailable").await;
    let response = http
        .get(instance.url("/app-invocations"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 200);
}
