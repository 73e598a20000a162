//! A subject's documents (README "Documents"): the record people see ([`Document`]), and what a
//! call of an app that declares `needs: ['documents']` sees of them ([`CallDocument`], the
//! runner's `document_list` items). Newest first. Always the tenant's and one subject's: a
//! document of another subject or tenant is absent.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
// Dynamic SQL here is only ever built from this module's constant texts.
use sqlx::{AssertSqlSafe, PgConnection};
use uuid::Uuid;

use crate::{Error, ListPage, Page, Tenant};

/// Most documents one call's list names (the newest); a module reads at most ten anyway.
pub const CALL_LIST_LIMIT: i64 = 100;

/// A document as its routes answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    pub id: Uuid,
    pub subject_id: Uuid,
    pub name: String,
    pub content_type: String,
    pub size_bytes: i64,
    pub sha256: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

/// A document as a call lists it (runner ABI `document_list`).
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
    Ok(sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM documents WHERE tenant_id = $1 AND subject_id = $2 AND id = $3"
    )))
    .bind(tenant.id())
    .bind(subject)
    .bind(id)
    .fetch_optional(connection)
    .await?)
}

/// A page of the subject's documents, newest first.
pub async fn list(
    connection: &mut PgConnection,
    tenant: Tenant,
    subject: Uuid,
    page: Page,
) -> Result<ListPage<Document>, Error> {
    let items: Vec<Document> = sqlx::query_as(AssertSqlSafe(format!(
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
        items,
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
