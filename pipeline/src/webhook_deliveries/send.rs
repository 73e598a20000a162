//! One attempt of a delivery: the event's body, signed with each secret that signs (Standard
//! Webhooks, `outbound::signing`), sent through the same client and address defences as a
//! vendor request (`outbound`), to the endpoint's own host only, within the receiver timeout.
//! A 2xx answer is a success; anything else (a redirect too: it is not followed), or no answer,
//! a failure. Of the receiver's body only a short prefix is read and kept.

use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use outbound::{
    Loopback, OutboundClient, OutboundRequest, SigningSecret, Taking, endpoint_hosts,
    signature_header,
};
use serde_json::json;
use topics::sealed::SecretKeys;
use topics::webhook_endpoints::secret_binding;

use super::claim::Due;

/// How long a receiver has to answer (SPEC §6.2).
const RECEIVER_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a receiver's body an attempt keeps.
const RESPONSE_PREFIX_BYTES: usize = 256;

const USER_AGENT: &str = concat!("apps-platform-webhooks/", env!("CARGO_PKG_VERSION"));

/// What an attempt came to.
#[derive(Debug)]
pub(super) struct Attempted {
    pub(super) started_at: DateTime<Utc>,
    pub(super) duration_ms: f64,
    pub(super) status_code: Option<i32>,
    pub(super) error: Option<String>,
    pub(super) response_prefix: Option<String>,
}

impl Attempted {
    pub(super) fn succeeded(&self) -> bool {
        self.error.is_none()
    }
}

/// Why a delivery was not attempted at all.
#[derive(Debug)]
pub(super) enum NotSent {
    /// No secret of the endpoint opens with this worker's keys: another worker may hold them.
    Unsigned,
}

/// Attempts `due` once.
pub(super) async fn attempt(
    client: &OutboundClient,
    keys: &SecretKeys,
    loopback: Loopback,
    due: &Due,
) -> Result<Attempted, NotSent> {
    let secrets = open_secrets(keys, due)?;
    let started_at = Utc::now();
    let started = Instant::now();
    let answered = match request(due, &secrets, started_at.timestamp()) {
        Ok(request) => send(client, loopback, &due.url, request).await,
        Err(error) => Err(error),
    };
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(match answered {
        Ok((status, prefix)) => Attempted {
            started_at,
            duration_ms,
            status_code: Some(i32::from(status)),
            error: (!(200..300).contains(&status))
                .then(|| format!("the endpoint answered {status}")),
            response_prefix: Some(prefix),
        },
        Err(error) => Attempted {
            started_at,
            duration_ms,
            status_code: None,
            error: Some(error),
            response_prefix: None,
        },
    })
}

/// The secrets that sign, current first; none opening means this worker lacks the key.
fn open_secrets(keys: &SecretKeys, due: &Due) -> Result<Vec<SigningSecret>, NotSent> {
    let endpoint = due.endpoint_id.to_string();
    let opened: Vec<SigningSecret> = due
        .secrets
        .iter()
        .filter_map(|sealed| {
            keys.open(secret_binding(due.tenant_id, &endpoint), sealed)
                .ok()
        })
        .filter_map(|text| SigningSecret::parse(&text).ok())
        .collect();
    if opened.is_empty() {
        return Err(NotSent::Unsigned);
    }
    Ok(opened)
}

/// The signed request: the event as `{id, type, timestamp, tenantId, data}`.
fn request(
    due: &Due,
    secrets: &[SigningSecret],
    timestamp: i64,
) -> Result<OutboundRequest, String> {
    let event = &due.event;
    let body = json!({
        "id": event.id,
        "type": event.kind,
        "timestamp": event.occurred_at,
        "tenantId": due.tenant_id,
        "data": event.data,
    });
    let body = serde_json::to_vec(&body).map_err(|error| format!("the body: {error}"))?;
    let id = event.id.to_string();
    let signature = signature_header(secrets, &id, timestamp, &body);
    Ok(OutboundRequest {
        method: "POST".to_owned(),
        url: due.url.clone(),
        headers: vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("user-agent".to_owned(), USER_AGENT.to_owned()),
            ("webhook-id".to_owned(), id),
            ("webhook-timestamp".to_owned(), timestamp.to_string()),
            ("webhook-signature".to_owned(), signature),
        ],
        body: Some(Bytes::from(body)),
    })
}

/// Sends `request` to the endpoint's host alone; answers the status and the body's prefix, or
/// what went wrong (never more than a host name: the URL's query may hold a token).
async fn send(
    client: &OutboundClient,
    loopback: Loopback,
    url: &str,
    request: OutboundRequest,
) -> Result<(u16, String), String> {
    let parsed = url::Url::parse(url).map_err(|_| "the endpoint URL does not parse".to_owned())?;
    let hosts = endpoint_hosts(&parsed, loopback).map_err(|error| error.to_string())?;
    let taking = Taking::Delivery {
        prefix: RESPONSE_PREFIX_BYTES,
    };
    let response = client
        .send_taking(&hosts, request, RECEIVER_TIMEOUT, taking)
        .await
        .map_err(|error| error.to_string())?;
    Ok((response.status, storable(&response.body)))
}

/// The receiver's bytes as text a `text` column takes: invalid UTF-8 and NUL (which Postgres
/// refuses in text) replaced, so no receiver can make its attempt unrecordable.
fn storable(body: &[u8]) -> String {
    String::from_utf8_lossy(body).replace('\0', "\u{fffd}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_body_is_kept_as_storable_text() {
        assert_eq!(storable(b"ok\0\xff!"), "ok\u{fffd}\u{fffd}!");
    }
}
