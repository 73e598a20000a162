//! Redirects are followed by the client itself, not by reqwest, so every hop goes through the same
//! approval, resolver and connected-address checks as the first request. A redirect may only stay
//! on the original scheme, host and port: a vendor (or whoever controls its responses) must not be
//! able to point the runner at another host, approved or not.

use http::header::{self, HeaderMap};
use http::{Method, StatusCode};
use url::Url;

use crate::error::OutboundError;
use crate::hop::Hop;

/// The request a redirect response leads to; `None` when the response is not a redirect to
/// follow (it is then handed to the module as it is, like a 304 or a 3xx without `Location`).
pub(crate) fn next_hop(
    origin: &Url,
    hop: &Hop,
    status: StatusCode,
    headers: &HeaderMap,
) -> Result<Option<Hop>, OutboundError> {
    let rewrites_to_get = match status {
        StatusCode::SEE_OTHER => true,
        // What browsers and reqwest do: a POST answered by 301 or 302 is retried as GET.
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => hop.method == Method::POST,
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => false,
        _ => return Ok(None),
    };
    let Some(location) = headers.get(header::LOCATION) else {
        return Ok(None);
    };
    let url = location
        .to_str()
        .ok()
        .and_then(|location| hop.url.join(location).ok())
        .ok_or_else(|| OutboundError::Transport("the redirect location is not a URL".to_owned()))?;
    if !same_origin(origin, &url) {
        let host = url.host_str().unwrap_or("a URL without host");
        return Err(OutboundError::NotAllowed(format!(
            "redirect to {}://{host} is not allowed: only the original scheme, host and port",
            url.scheme()
        )));
    }
    let mut next = Hop { url, ..hop.clone() };
    if rewrites_to_get && next.method != Method::HEAD {
        next.method = Method::GET;
        next.body = None;
        for name in [
            header::CONTENT_TYPE,
            header::CONTENT_ENCODING,
            header::CONTENT_LANGUAGE,
            header::CONTENT_LOCATION,
        ] {
            next.headers.remove(name);
        }
    }
    Ok(Some(next))
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host() == b.host()
        && a.port_or_known_default() == b.port_or_known_default()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::HeaderValue;

    use super::*;

    fn hop(method: Method, url: &str) -> Hop {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer k"));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Hop {
            method,
            url: Url::parse(url).expect("test URL"),
            headers,
            body: Some(Bytes::from_static(b"{}")),
        }
    }

    fn location(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::LOCATION,
            HeaderValue::from_str(value).expect("value"),
        );
        headers
    }

    fn next(status: u16, from: &Hop, to: &str) -> Result<Option<Hop>, OutboundError> {
        let status = StatusCode::from_u16(status).expect("status");
        next_hop(&from.url, from, status, &location(to))
    }

    #[test]
    fn follows_relative_and_absolute_locations_on_the_same_origin() {
        let from = hop(Method::GET, "https://api.vendor.com/a/b");
        let to = next(302, &from, "c?x=1")
            .expect("allowed")
            .expect("followed");
        assert_eq!(to.url.as_str(), "https://api.vendor.com/a/c?x=1");
        let to = next(301, &from, "https://API.vendor.com:443/z")
            .expect("allowed")
            .expect("followed");
        assert_eq!(to.url.as_str(), "https://api.vendor.com/z");
        assert!(to.headers.contains_key(header::AUTHORIZATION));
    }

    #[test]
    fn refuses_another_scheme_host_or_port() {
        let from = hop(Method::GET, "http://127.0.0.1:8080/");
        for to in [
            "http://localhost:8080/",
            "http://127.0.0.1:8081/",
            "https://127.0.0.1:8080/",
            "http://2130706433:9/",
            "//evil.example/",
            "http://169.254.169.254/latest/meta-data/",
            "file:///etc/passwd",
        ] {
            let refused = next(302, &from, to).expect_err(to);
            assert_eq!(refused.code(), "not_allowed", "{to}");
        }
    }

    #[test]
    fn see_other_and_post_on_found_become_get_without_body() {
        let post = hop(Method::POST, "https://api.vendor.com/");
        for status in [301, 302, 303] {
            let to = next(status, &post, "/next")
                .expect("allowed")
                .expect("followed");
            assert_eq!(to.method, Method::GET, "{status}");
            assert_eq!(to.body, None);
            assert!(!to.headers.contains_key(header::CONTENT_TYPE));
        }
        let put = hop(Method::PUT, "https://api.vendor.com/");
        let to = next(302, &put, "/next")
            .expect("allowed")
            .expect("followed");
        assert_eq!(to.method, Method::PUT);
        let head = hop(Method::HEAD, "https://api.vendor.com/");
        let to = next(303, &head, "/next")
            .expect("allowed")
            .expect("followed");
        assert_eq!(to.method, Method::HEAD);
    }

    #[test]
    fn temporary_and_permanent_redirects_keep_method_and_body() {
        let post = hop(Method::POST, "https://api.vendor.com/");
        for status in [307, 308] {
            let to = next(status, &post, "/next")
                .expect("allowed")
                .expect("followed");
            assert_eq!(to.method, Method::POST);
            assert_eq!(to.body, Some(Bytes::from_static(b"{}")));
        }
    }

    #[test]
    fn other_statuses_and_missing_locations_are_not_followed() {
        let from = hop(Method::GET, "https://api.vendor.com/");
        assert!(next(200, &from, "/x").expect("ok").is_none());
        assert!(next(304, &from, "/x").expect("ok").is_none());
        assert!(next(300, &from, "/x").expect("ok").is_none());
        let none = next_hop(&from.url, &from, StatusCode::FOUND, &HeaderMap::new());
        assert!(none.expect("ok").is_none());
    }
}
