//! Broker loss (G14, the broker part; `loadtests/broker-loss/run` is the longer run on the
//! stack's own broker): an API and a pipeline of their own, on a database and a Kafka of their
//! own (`./stack kafka`, so the rest of the suite keeps the stack's broker), take writes from
//! four callers; the broker is stopped for 20 s and started again. Meanwhile readiness names the
//! broker and writes answer 503 rather than hang; every write answered 2xx is applied (nothing
//! acknowledged is lost, none twice), and writes are applied again soon after the broker is back
//! (the time is printed; the suite asserts only that it happens).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use service::testing::ServiceProcess;
use uuid::Uuid;

use crate::support::backends::{Broker, BrokerTurn, Database};
use crate::support::instance::Instance;
use crate::support::{admin, client};

/// The test's broker: a port pair of its own, below the kernel's ephemeral range (32768 and up),
/// where the suite's own connections could take it (the trace test's broker found its port
/// taken there).
const BROKER_PORT: u16 = 29192;
const WRITERS: usize = 4;
const BEFORE: Duration = Duration::from_secs(5);
const DOWN: Duration = Duration::from_secs(20);
const AFTER: Duration = Duration::from_secs(30);

/// One write's answer.
#[derive(Debug, Clone)]
struct Answer {
    key: String,
    status: u16,
    version: Option<i64>,
    code: Option<String>,
    took: Duration,
    at: Instant,
}

