//! Vendor HTTP from a call: the one path both the kernel's `http_request` and the platform's
//! `http_send` take, so that both count against the same 25 requests and deadline.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;
use serde_json::{Value, json};
use wasmtime::Caller;

use super::{failure, reply_json};
use crate::call::CallState;
use crate::kernel::argument;
use outbound::{OutboundError, OutboundRequest, OutboundResponse, request_timeout};

/// Sends `request` within the call's budget and remaining deadline; the module's fiber waits
/// for the answer while its worker serves other tasks.
pub(crate) async fn send(
    state: &mut CallState,
    request: OutboundRequest,
    requested_timeout_ms: Option<u64>,
) -> Result<OutboundResponse, OutboundError> {
    let Some(outbound) = state.context.outbound.clone() else {
        return Err(OutboundError::NotAllowed(
            "vendor HTTP is not available to this export".into(),
        ));
    };
    state.http_budget.try_take()?;
    let timeout = request_timeout(requested_timeout_ms, state.remaining());
    outbound
        .client
        .send(&outbound.hosts, request, timeout)
        .await
}

/// `http_send` request (ABI.md).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SendRequest {
    #[serde(default)]
    method: Option<String>,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    body_base64: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

pub(crate) fn http_send(
    mut c: Caller<'_, CallState>,
    (request,): (i64,),
) -> Box<dyn Future<Output = wasmtime::Result<i64>> + Send + '_> {
    Box::new(async move {
        let bytes = argument(&c, request, "http_send request")?;
        let answer = match parse(&bytes) {
            Ok((request, timeout_ms)) => match send(c.data_mut(), request, timeout_ms).await {
                Ok(response) => response_json(response),
                Err(error) => failure(error.code(), error.to_string()),
            },
            Err(message) => failure("invalid_request", message),
        };
        reply_json(&mut c, &answer)
    })
}

fn parse(bytes: &[u8]) -> Result<(OutboundRequest, Option<u64>), String> {
    let request: SendRequest =
        serde_json::from_slice(bytes).map_err(|e| format!("not a valid request: {e}"))?;
    let body = match (request.body, request.body_base64) {
        (Some(_), Some(_)) => return Err("give body or bodyBase64, not both".into()),
        (Some(text), None) => Some(text.into_bytes().into()),
        (None, Some(encoded)) => Some(
            BASE64
                .decode(encoded)
                .map_err(|_| "bodyBase64 is not base64".to_owned())?
                .into(),
        ),
        (None, None) => None,
    };
    Ok((
        OutboundRequest {
            method: request
                .method
                .unwrap_or_else(|| "GET".to_owned())
                .to_ascii_uppercase(),
            url: request.url,
            headers: request.headers.into_iter().collect(),
            body,
        },
        request.timeout_ms,
    ))
}

/// `{status, headers, body}` with the body as text when it is UTF-8, else `bodyBase64`.
fn response_json(response: OutboundResponse) -> Value {
    let headers: BTreeMap<String, String> = response.headers.into_iter().collect();
    match String::from_utf8(response.body.to_vec()) {
        Ok(text) => json!({ "status": response.status, "headers": headers, "body": text }),
        Err(_) => json!({
            "status": response.status,
            "headers": headers,
            "bodyBase64": BASE64.encode(&response.body),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_with_text_or_base64_bodies() {
        let (request, timeout) = parse(
            br#"{"method":"post","url":"https://api.example.com/x","headers":{"a":"b"},"body":"hi","timeoutMs":500}"#,
        )
        .expect("valid");
        assert_eq!(request.method, "POST");
        assert_eq!(request.body.as_deref(), Some(&b"hi"[..]));
        assert_eq!(timeout, Some(500));
        let (request, _) =
            parse(br#"{"url":"https://a.example.com","bodyBase64":"AAE="}"#).expect("valid");
        assert_eq!(request.method, "GET");
        assert_eq!(request.body.as_deref(), Some(&[0u8, 1][..]));
        assert!(parse(br#"{"url":"x","body":"a","bodyBase64":"AA=="}"#).is_err());
        assert!(parse(br#"{"url":"x","colour":"red"}"#).is_err());
        assert!(parse(b"not json").is_err());
    }

    #[test]
    fn binary_bodies_come_back_as_base64() {
        let text = response_json(OutboundResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: bytes::Bytes::from_static(b"ok"),
        });
        assert_eq!(text["body"], "ok");
        let binary = response_json(OutboundResponse {
            status: 201,
            headers: vec![],
            body: bytes::Bytes::from_static(&[0xff, 0xfe]),
        });
        assert_eq!(binary["bodyBase64"], "//4=");
        assert_eq!(binary["status"], 201);
    }
}
