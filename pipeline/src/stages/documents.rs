//! The documents stage: a subject's documents (docs/documents.md), one writer per tenant and
//! subject (`documents.commands`). `Add` records a document whose bytes the API already stored
//! under their sha256, with its audit row `document.added` (the name, type, size and hash; never
//! the bytes), and answers the document.

use serde_json::json;
use topics::Outcome;
use topics::documents::Document;
use topics::documents::{Add, DocumentsCommand};

use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, Stage, applies};

/// Applies the commands of the `documents.commands` topic.
#[derive(Debug, Default)]
pub(crate) struct DocumentsStage;

impl Stage for DocumentsStage {
    type Body = DocumentsCommand;
    type Then = ();
    const NAME: &'static str = "documents";
}

applies!(DocumentsStage: Add => add);

/// Inserts the document and its audit row; answers the document.
async fn add(cx: &mut Context, command: &Add) -> Result<Outcome<Document>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let Add {
        document_id,
        subject_id,
        name,
        content_type,
        size_bytes,
        sha256,
    } = command;
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
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
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
    cx.audit(event);
    let added = readers::documents::get(&mut cx.tx, tenant, *subject_id, *document_id)
        .await?
        .ok_or_else(|| Error::Invalid("the document just added is not there".into()))?;
    Ok(Outcome::done(added))
}