#[tokio::test]
async fn writes_answer_503_while_the_broker_is_away_and_nothing_acknowledged_is_lost() {
    let _turn = BrokerTurn::take().await;
    let database = Database::create("broker_loss").await;
    let dir = std::env::temp_dir().join(format!("broker-loss-{}", Uuid::new_v4().simple()));
    let mut broker = Broker::start(dir.clone(), BROKER_PORT);
    broker.wait_accepting().await;
    let brokers = broker.address();
    let env = [
        ("DATABASE_URL", database.url.as_str()),
        ("KAFKA_BROKERS", brokers.as_str()),
        ("API_RATE_LIMIT_PER_MINUTE", "0"),
        ("WORKER_HEALTH_HOST", "127.0.0.1"),
        ("WORKER_HEALTH_PORT", "0"),
    ];
    let pipeline_log = std::env::var_os("BROKER_LOSS_LOG").map(PathBuf::from);
    let pipeline =
        ServiceProcess::start("pipeline", &env, &["health"], pipeline_log.as_deref()).await;
    let api = Instance::start(&env).await;
    wait_ready(&api.url("/health/ready")).await;

    let tenant = Uuid::new_v4();
    let token = admin(tenant);
    let answers = Arc::new(Mutex::new(Vec::<Answer>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|n| {
            let (url, token, answers, stop) = (
                api.url(&format!("/definitions/rule/loss-{n}/versions")),
                token.clone(),
                Arc::clone(&answers),
                Arc::clone(&stop),
            );
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let answer = write(&url, &token, &format!("loss-{n}")).await;
                    let refused = answer.status >= 500;
                    answers.lock().expect("answers").push(answer);
                    if refused {
                        // A caller told 503 backs off a little, as Retry-After asks.
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            })
        })
        .collect();

    tokio::time::sleep(BEFORE).await;
    broker.stop().await;
    let down_at = Instant::now();
    let mut api_named_broker = false;
    let mut pipeline_named_broker = false;
    while down_at.elapsed() < DOWN {
        api_named_broker |= names_broker(&api.url("/health/ready")).await;
        pipeline_named_broker |= names_broker(&pipeline.url("health", "/health/ready")).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut broker = Broker::start(dir, BROKER_PORT);
    broker.wait_accepting().await;
    let up_at = Instant::now();
    tokio::time::sleep(AFTER).await;
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await.expect("writer");
    }
    let answers = answers.lock().expect("answers").clone();

    assert!(
        api_named_broker,
        "the API's readiness named the broker while it was away"
    );
    assert!(
        pipeline_named_broker,
        "the pipeline's readiness named the broker while it was away"
    );
    let during: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.at > down_at + Duration::from_secs(6) && a.at < up_at)
        .collect();
    assert!(
        during
            .iter()
            .any(|a| a.status == 503 && a.code.as_deref() == Some("unavailable")),
        "writes were answered 503 while the broker was away: {during:?}"
    );
    for answer in &answers {
        assert!(
            matches!(answer.status, 201 | 503 | 504),
            "a write answered neither applied, unavailable nor timed out: {answer:?}"
        );
        assert!(
            answer.took < Duration::from_secs(20),
            "a write hung: {answer:?}"
        );
    }
    // When the first write was answered applied after the broker accepted again.
    let resumed = answers
        .iter()
        .filter(|a| a.status == 201 && a.at > up_at)
        .map(|a| a.at - up_at)
        .min();
    assert!(
        resumed.is_some(),
        "writes applied again after the broker came back: {:?}",
        answers
            .iter()
            .filter(|a| a.at > up_at)
            .map(|a| (a.status, a.took))
            .collect::<Vec<_>>()
    );

    // Every write answered 201 is there, under the version it was answered with.
    let pool = sqlx::PgPool::connect(&database.url).await.expect("its db");
    let stored: Vec<(String, i64)> =
        sqlx::query_as("SELECT key, version::bigint FROM definition_versions WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_all(&pool)
            .await
            .expect("versions");
    let applied: Vec<&Answer> = answers.iter().filter(|a| a.status == 201).collect();
    for answer in &applied {
        let version = answer.version.expect("a version");
        assert!(
            stored.contains(&(answer.key.clone(), version)),
            "answered 201 and lost: {answer:?}"
        );
    }
    let mut answered: Vec<(&str, i64)> = applied
        .iter()
        .map(|a| (a.key.as_str(), a.version.unwrap_or_default()))
        .collect();
    answered.sort_unstable();
    let before = answered.len();
    answered.dedup();
    assert_eq!(answered.len(), before, "no version answered twice");
    let unavailable = answers.iter().filter(|a| a.status == 503).count();
    let timed_out = answers.iter().filter(|a| a.status == 504).count();
    let refused_but_stored = stored.len().saturating_sub(applied.len());
    eprintln!(
        "broker loss: {} writes, {} applied (201), {unavailable} unavailable (503), \
         {timed_out} timed out (504, applied later); {refused_but_stored} stored beyond the 201s; \
         longest answer {:?}; the first write answered applied {:?} after the broker accepted again",
        answers.len(),
        applied.len(),
        answers.iter().map(|a| a.took).max().unwrap_or_default(),
        resumed.unwrap_or_default()
    );
    drop(api);
    drop(pipeline);
    broker.stop().await;
    drop(broker);
    pool.close().await;
    drop(database);
}

async fn write(url: &str, token: &str, key: &str) -> Answer {
    let body = json!({"type": "field", "path": "amount", "failWhen": {"op": "gt", "value": 100}});
    let started = Instant::now();
    let response = client()
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await;
    let took = started.elapsed();
    let (status, value) = match response {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap_or_default())
        }
        // The client's own 30 s timeout: a write that hung.
        Err(_) => (0, Value::Null),
    };
    Answer {
        key: key.to_owned(),
        status,
        version: value["version"].as_i64(),
        code: value["error"]["code"].as_str().map(str::to_owned),
        took,
        at: Instant::now(),
    }
}

async fn wait_ready(url: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(response) = client().get(url).send().await
            && response.status() == StatusCode::OK
        {
            return;
        }
        assert!(Instant::now() < deadline, "{url} not ready in 60 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether readiness at `url` answers 503 naming the broker.
async fn names_broker(url: &str) -> bool {
    let Ok(response) = client().get(url).send().await else {
        return false;
    };
    response.status() == StatusCode::SERVICE_UNAVAILABLE
        && response
            .text()
            .await
            .is_ok_and(|body| body.contains("broker"))
}
