//! `GET /apps/health`: calls, failures, timeouts, p95 and last times per app over the window,
//! from the per-minute rollup; circuits not closed; installs on a blocked module.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::apps::Tenant;
use crate::support::instance::Instance;
use crate::support::modules::scoring;
use crate::support::{analyst, client, database};

async fn invocation(
    pool: &PgPool,
    tenant: Uuid,
    app: &str,
    status: &str,
    ms: f64,
    at: DateTime<Utc>,
) {
    sqlx::query(
        "INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, input, \
         status, duration_ms, invoked_at) \
         VALUES (gen_random_uuid(), $1, $2, gen_random_uuid(), 'check', '{}', $3, $4, $5)",
    )
    .bind(tenant)
    .bind(app)
    .bind(status)
    .bind(ms)
    .bind(at)
    .execute(pool)
    .await
    .expect("invocation inserts");
}

async fn health(instance: &Instance, token: &str, query: &str) -> (u16, Value) {
    let response = client()
        .get(instance.url(&format!("/apps/health{query}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("json"))
}

fn app<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .find(|a| a["appName"] == name)
}

#[tokio::test]
async fn calls_circuits_and_blocked_installs_of_the_window() {
    let pool = database().await;
    let tenant = Tenant::new();
    let version = tenant.published(scoring("health-kyc", "1.0.0")).await;
    let sha = version["sha256"].as_str().expect("sha256").to_owned();
    let (status, _) = tenant
        .install(
            "health-kyc",
            json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": "http://127.0.0.1:9"}}),
        )
        .await;
    assert_eq!(status, 200);

    // 20 calls in the last ten minutes: 17 successes of 100 ms, 2 errors and 1 timeout, one of
    // 5 s among them; and one call of another app two hours ago.
    let now = Utc::now();
    let mut last_failure = now - Duration::minutes(10);
    for i in 0..20 {
        let at = now - Duration::minutes(9) + Duration::seconds(25 * i);
        let (status, ms) = match i {
            3 | 11 => ("error", 100.0),
            15 => ("timeout", 5000.0),
            _ => ("success", 100.0),
        };
        if status != "success" {
            last_failure = at;
        }
        invocation(&pool, tenant.id, "health-kyc", status, ms, at).await;
    }
    let last_call = now - Duration::minutes(9) + Duration::seconds(25 * 19);
    invocation(
        &pool,
        tenant.id,
        "health-aml",
        "success",
        40.0,
        now - Duration::minutes(120),
    )
    .await;
    sqlx::query(
        "INSERT INTO app_circuits (tenant_id, app_name, state, failures, opened_at, updated_at) \
         VALUES ($1, 'health-kyc', 'open', 5, now(), now())",
    )
    .bind(tenant.id)
    .execute(&pool)
    .await
    .expect("circuit inserts");

    let instance = Instance::start(&[("APP_BLOCKED_SHA256", sha.as_str())]).await;
    let (status, report) = health(&instance, &tenant.token, "").await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["windowMinutes"], 60);
    let kyc = app(&report, "health-kyc").expect("installed app listed");
    assert_eq!(
        (&kyc["calls"], &kyc["failures"], &kyc["timeouts"]),
        (&json!(20), &json!(2), &json!(1))
    );
    // 19 of 20 calls took 100 ms: the p95 is the bound of 100 ms's slot, within 19 % above.
    let p95 = kyc["p95DurationMs"].as_f64().expect("p95");
    assert!((100.0..=119.0).contains(&p95), "p95 {p95}");
    let time = |v: &Value| DateTime::parse_from_rfc3339(v.as_str().expect("time")).expect("time");
    assert_eq!(
        time(&kyc["lastCallAt"]).timestamp_micros(),
        last_call.timestamp_micros()
    );
    assert_eq!(
        time(&kyc["lastFailureAt"]).timestamp_micros(),
        last_failure.timestamp_micros()
    );
    assert!(app(&report, "health-aml").is_none(), "outside the window");
    assert_eq!(report["circuits"][0]["appName"], "health-kyc");
    assert_eq!(report["circuits"][0]["state"], "open");
    assert_eq!(report["circuits"][0]["failures"], 5);
    assert!(report["circuits"][0]["trialFrom"].is_string());
    assert_eq!(
        report["blockedInstalls"],
        json!([{"appName": "health-kyc", "versionId": version["id"], "version": "1.0.0", "sha256": sha, "enabled": false}])
    );

    let (_, wide) = health(&instance, &analyst(tenant.id), "?windowMinutes=180").await;
    assert_eq!(
        app(&wide, "health-aml").expect("in a wider window")["calls"],
        1
    );
    assert_eq!(app(&wide, "health-kyc").expect("kyc")["calls"], 20);

    let stranger = Tenant::new();
    let (status, theirs) = health(&instance, &stranger.token, "?windowMinutes=1440").await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            &theirs["apps"],
            &theirs["circuits"],
            &theirs["blockedInstalls"]
        ),
        (&json!([]), &json!([]), &json!([]))
    );
}

#[tokio::test]
async fn a_window_outside_5_to_1440_minutes_is_refused() {
    let tenant = Tenant::new();
    for query in [
        "?windowMinutes=4",
        "?windowMinutes=1441",
        "?windowMinutes=x",
        "?window=60",
    ] {
        let response = client()
            .get(crate::support::StackUrls::api(
                crate::support::stack(),
                &format!("/apps/health{query}"),
            ))
            .bearer_auth(&tenant.token)
            .send()
            .await
            .expect("request");
        crate::support::assert_envelope(response, 400, "validation_error").await;
    }
}
