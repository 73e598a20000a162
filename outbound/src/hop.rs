//! One HTTP exchange the client performs: the module's request, checked and parsed once, or the
//! request a followed redirect leads to.

use bytes::Bytes;
use http::Method;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

use crate::error::OutboundError;
use crate::limits::MAX_REQUEST_BYTES;
use crate::message::OutboundRequest;

/// Methods a module may use. CONNECT would turn the vendor into a tunnel and TRACE echoes the
/// request (with its secrets) back; neither has a use in an API call.
const METHODS: [Method; 7] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
];

/// Headers the runner owns. `host` must be the approved host the URL names, and the framing
/// headers must describe the body actually sent; letting a module set them would allow virtual
/// host confusion or request smuggling at the vendor.
const RESERVED_HEADERS: [&str; 9] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

#[derive(Debug, Clone)]
pub(crate) struct Hop {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Option<Bytes>,
}

impl Hop {
    /// Checks a module's request; approval of the host is decided per hop by the client.
    pub(crate) fn from_request(request: OutboundRequest) -> Result<Self, OutboundError> {
        if request
            .body
            .as_ref()
            .is_some_and(|body| body.len() > MAX_REQUEST_BYTES)
        {
            return Err(OutboundError::TooLarge);
        }
        Ok(Self {
            method: parse_method(&request.method)?,
            url: parse_url(&request.url)?,
            headers: parse_headers(request.headers)?,
            body: request.body,
        })
    }
}

fn parse_method(method: &str) -> Result<Method, OutboundError> {
    let upper = method.to_ascii_uppercase();
    METHODS
        .into_iter()
        .find(|allowed| allowed.as_str() == upper)
        .ok_or_else(|| invalid(format!("method {upper} is not allowed")))
}

fn parse_url(url: &str) -> Result<Url, OutboundError> {
    // The parse error names what is wrong, never the URL, whose query may hold a secret.
    Url::parse(url).map_err(|err| invalid(format!("the URL is not valid: {err}")))
}

fn parse_headers(headers: Vec<(String, String)>) -> Result<HeaderMap, OutboundError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid("a header name is not valid".to_owned()))?;
        if RESERVED_HEADERS.contains(&name.as_str()) {
            return Err(invalid(format!("header {name} is set by the runner")));
        }
        // Rejects CR and LF, so a value cannot smuggle another header.
        let value = HeaderValue::from_str(&value)
            .map_err(|_| invalid(format!("the value of header {name} is not valid")))?;
        map.append(name, value);
    }
    Ok(map)
}

fn invalid(reason: String) -> OutboundError {
    OutboundError::InvalidRequest(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, url: &str, headers: &[(&str, &str)]) -> OutboundRequest {
        OutboundRequest {
            method: method.to_owned(),
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: None,
        }
    }

    fn invalid_reason(request: OutboundRequest) -> String {
        match Hop::from_request(request) {
            Err(OutboundError::InvalidRequest(reason)) => reason,
            other => panic!("expected invalid_request, got {other:?}"),
        }
    }

    #[test]
    fn parses_a_plain_request() {
        let hop = Hop::from_request(request(
            "post",
            "https://api.vendor.com/v1?q=1",
            &[
                ("Content-Type", "application/json"),
                ("X-Multi", "a"),
                ("x-multi", "b"),
            ],
        ))
        .expect("valid");
        assert_eq!(hop.method, Method::POST);
        assert_eq!(hop.url.as_str(), "https://api.vendor.com/v1?q=1");
        assert_eq!(hop.headers.get_all("x-multi").iter().count(), 2);
    }

    #[test]
    fn refuses_tunnel_and_echo_methods_and_nonsense() {
        for method in ["CONNECT", "TRACE", "", "GET POST", "FETCH"] {
            invalid_reason(request(method, "https://api.vendor.com/", &[]));
        }
    }

    #[test]
    fn refuses_headers_the_runner_owns() {
        for name in [
            "Host",
            "content-length",
            "Transfer-Encoding",
            "connection",
            "upgrade",
        ] {
            let reason = invalid_reason(request("GET", "https://a.b/", &[(name, "x")]));
            assert!(reason.contains(&name.to_ascii_lowercase()), "{reason}");
        }
    }

    #[test]
    fn refuses_bad_headers_without_echoing_values() {
        let reason = invalid_reason(request(
            "GET",
            "https://a.b/",
            &[("authorization", "Bearer SECRET\r\nX-Injected: 1")],
        ));
        assert!(!reason.contains("SECRET"), "{reason}");
        assert!(reason.contains("authorization"), "{reason}");
        invalid_reason(request("GET", "https://a.b/", &[("bad name", "x")]));
    }

    #[test]
    fn refuses_bad_urls_without_echoing_them() {
        let reason = invalid_reason(request("GET", "https://a.b:99999/?key=SECRET", &[]));
        assert!(!reason.contains("SECRET"), "{reason}");
        invalid_reason(request("GET", "/relative", &[]));
    }

    #[test]
    fn request_bodies_are_capped_at_eight_mebibytes() {
        let mut at_limit = request("POST", "https://a.b/", &[]);
        at_limit.body = Some(Bytes::from(vec![0; MAX_REQUEST_BYTES]));
        assert!(Hop::from_request(at_limit).is_ok());

        let mut over = request("POST", "https://a.b/", &[]);
        over.body = Some(Bytes::from(vec![0; MAX_REQUEST_BYTES + 1]));
        assert_eq!(Hop::from_request(over).err(), Some(OutboundError::TooLarge));
    }
}
