//! The API's readiness: Postgres, Redis, the broker, and the object store when the deployment
//! has one. Without object storage the API is still ready (invocation and callback reads need
//! none); readiness says `not configured`, and the routes that need it answer 503
//! `apps_unavailable` (SPEC §4.7 rule 9).

use service::health::{Readiness, probes};

use crate::object_store::ObjectStore;

pub(crate) fn readiness(
    pool: sqlx::PgPool,
    redis: redis::Client,
    producer: topics::Producer,
    objects: Option<ObjectStore>,
) -> Readiness {
    let readiness = Readiness::new()
        .probe("postgres", move || probes::postgres(pool.clone()))
        .probe("redis", move || probes::redis(redis.clone()))
        .probe(
            "broker",
            producer.readiness_probe(service::health::PROBE_TIMEOUT),
        );
    match objects {
        Some(store) => readiness.probe("objectStore", move || {
            let store = store.clone();
            async move { store.probe().await.map_err(|e| e.to_string()) }
        }),
        None => readiness.not_configured("objectStore"),
    }
}
