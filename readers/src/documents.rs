//! A subject's documents (docs/documents.md): the record people see ([`Document`]), and what a
//! call of an app that declares `needs: ['documents']` sees of them ([`CallDocument`], the
//! runner's `document_list` items). Newest first. Always the tenant's and one subject's: a
//! document of another subject or tenant is absent.

use chrono::{DateTime, Utc};
use serde::Serialize;
// Dynamic SQL here is only ever built from this module's constant texts.
use sqlx::{AssertSqlSafe, PgConnection};
use topics::documents::Document;
use uuid::Uuid;

use crate::row::row_of;
use crate::{Error, ListPage, Page, Tenant};

/// Most documents one call's list names (the newest); a module reads at most ten anyway.
pub const CALL_LIST_LIMIT: i64 = 100;

row_of! {
    /// A row of `documents`.
    struct DocumentRow => Document {
        id: Uuid,
        subject_id: Uuid,
        name: String,
        content_type: String,
        size_bytes: i64,
        sha256: String,
        created_by: String,
        created_at: DateTime<Utc>,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct CallDocument {
    pub id: Uuid,
    pub name: String,
    pub content_type: String,
    pub size: i64,
}

const COLUMNS: &str =
    "id, subject_id, name, content_type, size_bytes, sha256, created_by, created_at";

/// The tenant's document `id` of `subject`.
pub async fn get(
    connection: &mut PgConnection,
    tenant: Tenant,
    subject: Uuid,
    id: Uuid,
) -> Result<Option<Document>, Error> {
    let row: Option<DocumentRow> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM documents WHERE tenant_id = $1 AND subject_id = $2 AND id = $3"
    )))
    .bind(tenant.id())
    .bind(subject)
    .bind(id)
    .fetch_optional(connection)
    .await?;
    Ok(row.map(Document::from))
}

/// A page of the subject's documents, newest first.
pub async fn list(
    connection: &mut PgConnection,
    tenant: Tenant,
    subject: Uuid,
    page: Page,
) -> Result<ListPage<Document>, Error> {
    let rows: Vec<DocumentRow> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM documents WHERE tenant_id = $1 AND subject_id = $2 \
         ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
    )))
    .bind(tenant.id())
    .bind(subject)
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(&mut *connection)
    .await?;
    let total: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM documents WHERE tenant_id = $1 AND subject_id = $2",
    )
    .bind(tenant.id())
    .bind(subject)
    .fetch_one(&mut *connection)
    .await?;
    Ok(ListPage {
        items: rows.into_iter().map(Document::from).collect(),
        total,
        total_is_estimate: None,
    })
}

/// The documents a call of the subject may read: the newest [`CALL_LIST_LIMIT`].
pub async fn for_call(
    connection: &mut PgConnection,
    tenant: Tenant,
    subject: Uuid,
) -> Result<Vec<CallDocument>, Error> {
    Ok(sqlx::query_as(
        "SELECT id, name, content_type, size_bytes AS size FROM documents \
         WHERE tenant_id = $1 AND subject_id = $2 \
         ORDER BY created_at DESC, id DESC LIMIT $3",
    )
    .bind(tenant.id())
    .bind(subject)
    .bind(CALL_LIST_LIMIT)
    .fetch_all(connection)
    .await?)
}
