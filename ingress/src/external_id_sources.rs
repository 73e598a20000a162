//! Where each publisher's app says a webhook's external id is (`handles.webhookExternalId` of its
//! newest published version), remembered for [`TIME_TO_LIVE`]: every webhook of a vendor asks
//! the same question of the same app, and the answer changes only when a version is published
//! or withdrawn, so after a publish the old place is read for at most that long.

use std::time::Duration;

use readers::callbacks::webhook::{self, Publisher};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::error::Error;

/// How long an app's declared place is remembered.
const TIME_TO_LIVE: Duration = Duration::from_secs(10);
/// Publishers' apps remembered at once.
const CAPACITY: u64 = 10_000;

/// The remembered places, per publisher (`None`: the platform) and app.
#[derive(Debug)]
pub(crate) struct ExternalIdSources(moka::sync::Cache<(Option<Uuid>, String), Option<Value>>);

impl Default for ExternalIdSources {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(TIME_TO_LIVE)
                .build(),
        )
    }
}

impl ExternalIdSources {
    /// `handles.webhookExternalId` of `app`'s newest published version of `publisher`.
    pub(super) async fn of(
        &self,
        pool: &PgPool,
        publisher: Publisher,
        app: &str,
    ) -> Result<Option<Value>, Error> {
        let key = (publisher.tenant(), app.to_owned());
        if let Some(source) = self.0.get(&key) {
            return Ok(source);
        }
        let source = webhook::external_id_source(pool, publisher, app).await?;
        self.0.insert(key, source.clone());
        Ok(source)
    }
}
