//! The documents stage: a subject's documents (README "Documents"), one writer per tenant and
//! subject (`documents.commands`). `Add` records a document whose bytes the API already stored
//! under their sha256, with its audit row `document.added` (the name, type, size and hash; never
//! the bytes), and answers the document.

use async_trait::async_trait;
use readers::documents::Document;
use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::documents::Command;
use topics::{Envelope, Outcome};

use crate::Error;
use crate::audit::{self, AuditEvent};
use crate::stage::{Applied, Stage, tenant_of};

/// Applies [`Command`]s of the `documents.commands` topic.
#[derive(Debug, Default)]
pub(crate) struct DocumentsStage;

#[async_trait]
impl Stage for DocumentsStage {
    type Body = Command;
    type Then = ();
    const NAME: &'static str = "documents";

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Applied<Document>, Error> {
        self.outcome(tx, command).await.map(Applied::from)
    }
}

impl DocumentsStage {
    /// What applying `command` comes to.
    async fn outcome(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Outcome<Document>, Error> {
        let tenant = readers::Tenant::new(tenant_of::<Self>(command)?);
        add(tx, command, tenant).await
    }
}

/// Inserts the document and its audit row; answers the document.
async fn add(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: readers::Tenant,
) -> Result<Outcome<Document>, Error> {
    let Command::Add {
        document_id,
        subject_id,
        name,
        content_type,
        size_bytes,
        sha256,
    } = &command.body;
    let size = i64::try_from(*size_bytes)
        .map_err(|_| Error::Invalid(format!("a document of {size_bytes} bytes")))?;
    sqlx::query(
        "INSERT INTO documents (id, tenant_id, subject_id, name, content_type, size_bytes, \
         sha256, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())",
    )
    .bind(document_id)
    .bind(tenant.id())
    .bind(subject_id)
    .bind(name)
    .bind(content_type)
    .bind(size)
    .bind(sha256)
    .bind(&command.principal.id)
    .execute(&mut **tx)
    .await?;
    let event = AuditEvent {
        action: "document.added",
        subject_type: "document",
        subject_id: document_id.to_string(),
        payload: json!({
            "subjectId": subject_id,
            "name": name,
            "contentType": content_type,
            "sizeBytes": size,
            "sha256": sha256,
        }),
    };
    audit::record(tx, command, event).await?;
    let added = readers::documents::get(tx, tenant, *subject_id, *document_id)
        .await?
        .ok_or_else(|| Error::Invalid("the document just added is not there".into()))?;
    Ok(Outcome::done(added))
}
