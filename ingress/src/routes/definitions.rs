//! Versioned definitions (docs/definitions-and-runs.md; SPEC shows only their kinds and keys):
//! `POST /definitions/:kind/:key/versions` (the body is the definition; answers 201 with the
//! version, numbered by the definitions stage), `GET /definitions/:kind/:key` (the key and its
//! versions), `GET /definitions/:kind/:key/versions/:version` (one in full) and
//! `POST /definitions/:kind/:key/versions/:version/publish` with an optional `{comment}` (200
//! with the version and the warnings of its checks; 202 with the approval request as well when
//! the tenant's approval settings require approval for the kind; 400 when an app rule calls an
//! asynchronous action).

use http::{Response, StatusCode};
use hyper::body::Incoming;
use serde_json::Value;
use service::http::{Body as HttpBody, response};
use topics::definitions::{Body, CreateVersion, Kind, Publish, PublishReply, is_key};

use crate::auth::Principal;
use crate::body;
use crate::commands::{self, Origin};
use crate::comment;
use crate::error::{Error, Location};
use crate::state::State;

pub(crate) async fn create_version(
    state: &State,
    origin: Origin<'_>,
    (parts, request): (&http::request::Parts, Incoming),
    (kind, key): (&str, &str),
) -> Result<Response<HttpBody>, Error> {
    let (kind, key) = (kind_of(kind)?, key_of(key)?);
    let value: Value = body::json(&parts.headers, request, body::JSON_LIMIT).await?;
    let parsed = Body::parse(kind, value).map_err(|error| {
        let path = body::pointer_of(error.path());
        Error::validation(Location::Body, path, error.into_inner().to_string())
    })?;
    let problems = parsed.problems();
    if !problems.is_empty() {
        let issues = problems
            .into_iter()
            .map(|(path, message)| crate::error::Issue::new(Location::Body, path, message))
            .collect();
        return Err(Error::Validation(issues));
    }
    // The version keeps the body as read: a member sent as `null` is absent, as the document
    // describes it, and the answer and every later read say so.
    let body = serde_json::to_value(&parsed)
        .map_err(|error| Error::Internal(format!("a definition body: {error}")))?;
    let command = CreateVersion {
        kind,
        key: key.to_owned(),
        body,
    };
    let created = commands::submit(state, origin, command).await?;
    Ok(response::json(StatusCode::CREATED, &created))
}

pub(crate) async fn get(
    state: &State,
    principal: &Principal,
    (kind, key): (&str, &str),
) -> Result<Response<HttpBody>, Error> {
    let (kind, key) = (kind_of(kind)?, key_of(key)?);
    let mut connection = state.pool.acquire().await.map_err(readers::Error::from)?;
    let tenant = readers::Tenant::new(principal.tenant);
    let definition = readers::definitions::get(&mut connection, tenant, kind.as_str(), key)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &definition))
}

pub(crate) async fn get_version(
    state: &State,
    principal: &Principal,
    (kind, key, version): (&str, &str, &str),
) -> Result<Response<HttpBody>, Error> {
    let (kind, key, version) = (kind_of(kind)?, key_of(key)?, version_of(version)?);
    let tenant = readers::Tenant::new(principal.tenant);
    let found = readers::definitions::version(&state.pool, tenant, kind.as_str(), key, version)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &found))
}

pub(crate) async fn publish(
    state: &State,
    origin: Origin<'_>,
    (parts, request): (&http::request::Parts, Incoming),
    (kind, key, version): (&str, &str, &str),
) -> Result<Response<HttpBody>, Error> {
    let (kind, key, version) = (kind_of(kind)?, key_of(key)?, version_of(version)?);
    // The optional body is the approval request's comment, should one open.
    let comment = comment::read(parts, request).await?;
    let command = Publish {
        kind,
        key: key.to_owned(),
        version,
        comment,
    };
    Ok(match commands::submit(state, origin, command).await? {
        PublishReply::Published(published) => response::json(StatusCode::OK, &published),
        PublishReply::Requested(requested) => response::json(StatusCode::ACCEPTED, &requested),
    })
}

fn kind_of(kind: &str) -> Result<Kind, Error> {
    Kind::parse(kind).ok_or_else(|| {
        Error::validation(
            Location::Path,
            "kind",
            "must be one of workflow, rule, rule_set, collection_flow",
        )
    })
}

fn key_of(key: &str) -> Result<&str, Error> {
    if is_key(key) {
        Ok(key)
    } else {
        Err(Error::validation(
            Location::Path,
            "key",
            "must be 1 to 100 lowercase letters, digits, '_' or '-', starting with a letter or digit",
        ))
    }
}

fn version_of(version: &str) -> Result<i32, Error> {
    version
        .parse::<i32>()
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| Error::validation(Location::Path, "version", "must be an integer > 0"))
}
