//! Per-caller rate limits on an instance with a small budget.

use uuid::Uuid;

use crate::support::instance::Instance;
use crate::support::{admin, assert_envelope, client};

fn header(response: &reqwest::Response, name: &str) -> u64 {
    response.headers()[name]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("number")
}

#[tokio::test]
async fn over_the_limit_is_429_with_retry_after_and_health_is_never_counted() {
    let instance = Instance::start(&[("API_RATE_LIMIT_PER_MINUTE", "5")]).await;
    let http = client();
    for _ in 0..20 {
        let health = http
            .get(instance.url("/health"))
            .send()
            .await
            .expect("health");
        assert_eq!(health.status(), 200);
        assert!(health.headers().get("x-ratelimit-limit").is_none());
    }
    let token = admin(Uuid::new_v4());
    for expected_remaining in (0..5).rev() {
        let response = http
            .get(instance.url("/app-invocations"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "x-ratelimit-limit"), 5);
        assert_eq!(
            header(&response, "x-ratelimit-remaining"),
            expected_remaining
        );
        assert!(header(&response, "x-ratelimit-reset") <= 60);
    }
    let limited = http
        .get(instance.url("/app-invocations"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("request");
    let retry_after = header(&limited, "retry-after");
    assert!((1..=12).contains(&retry_after), "{retry_after}");
    assert_eq!(header(&limited, "x-ratelimit-remaining"), 0);
    let body = assert_envelope(limited, 429, "rate_limited").await;
    assert_eq!(body["error"]["details"]["retryAfterSeconds"], retry_after);

    // Another user of the same tenant has their own budget.
    let other = http
        .get(instance.url("/app-invocations"))
        .bearer_auth(admin(Uuid::new_v4()))
        .send()
        .await
        .expect("request");
    assert_eq!(other.status(), 200);
}

#[tokio::test]
async fn unauthenticated_requests_count_against_the_client_address() {
    let instance = Instance::start(&[("API_RATE_LIMIT_PER_MINUTE", "3")]).await;
    let http = client();
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let response = http
            .get(instance.url("/app-invocations"))
            .bearer_auth("forged")
            .send()
            .await
            .expect("request");
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, vec![401, 401, 401, 429]);
}

#[tokio::test]
async fn zero_turns_the_limit_off() {
    let instance = Instance::start(&[("API_RATE_LIMIT_PER_MINUTE", "0")]).await;
    let token = admin(Uuid::new_v4());
    for _ in 0..10 {
        let response = client()
            .get(instance.url("/app-invocations"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("x-ratelimit-limit").is_none());
    }
}
