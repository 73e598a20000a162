//! `Start`: the run is created `running` on the workflow version it names, or the published
//! one; its steps run right after the reply ([`advance`](super::advance)).

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::runs::{Run, Start};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::RunsStage;
use crate::Error;
use crate::stage::{Context, applies};

applies!(RunsStage: Start => apply);

async fn apply(cx: &mut Context, start: &Start) -> Result<Outcome<Run>, Error> {
    let tenant = cx.tenant()?;
    let Some(version) = version(&mut cx.tx, tenant, start).await? else {
        let (path, message) = match start.version {
            Some(version) => (
                "/version",
                format!("workflow {} has no version {version}", start.definition_key),
            ),
            None => (
                "/definitionKey",
                format!("workflow {} has no published version", start.definition_key),
            ),
        };
        return Ok(Outcome::refused_with(
            RefusalCode::ValidationError,
            "The run cannot start.",
            json!({"issues": [{"in": "body", "path": path, "message": message}]}),
        ));
    };
    sqlx::query(
        "INSERT INTO workflow_runs (id, tenant_id, definition_key, definition_version, \
         subject_id, status, context, created_by, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, now(), now())",
    )
    .bind(start.run_id)
    .bind(tenant)
    .bind(&start.definition_key)
    .bind(version)
    .bind(start.subject_id)
    .bind(&start.context)
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    let run = readers::runs::get(&mut cx.tx, readers::Tenant::new(tenant), start.run_id)
        .await?
        .ok_or_else(|| Error::Invalid("the run just written is not there".into()))?;
    Ok(Outcome::done(run))
}

/// The version the run pins: the one named, when it exists, else the published one.
async fn version(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    start: &Start,
) -> Result<Option<i32>, Error> {
    let found: Option<(i32,)> = match start.version {
        Some(version) => {
            sqlx::query_as(
                "SELECT version FROM definition_versions \
                 WHERE tenant_id = $1 AND kind = 'workflow' AND key = $2 AND version = $3",
            )
            .bind(tenant)
            .bind(&start.definition_key)
            .bind(version)
            .fetch_optional(&mut **tx)
            .await?
        }
        None => {
            sqlx::query_as(
                "SELECT published_version FROM definition_keys \
                 WHERE tenant_id = $1 AND kind = 'workflow' AND key = $2 \
                   AND published_version IS NOT NULL",
            )
            .bind(tenant)
            .bind(&start.definition_key)
            .fetch_optional(&mut **tx)
            .await?
        }
    };
    Ok(found.map(|(version,)| version))
}
