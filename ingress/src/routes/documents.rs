//! A subject's documents (docs/documents.md; SPEC shows only their fetch by the runner):
//! `POST /subjects/:subjectId/documents?name=` takes the bytes as the body with their
//! `content-type` (`application/octet-stream` when absent), at most 16 MiB (the most a call may
//! read); stores them in object storage under the tenant and their sha256, then produces the
//! add command, whose stage records the document with its audit row; answers 201 with the
//! document. `GET /subjects/:subjectId/documents` lists them, newest first;
//! `GET /subjects/:subjectId/documents/:id` answers the bytes as a download.

use http::header::{
    CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, LOCATION,
    X_CONTENT_TYPE_OPTIONS,
};
use http::{Response, StatusCode};
use readers::documents;
use readers::{Page, Tenant};
use schema::module::Sha256;
use service::http::{Body, response};
use topics::documents::{Add, Document, MAX_DOCUMENT_BYTES};
use uuid::Uuid;

use super::app_invocations::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::body;
use crate::call::Call;
use crate::commands;
use crate::error::{Error, Location};
use crate::object_store::{ObjectStore, StoreError};
use crate::path;
use crate::query::{MAX_OFFSET, Query};
use crate::state::State;

/// The type of a body sent without one.
const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";
/// Longest name and content type kept.
const MAX_TEXT_CHARS: usize = 255;

pub(crate) async fn add(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, subject, parts, request) = (
        call.state,
        call.origin(),
        call.param("subjectId"),
        &call.parts,
        call.body,
    );
    let subject_id = path::id("subjectId", subject)?;
    let name = name_of(parts.uri.query())?;
    let content_type = content_type_of(parts.headers.get(CONTENT_TYPE))?;
    let objects = objects(state)?;
    let bytes = body::read(&parts.headers, request, MAX_DOCUMENT_BYTES).await?;
    if bytes.is_empty() {
        return Err(Error::validation(Location::Body, "", "must not be empty"));
    }
    let sha256 = Sha256::of(&bytes);
    let size_bytes = bytes.len() as u64;
    let key = ObjectStore::document_key(origin.caller.tenant, &sha256);
    objects
        .put(&key, bytes.to_vec())
        .await
        .map_err(|error| Error::Unavailable(format!("object storage: {error}")))?;
    let command = Add {
        document_id: Uuid::now_v7(),
        subject_id,
        name,
        content_type,
        size_bytes,
        sha256: sha256.to_string(),
    };
    let document = commands::submit(&state.commands, origin, command).await?;
    let mut answer = response::json(StatusCode::CREATED, &document);
    let location = format!("/subjects/{subject_id}/documents/{}", document.id);
    if let Ok(value) = HeaderValue::from_str(&location) {
        answer.headers_mut().insert(LOCATION, value);
    }
    Ok(answer)
}

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, subject, raw_query) = (
        call.state,
        call.principal,
        call.param("subjectId"),
        call.query(),
    );
    let subject_id = path::id("subjectId", subject)?;
    let mut query = Query::parse(raw_query);
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    let offset = query.integer("offset", 0, MAX_OFFSET, 0);
    query.finish()?;
    let tenant = Tenant::new(principal.tenant);
    let mut connection = state.reads.connection().await?;
    let page = documents::list(&mut connection, tenant, subject_id, Page { limit, offset }).await?;
    Ok(response::json(StatusCode::OK, &page))
}

