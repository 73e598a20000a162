//! Shared test support: the stack's environment, tokens, an HTTP client, extra instances, and
//! the tenant-isolation assertion later issues reuse.

pub mod apps;
pub mod backends;
pub mod callbacks;
pub mod documents;
pub mod instance;
pub mod isolation;
pub mod modules;
pub mod otlp;
pub mod outbound;
pub mod receiver;
pub mod vendor;

use ingress::Kind;
use ingress::Role;
use ingress::{TokenRequest, mint};
use uuid::Uuid;

pub use service::testing::{repo_root, stack};

/// URLs of the stack's ingress.
pub trait StackUrls {
    fn api(&self, path: &str) -> String;
    fn internal(&self, path: &str) -> String;
}

impl StackUrls for service::testing::StackEnv {
    fn api(&self, path: &str) -> String {
        format!("{}{path}", self.var("API_URL"))
    }

    fn internal(&self, path: &str) -> String {
        format!("{}{path}", self.var("API_INTERNAL_URL"))
    }
}

/// A token of the stack's deployment.
pub fn token(tenant: Uuid, roles: &[Role]) -> String {
    token_with(tenant, roles, &[])
}

pub fn token_with(tenant: Uuid, roles: &[Role], perms: &[&str]) -> String {
    mint(
        TokenRequest {
            tenant,
            sub: format!("user-{}", Uuid::new_v4()),
            name: "Test User".into(),
            kind: Kind::Human,
            roles: roles.to_vec(),
            perms: perms.iter().map(|p| (*p).to_owned()).collect(),
            submission: None,
            ttl_seconds: 600,
            issuer: None,
            audience: None,
        },
        stack().var("JWT_SECRET").as_bytes(),
    )
    .expect("token signs")
}

/// An applicant's token: acts on `submission` only, with no role.
pub fn applicant(tenant: Uuid, submission: Uuid) -> String {
    mint(
        TokenRequest {
            tenant,
            sub: format!("applicant-{}", Uuid::new_v4()),
            name: "Applicant".into(),
            kind: Kind::Applicant,
            roles: vec![],
            perms: vec![],
            submission: Some(submission),
            ttl_seconds: 600,
            issuer: None,
            audience: None,
        },
        stack().var("JWT_SECRET").as_bytes(),
    )
    .expect("token signs")
}

pub fn admin(tenant: Uuid) -> String {
    token(tenant, &[Role::Admin])
}

pub fn analyst(tenant: Uuid) -> String {
    token(tenant, &[Role::Analyst])
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("client builds")
}

/// The stack's pipeline's `/metrics`, as text.
pub async fn pipeline_metrics() -> String {
    metrics_at(&format!("{}/metrics", stack().var("PIPELINE_METRICS_URL"))).await
}

/// The text exposition at `url`.
pub async fn metrics_at(url: &str) -> String {
    client()
        .get(url)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text")
}

/// The value of the sample of `name` whose labels include every one of `labels`, in the stack's
/// pipeline's `/metrics`, once it is there (within 30 s: counters recorded after a commit come
/// a moment after the answer).
pub async fn pipeline_metric(name: &str, labels: &[(&str, &str)]) -> f64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = pipeline_metrics().await;
        if let Some(value) = sample(&text, name, labels) {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {name} with {labels:?} in the pipeline's metrics"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// The value of the sample of `name` whose labels include all of `labels`, in exposition `text`.
pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    text.lines()
        .filter_map(|line| line.strip_prefix(name)?.strip_prefix('{'))
        .filter(|rest| pairs.iter().all(|pair| rest.contains(pair.as_str())))
        .find_map(|rest| rest.rsplit_once("} ")?.1.parse().ok())
}

pub async fn database() -> sqlx::PgPool {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(stack().var("DATABASE_URL"))
        .await
        .expect("database reachable");
    schema::migrate(&pool).await.expect("migrations apply");
    // Fixtures write history from 2023 on: its months need their partitions (there is no
    // default partition to catch them).
    sqlx::query(
        "SELECT app_invocations_ensure_partitions('2023-01-01', \
         (extract(year FROM age(now(), '2023-01-01')) * 12 \
          + extract(month FROM age(now(), '2023-01-01')))::integer + 4)",
    )
    .execute(&pool)
    .await
    .expect("partitions");
    pool
}

/// Tells read caches that `tenant`'s invocation history changed, as every writer of
/// `app_invocations` does once its transaction committed.
pub async fn announce_history_changed(tenant: Uuid) {
    let client = redis::Client::open(stack().var("REDIS_URL")).expect("redis url");
    let mut connection = client
        .get_multiplexed_async_connection()
        .await
        .expect("redis reachable");
    redis::cmd("PUBLISH")
        .arg(readers::invocations::CHANGED_CHANNEL)
        .arg(tenant.to_string())
        .query_async::<i64>(&mut connection)
        .await
        .expect("published");
}

/// Asserts the body is the error envelope with `code`, and its request id equals the header.
pub async fn assert_envelope(
    response: reqwest::Response,
    status: u16,
    code: &str,
) -> serde_json::Value {
    assert_eq!(response.status().as_u16(), status, "status");
    let header = response
        .headers()
        .get("x-request-id")
        .expect("x-request-id on every response")
        .to_str()
        .expect("ascii")
        .to_owned();
    assert_eq!(
        response
            .headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap_or("")),
        Some("no-store")
    );
    let body: serde_json::Value = response.json().await.expect("JSON body");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert_eq!(body["error"]["requestId"], header.as_str(), "{body}");
    body
}
