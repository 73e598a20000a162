//! `document_list(filter) -> list` and `document_read(id) -> document`: the call's documents,
//! fetched from the API's internal listener. Both count as reads (10 per call).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use wasmtime::Caller;

use super::{failure, reply_json};
use crate::call::CallState;
use crate::documents::{DocumentAccess, MAX_READS_PER_CALL};
use crate::internal_api::FetchError;
use crate::kernel::text_argument;

pub(crate) fn document_list(
    mut c: Caller<'_, CallState>,
    (_filter,): (i64,),
) -> Box<dyn Future<Output = wasmtime::Result<i64>> + Send + '_> {
    Box::new(async move {
        let answer = match take_read(c.data_mut()) {
            Ok((access, timeout)) => match access
                .api
                .documents(&access.call_id, &access.token, timeout)
                .await
            {
                Ok(list) => list,
                Err(error) => fetch_failure(&error),
            },
            Err(refusal) => refusal,
        };
        reply_json(&mut c, &answer)
    })
}

pub(crate) fn document_read(
    mut c: Caller<'_, CallState>,
    (id,): (i64,),
) -> Box<dyn Future<Output = wasmtime::Result<i64>> + Send + '_> {
    Box::new(async move {
        let id = text_argument(&c, id, "document id")?;
        let answer = if uuid::Uuid::try_parse(&id).is_err() {
            failure("invalid_request", "a document id is a UUID")
        } else {
            match take_read(c.data_mut()) {
                Ok((access, timeout)) => match access
                    .api
                    .document(&access.call_id, &id, &access.token, timeout)
                    .await
                {
                    Ok(document) => json!({
                        "id": id,
                        "contentType": document.content_type,
                        "size": document.body.len(),
                        "bodyBase64": BASE64.encode(&document.body),
                    }),
                    Err(error) => fetch_failure(&error),
                },
                Err(refusal) => refusal,
            }
        };
        reply_json(&mut c, &answer)
    })
}

/// Counts one read, or answers why none is allowed.
fn take_read(state: &mut CallState) -> Result<(DocumentAccess, Duration), Value> {
    let Some(access) = state.context.documents.clone() else {
        return Err(failure(
            "not_allowed",
            "documents are available only to apps that declare needs: ['documents']",
        ));
    };
    if state.document_reads >= MAX_READS_PER_CALL {
        return Err(failure(
            "too_many_reads",
            format!("at most {MAX_READS_PER_CALL} document reads per call"),
        ));
    }
    let remaining = state.remaining();
    if remaining.is_zero() {
        return Err(failure("timeout", "the call's deadline has passed"));
    }
    state.document_reads += 1;
    Ok((access, remaining))
}

fn fetch_failure(error: &FetchError) -> Value {
    failure(error.code(), format!("document fetch failed: {error}"))
}