pub(crate) async fn read(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, subject, id) = (
        call.state,
        call.principal,
        call.param("subjectId"),
        call.param("id"),
    );
    let subject_id = path::id("subjectId", subject)?;
    let id = path::id("id", id)?;
    let tenant = Tenant::new(principal.tenant);
    let mut connection = state.reads.connection().await?;
    let document = documents::get(&mut connection, tenant, subject_id, id)
        .await?
        .ok_or(Error::NotFound)?;
    drop(connection);
    let mut answer = bytes_of(state, tenant, &document).await?;
    // Stored bytes of any type, from the API's own origin: downloaded, never rendered.
    let headers = answer.headers_mut();
    headers.insert(CONTENT_DISPOSITION, HeaderValue::from_static("attachment"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    Ok(answer)
}

/// The document's bytes with its content type, streamed from object storage.
pub(crate) async fn bytes_of(
    state: &State,
    tenant: Tenant,
    document: &Document,
) -> Result<Response<Body>, Error> {
    let sha256: Sha256 = document
        .sha256
        .parse()
        .map_err(|_| Error::Internal(format!("document {} has no valid sha256", document.id)))?;
    let key = ObjectStore::document_key(tenant.id(), &sha256);
    let object = match objects(state)?.get(&key).await {
        Ok(object) => object,
        Err(StoreError::NotFound) => {
            return Err(Error::Internal(format!(
                "the bytes of document {} are missing from object storage",
                document.id
            )));
        }
        Err(StoreError::Unavailable(reason)) => return Err(Error::Unavailable(reason)),
    };
    let length = object.length;
    let mut answer = Response::new(object.streamed());
    let headers = answer.headers_mut();
    let content_type = HeaderValue::from_str(&document.content_type)
        .unwrap_or(HeaderValue::from_static(DEFAULT_CONTENT_TYPE));
    headers.insert(CONTENT_TYPE, content_type);
    if let Some(length) = length {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    }
    Ok(answer)
}

fn objects(state: &State) -> Result<&ObjectStore, Error> {
    state
        .apps
        .objects
        .as_ref()
        .ok_or_else(|| Error::Unavailable("no object storage configured".into()))
}

/// `?name=`: 1 to 255 characters, none of them a control character.
fn name_of(raw_query: Option<&str>) -> Result<String, Error> {
    let mut query = Query::parse(raw_query);
    let name = query.one("name").map(|name| name.into_owned());
    match &name {
        None => query.reject("name", "is required"),
        Some(name) if !is_document_name(name) => query.reject(
            "name",
            "must be 1 to 255 characters, none of them a control character",
        ),
        Some(_) => {}
    }
    query.finish()?;
    Ok(name.unwrap_or_default())
}

fn is_document_name(name: &str) -> bool {
    (1..=MAX_TEXT_CHARS).contains(&name.chars().count()) && !name.chars().any(char::is_control)
}

/// The body's media type as sent (`type/subtype`, parameters kept), or the default.
fn content_type_of(header: Option<&HeaderValue>) -> Result<String, Error> {
    let Some(header) = header else {
        return Ok(DEFAULT_CONTENT_TYPE.to_owned());
    };
    let text = header.to_str().map(str::trim).unwrap_or_default();
    if is_media_type(text) {
        Ok(text.to_owned())
    } else {
        Err(Error::validation(
            Location::Header,
            "content-type",
            "must be a media type such as application/pdf, at most 255 characters",
        ))
    }
}

/// `type/subtype` of RFC 9110 token characters, then optional `;` parameters.
fn is_media_type(text: &str) -> bool {
    let essence = text.split(';').next().unwrap_or_default().trim();
    let is_token = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    text.len() <= MAX_TEXT_CHARS
        && essence
            .split_once('/')
            .is_some_and(|(kind, subtype)| is_token(kind) && is_token(subtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_printable_text() {
        assert!(is_document_name("passport.pdf"));
        assert!(is_document_name("Пасп  орт ✓.png"));
        assert!(is_document_name(&"é".repeat(255)));
        assert!(!is_document_name(""));
        assert!(!is_document_name(&"a".repeat(256)));
        assert!(!is_document_name("a\nb"));
        assert!(!is_document_name("a\0b"));
        assert!(name_of(Some("name=a.pdf")).is_ok());
        assert!(name_of(None).is_err());
        assert!(name_of(Some("name=a.pdf&name=b.pdf")).is_err());
        assert!(name_of(Some("name=a.pdf&other=1")).is_err());
    }

    #[test]
    fn content_types_are_media_types_kept_as_sent() {
        let typed = |text: &'static str| content_type_of(Some(&HeaderValue::from_static(text)));
        assert_eq!(typed("application/pdf").expect("ok"), "application/pdf");
        assert_eq!(
            typed(" text/plain; charset=utf-8 ").expect("ok"),
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            content_type_of(None).expect("default"),
            "application/octet-stream"
        );
        for bad in ["pdf", "/pdf", "application/", "a b/c", ""] {
            assert!(typed(bad).is_err(), "{bad:?}");
        }
    }
}
