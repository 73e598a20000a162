//! Tenants' webhook endpoints (docs/outbound-webhooks.md): created with a secret shown once,
//! read, changed, rotated and deleted by admins; URLs held to the outbound rules; event types
//! from the catalogue; another tenant's endpoints and deliveries absent; the secret found in
//! no table, audit row or log line.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::apps::{Tenant, call_with};
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::{analyst, database, repo_root};

/// Creates an endpoint of `tenant` at `url` (the development stack allows loopback).
pub(crate) async fn endpoint(tenant: &Tenant, url: &str, body: Value) -> Value {
    let mut body = body;
    body["url"] = json!(url);
    let (status, created) = tenant
        .call(Method::POST, "/webhook-endpoints", Some(body))
        .await;
    assert_eq!(status, 201, "{created}");
    created
}

fn id(value: &Value) -> &str {
    value["id"].as_str().expect("an id")
}

#[tokio::test]
async fn an_endpoint_is_created_read_changed_rotated_and_deleted() {
    let tenant = Tenant::new();
    let created = endpoint(
        &tenant,
        "https://hooks.example.com/risk",
        json!({"eventTypes": ["app.circuit.opened", "app.circuit.opened"],
               "description": "risk team"}),
    )
    .await;
    let secret = created["secret"].as_str().expect("the secret, shown once");
    assert!(secret.starts_with("whsec_"), "{created}");
    assert_eq!(created["eventTypes"], json!(["app.circuit.opened"]));
    assert_eq!(created["enabled"], true);
    assert_eq!(created["previousSecretExpiresAt"], Value::Null);

    let path = format!("/webhook-endpoints/{}", id(&created));
    let (status, read) = tenant.call(Method::GET, &path, None).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read.get("secret"), None, "never shown again: {read}");
    let (status, listed) = tenant.call(Method::GET, "/webhook-endpoints", None).await;
    assert_eq!(status, 200);
    assert_eq!(listed["items"], json!([read]));

    let change = json!({"enabled": false, "eventTypes": [], "description": "paused"});
    let (status, changed) = tenant.call(Method::PATCH, &path, Some(change)).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        (
            &changed["enabled"],
            &changed["eventTypes"],
            &changed["description"],
            &changed["url"]
        ),
        (
            &json!(false),
            &json!([]),
            &json!("paused"),
            &json!("https://hooks.example.com/risk")
        )
    );

    let (status, rotated) = tenant
        .call(Method::POST, &format!("{path}/rotate-secret"), None)
        .await;
    assert_eq!(status, 200, "{rotated}");
    let new_secret = rotated["secret"].as_str().expect("the new secret");
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);
    let expires = rotated["previousSecretExpiresAt"]
        .as_str()
        .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
        .expect("the previous secret's end");
    let overlap = expires.signed_duration_since(chrono::Utc::now());
    assert!(
        (chrono::Duration::hours(23)..=chrono::Duration::hours(24)).contains(&overlap),
        "{overlap}"
    );
    // A second rotation would end the first secret early: refused while it still signs.
    let (status, again) = tenant
        .call(Method::POST, &format!("{path}/rotate-secret"), None)
        .await;
    assert_eq!(
        (status, &again["error"]["code"]),
        (409, &json!("conflict")),
        "{again}"
    );

    let (status, deleted) = tenant.call(Method::DELETE, &path, None).await;
    assert_eq!((status, &deleted["deleted"]), (200, &json!(true)));
    let (status, _) = tenant.call(Method::GET, &path, None).await;
    assert_eq!(status, 404);
    let (status, again) = tenant.call(Method::DELETE, &path, None).await;
    assert_eq!(
        (status, &again["error"]["code"]),
        (404, &json!("not_found"))
    );

    let actions: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_events WHERE tenant_id = $1 AND subject_type = \
         'webhook_endpoint' ORDER BY occurred_at, id",
    )
    .bind(tenant.id)
    .fetch_all(&database().await)
    .await
    .expect("audit");
    assert_eq!(
        actions,
        [
            "webhook_endpoint.created",
            "webhook_endpoint.updated",
            "webhook_endpoint.secret_rotated",
            "webhook_endpoint.deleted"
        ]
    );
}

