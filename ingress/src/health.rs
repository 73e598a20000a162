//! `GET /health` (the process is up) and `GET /health/ready` (every dependency answers: Postgres,
//! Redis, the broker, the object store). Neither is rate limited or traced.

use std::future::Future;
use std::time::Duration;

use http::{Response, StatusCode};
use serde_json::{Map, Value, json};

use crate::error::Error;
use crate::response::{self, Body};
use crate::state::State;

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

pub fn live() -> Response<Body> {
    response::json(StatusCode::OK, &json!({ "status": "ok" }))
}

/// 200 with every check `ok`, or 503 `not_ready` naming each dependency that did not answer.
pub async fn ready(state: &State) -> Result<Response<Body>, Error> {
    let (postgres, redis, broker, objects) = tokio::join!(
        probe(async {
            sqlx::query_scalar::<_, i32>("SELECT 1")
                .fetch_one(&state.pool)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        probe(async { state.redis.probe().await.map_err(|e| e.to_string()) }),
        probe(async {
            state
                .producer
                .probe(PROBE_TIMEOUT)
                .await
                .map_err(|e| e.to_string())
        }),
        probe(async {
            match &state.objects {
                Some(store) => store.probe().await.map_err(|e| e.to_string()),
                None => Err("STORAGE_ENDPOINT is not configured".to_owned()),
            }
        }),
    );
    report(&[
        ("postgres", postgres),
        ("redis", redis),
        ("broker", broker),
        ("objectStore", objects),
    ])
}

async fn probe(check: impl Future<Output = Result<(), String>>) -> Result<(), String> {
    tokio::time::timeout(PROBE_TIMEOUT, check)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {PROBE_TIMEOUT:?}")))
}

fn report(checks: &[(&'static str, Result<(), String>)]) -> Result<Response<Body>, Error> {
    let mut shown = Map::new();
    let mut unreachable = Vec::new();
    for (name, result) in checks {
        match result {
            Ok(()) => {
                shown.insert((*name).into(), Value::from("ok"));
            }
            Err(reason) => {
                tracing::warn!(dependency = name, %reason, "dependency not ready");
                shown.insert((*name).into(), Value::from("unreachable"));
                unreachable.push(*name);
            }
        }
    }
    if unreachable.is_empty() {
        Ok(response::json(
            StatusCode::OK,
            &json!({ "status": "ready", "checks": shown }),
        ))
    } else {
        Err(Error::NotReady {
            unreachable,
            checks: Value::Object(shown),
        })
    }
}
