//! `GET /health` (the process is up) and `GET /health/ready` (every dependency answers: Postgres,
//! Redis, the broker, the object store). Neither is rate limited or traced.

use http::{Response, StatusCode};
use serde_json::json;
use telemetry::health::{PROBE_TIMEOUT, check, summarize};

use crate::error::Error;
use crate::response::{self, Body};
use crate::state::State;

pub fn live() -> Response<Body> {
    response::json(StatusCode::OK, &json!({ "status": "ok" }))
}

/// 200 with every check `ok`, or 503 `not_ready` naming each dependency that did not answer.
pub async fn ready(state: &State) -> Result<Response<Body>, Error> {
    let checks = tokio::join!(
        check("postgres", async {
            sqlx::query_scalar::<_, i32>("SELECT 1")
                .fetch_one(&state.pool)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }),
        check("redis", async {
            state.redis.probe().await.map_err(|e| e.to_string())
        }),
        check("broker", async {
            state
                .producer
                .probe(PROBE_TIMEOUT)
                .await
                .map_err(|e| e.to_string())
        }),
        check("objectStore", async {
            match &state.objects {
                Some(store) => store.probe().await.map_err(|e| e.to_string()),
                None => Err("STORAGE_ENDPOINT is not configured".to_owned()),
            }
        }),
    );
    let (ready, checks, unreachable) = summarize(&[checks.0, checks.1, checks.2, checks.3]);
    if ready {
        Ok(response::json(
            StatusCode::OK,
            &json!({ "status": "ready", "checks": checks }),
        ))
    } else {
        Err(Error::NotReady {
            unreachable,
            checks,
        })
    }
}
