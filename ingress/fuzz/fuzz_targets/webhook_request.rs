//! Arbitrary vendor webhooks through what the edge reads of them before any module runs
//! (`POST /webhooks/apps/:app`, SPEC §4.8): the external id from the query or where a version
//! declares it, the event id, and the request object a module is handed. Never a panic; an id
//! read is 1 to 200 characters without U+0000; the request carries lower-case header names of
//! at most 100 characters and values of at most 8 KiB.

#![no_main]

use arbitrary::Arbitrary;
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Debug, Arbitrary)]
struct Webhook {
    headers: Vec<(String, Vec<u8>)>,
    query: Option<String>,
    body: Vec<u8>,
    place: Place,
}

/// Where a version declares the external id (`handles.webhookExternalId`).
#[derive(Debug, Arbitrary)]
enum Place {
    Json(String),
    Header(String),
    Query(String),
    Nothing,
}

fuzz_target!(|webhook: Webhook| {
    let mut headers = HeaderMap::new();
    for (name, value) in &webhook.headers {
        // What hyper would have refused never reaches the route.
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    let declared = match &webhook.place {
        Place::Json(pointer) => json!({"json": pointer}),
        Place::Header(name) => json!({"header": name}),
        Place::Query(name) => json!({"query": name}),
        Place::Nothing => Value::Null,
    };
    let read = ingress::fuzzing::webhook(
        &headers,
        webhook.query.as_deref(),
        &webhook.body,
        &declared,
    );
    for id in [&read.url_external_id, &read.declared_external_id, &read.event_id]
        .into_iter()
        .flatten()
    {
        let chars = id.chars().count();
        assert!((1..=200).contains(&chars) && !id.contains('\0'), "{id:?}");
    }
    let sent = read.request["headers"].as_object().expect("headers");
    for (name, value) in sent {
        assert!(name.len() <= 100 && name.to_lowercase() == *name, "{name}");
        assert!(value.as_str().is_some_and(|v| v.len() <= 8192), "{name}");
    }
});