#[tokio::test]
async fn endpoint_urls_types_and_descriptions_are_checked_with_paths() {
    let tenant = Tenant::new();
    for url in [
        "http://10.0.0.1/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://192.168.1.1/hook",
        "http://[::1]:9000/hook",
        "http://[::ffff:127.0.0.1]:9000/hook",
        "http://hooks.example.com/plain-http",
        "https://user:pw@hooks.example.com/",
        "ftp://hooks.example.com/",
        "http://0.0.0.0:9000/",
        "not a url",
    ] {
        let (status, body) = tenant
            .call(
                Method::POST,
                "/webhook-endpoints",
                Some(json!({ "url": url })),
            )
            .await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(
            body["error"]["details"]["issues"][0]["path"], "/url",
            "{url}"
        );
    }
    let long = format!("https://hooks.example.com/{}", "a".repeat(2048));
    let body = json!({"url": long, "eventTypes": ["app.circuit.opened", "no.such.event"],
                      "description": "d".repeat(501)});
    let (status, refused) = tenant
        .call(Method::POST, "/webhook-endpoints", Some(body))
        .await;
    assert_eq!(status, 400, "{refused}");
    let paths: Vec<&str> = refused["error"]["details"]["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .filter_map(|issue| issue["path"].as_str())
        .collect();
    assert_eq!(paths, ["/url", "/eventTypes/1", "/description"]);
    let (status, unknown) = tenant
        .call(
            Method::POST,
            "/webhook-endpoints",
            Some(json!({"url": "https://hooks.example.com/", "secret": "mine"})),
        )
        .await;
    assert_eq!(status, 400, "{unknown}");

    let (status, types) = tenant.call(Method::GET, "/webhook-event-types", None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = types["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|kind| kind["name"].as_str())
        .collect();
    assert_eq!(names, ["app.circuit.opened", "app.circuit.closed"]);

    // The deliveries' filters take only what the catalogue and the statuses name.
    for query in ["eventType=%00", "eventType=no.such.event", "status=sent"] {
        let (status, refused) = tenant
            .call(Method::GET, &format!("/webhook-deliveries?{query}"), None)
            .await;
        assert_eq!(status, 400, "{query}: {refused}");
        let path = query.split('=').next().expect("name");
        assert_eq!(
            refused["error"]["details"]["issues"][0]["path"], path,
            "{refused}"
        );
    }
}

#[tokio::test]
async fn endpoints_and_deliveries_belong_to_their_tenant_and_admins() {
    let owner = Tenant::new();
    let created = endpoint(&owner, "https://hooks.example.com/a", json!({})).await;
    let other = Tenant::new();
    let foreign = format!("/webhook-endpoints/{}", id(&created));
    let random = format!("/webhook-endpoints/{}", Uuid::new_v4());
    assert_foreign_is_absent(&other.token, &foreign, &random).await;
    for (method, path, body) in [
        (
            Method::PATCH,
            foreign.clone(),
            Some(json!({"enabled": false})),
        ),
        (Method::DELETE, foreign.clone(), None),
        (Method::POST, format!("{foreign}/rotate-secret"), None),
        (
            Method::POST,
            format!("/webhook-deliveries/{}/retry", Uuid::new_v4()),
            None,
        ),
    ] {
        let (status, body) = other.call(method, &path, body).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    let (_, listed) = other.call(Method::GET, "/webhook-endpoints", None).await;
    assert_eq!(listed["items"], json!([]));
    let (status, still) = owner.call(Method::GET, &foreign, None).await;
    assert_eq!((status, &still["enabled"]), (200, &json!(true)));

    let analyst = analyst(owner.id);
    for path in ["/webhook-endpoints", "/webhook-deliveries", &foreign] {
        let (status, body) = call_with(&analyst, Method::GET, path, None).await;
        assert_eq!(status, 403, "{path}: {body}");
    }
}

#[tokio::test]
async fn an_endpoint_secret_is_kept_only_sealed() {
    let tenant = Tenant::new();
    let created = endpoint(&tenant, "https://hooks.example.com/sealed", json!({})).await;
    let secret = created["secret"].as_str().expect("secret").to_owned();
    let rotated = tenant
        .call(
            Method::POST,
            &format!("/webhook-endpoints/{}/rotate-secret", id(&created)),
            None,
        )
        .await
        .1;
    let rotated_secret = rotated["secret"].as_str().expect("secret").to_owned();
    let pool = database().await;
    for value in [&secret, &rotated_secret] {
        let key = value.trim_start_matches("whsec_");
        // Text columns as JSON, and the bytea ones byte for byte (JSON would show them as hex).
        let found: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM webhook_endpoints e \
                     WHERE strpos(row_to_json(e)::text, $1) > 0 \
                        OR position(convert_to($1, 'UTF8') IN e.secret_ciphertext) > 0 \
                        OR position(convert_to($1, 'UTF8') IN \
                                    coalesce(e.previous_ciphertext, '')) > 0) \
                  + (SELECT count(*) FROM audit_events WHERE tenant_id = $2 \
                     AND strpos(payload::text, $1) > 0) \
                  + (SELECT count(*) FROM inbox WHERE strpos(coalesce(outcome::text, ''), $1) > 0)",
        )
        .bind(key)
        .bind(tenant.id)
        .fetch_one(&pool)
        .await
        .expect("search");
        assert_eq!(found, 0, "a secret in a table");
        for log in ["ingress", "pipeline"] {
            let path = repo_root().join(format!(".stack/logs/{log}.log"));
            let text = std::fs::read_to_string(&path).expect("the service's log");
            assert!(!text.is_empty(), "{} is empty", path.display());
            assert!(!text.contains(key), "a secret in {}", path.display());
        }
    }
}

#[tokio::test]
async fn a_tenant_has_at_most_fifty_endpoints() {
    let tenant = Tenant::new();
    for n in 0..50 {
        endpoint(
            &tenant,
            &format!("https://hooks.example.com/{n}"),
            json!({}),
        )
        .await;
    }
    let (status, refused) = tenant
        .call(
            Method::POST,
            "/webhook-endpoints",
            Some(json!({"url": "https://hooks.example.com/fifty-first"})),
        )
        .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (409, &json!("conflict")),
        "{refused}"
    );
    let (_, listed) = tenant.call(Method::GET, "/webhook-endpoints", None).await;
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(50));
}
