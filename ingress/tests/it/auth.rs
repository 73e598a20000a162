//! Bearer tokens over HTTP: forged and broken tokens are 401, missing permissions 403.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{EncodingKey, Header};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::instance::Instance;
use crate::support::{StackUrls, analyst, assert_envelope, client, repo_root, stack, token};

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn claims() -> Value {
    json!({
        "sub": "user-1", "tenant": Uuid::new_v4(), "name": "Ada", "kind": "human",
        "roles": ["admin"], "exp": now() + 600, "iat": now(),
    })
}

fn hs256(claims: &Value, secret: &[u8]) -> String {
    jsonwebtoken::encode(
        &Header::default(),
        claims,
        &EncodingKey::from_secret(secret),
    )
    .expect("sign")
}

fn secret() -> Vec<u8> {
    stack().var("JWT_SECRET").as_bytes().to_vec()
}

fn edit(mut claims: Value, key: &str, value: Option<Value>) -> Value {
    match value {
        Some(v) => claims[key] = v,
        None => {
            claims.as_object_mut().expect("object").remove(key);
        }
    }
    claims
}

fn alg_none(claims: &Value) -> String {
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

fn tampered(token: &str) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    let mut payload: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
    payload["tenant"] = json!(Uuid::new_v4());
    format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(payload.to_string()),
        parts[2]
    )
}

async fn status_of(url: &str, authorization: Option<String>) -> reqwest::Response {
    let mut request = client().get(url);
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    request.send().await.expect("request")
}

#[tokio::test]
async fn forged_and_broken_tokens_are_401() {
    let s = secret();
    let valid = hs256(&claims(), &s);
    let rsa_public =
        std::fs::read(repo_root().join("ingress/tests/fixtures/rsa_public.pem")).expect("fixture");
    let cases: Vec<(&str, Option<String>)> = vec![
        ("no header", None),
        ("basic scheme", Some("Basic dXNlcjpwYXNz".into())),
        ("empty bearer", Some("Bearer ".into())),
        ("alg none", Some(format!("Bearer {}", alg_none(&claims())))),
        (
            "hs256 signed with the rs256 public key",
            Some(format!("Bearer {}", hs256(&claims(), &rsa_public))),
        ),
        (
            "wrong key",
            Some(format!(
                "Bearer {}",
                hs256(&claims(), b"not-the-deployment-secret-at-all")
            )),
        ),
        (
            "expired",
            Some(format!(
                "Bearer {}",
                hs256(&edit(claims(), "exp", Some(json!(now() - 3600))), &s)
            )),
        ),
        (
            "nbf in the future",
            Some(format!(
                "Bearer {}",
                hs256(&edit(claims(), "nbf", Some(json!(now() + 3600))), &s)
            )),
        ),
        (
            "no exp",
            Some(format!(
                "Bearer {}",
                hs256(&edit(claims(), "exp", None), &s)
            )),
        ),
        (
            "tampered payload",
            Some(format!("Bearer {}", tampered(&valid))),
        ),
        (
            "no tenant",
            Some(format!(
                "Bearer {}",
                hs256(&edit(claims(), "tenant", None), &s)
            )),
        ),
        (
            "applicant without submission",
            Some(format!(
                "Bearer {}",
                hs256(&edit(claims(), "kind", Some(json!("applicant"))), &s)
            )),
        ),
        ("garbage", Some("Bearer garbage".into())),
        ("garbage parts", Some("Bearer a.b.c".into())),
    ];
    for (name, authorization) in cases {
        let response = status_of(&stack().api("/app-invocations"), authorization).await;
        assert_eq!(
            response
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap_or("")),
            Some("Bearer"),
            "{name}"
        );
        assert_envelope(response, 401, "unauthorized").await;
    }
    // The same valid token passes, so the table fails for the token, not the route.
    let ok = status_of(
        &stack().api("/app-invocations"),
        Some(format!("Bearer {valid}")),
    )
    .await;
    assert_eq!(ok.status(), 200);
}

#[tokio::test]
async fn a_missing_permission_is_403() {
    let tenant = Uuid::new_v4();
    let no_roles = token(tenant, &[]);
    let response = status_of(
        &stack().api("/app-invocations"),
        Some(format!("Bearer {no_roles}")),
    )
    .await;
    let body = assert_envelope(response, 403, "forbidden").await;
    assert_eq!(body["error"]["details"]["permission"], "apps:read");
    let response = status_of(
        &stack().api("/app-invocations"),
        Some(format!("Bearer {}", analyst(tenant))),
    )
    .await;
    assert_eq!(response.status(), 200);
    let granted = crate::support::token_with(tenant, &[], &["apps:read"]);
    let response = status_of(
        &stack().api("/app-invocations"),
        Some(format!("Bearer {granted}")),
    )
    .await;
    assert_eq!(response.status(), 200, "an extra perm grants like a role");
}

/// Tokens come from the wider service: a role this service does not know is ignored, not
/// refused, and grants nothing.
#[tokio::test]
async fn roles_of_the_wider_service_are_ignored() {
    let theirs_and_ours = edit(claims(), "roles", Some(json!(["case-manager", "analyst"])));
    let response = status_of(
        &stack().api("/app-invocations"),
        Some(format!("Bearer {}", hs256(&theirs_and_ours, &secret()))),
    )
    .await;
    assert_eq!(response.status(), 200, "analyst still grants apps:read");
    let only_theirs = edit(claims(), "roles", Some(json!(["case-manager"])));
    let response = status_of(
        &stack().api("/app-invocations"),
        Some(format!("Bearer {}", hs256(&only_theirs, &secret()))),
    )
    .await;
    assert_envelope(response, 403, "forbidden").await;
}

#[tokio::test]
async fn an_rs256_deployment_refuses_algorithm_confusion() {
    let fixtures = repo_root().join("ingress/tests/fixtures");
    let public_key = fixtures.join("rsa_public.pem");
    let instance = Instance::start(&[
        ("JWT_ALGORITHM", "RS256"),
        (
            "JWT_PUBLIC_KEY_FILE",
            public_key.to_str().expect("utf-8 path"),
        ),
        ("JWT_ISSUER", "https://id.test"),
        ("JWT_AUDIENCE", "risk-api"),
    ])
    .await;
    let private = std::fs::read(fixtures.join("rsa_private.pem")).expect("fixture");
    let public = std::fs::read(&public_key).expect("fixture");
    let good = edit(
        edit(claims(), "iss", Some(json!("https://id.test"))),
        "aud",
        Some(json!("risk-api")),
    );
    let rs256 = |c: &Value| {
        jsonwebtoken::encode(
            &Header::new(jsonwebtoken::Algorithm::RS256),
            c,
            &EncodingKey::from_rsa_pem(&private).expect("key"),
        )
        .expect("sign")
    };
    let url = instance.url("/app-invocations");
    let ok = status_of(&url, Some(format!("Bearer {}", rs256(&good)))).await;
    assert_eq!(ok.status(), 200);
    for (name, token) in [
        ("hs256 with the public key", hs256(&good, &public)),
        (
            "wrong issuer",
            rs256(&edit(good.clone(), "iss", Some(json!("https://evil.test")))),
        ),
        (
            "wrong audience",
            rs256(&edit(good.clone(), "aud", Some(json!("other")))),
        ),
        ("no audience", rs256(&edit(good.clone(), "aud", None))),
        ("alg none", alg_none(&good)),
    ] {
        let response = status_of(&url, Some(format!("Bearer {token}"))).await;
        assert_eq!(response.status(), 401, "{name}");
    }
}
