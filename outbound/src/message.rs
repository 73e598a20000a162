//! A vendor request as a module describes it, and the response handed back. Their `Debug` output
//! shows header names and body sizes only: header values, URL queries and bodies carry the
//! install's secrets (API keys, tokens) and must not reach logs.

use std::fmt;

use bytes::Bytes;

/// One request a module asks the runner to send.
#[derive(Clone, PartialEq, Eq)]
pub struct OutboundRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Bytes>,
}

/// What the vendor answered. Header names are lower-case; a header sent several times appears
/// once per value.
#[derive(Clone, PartialEq, Eq)]
pub struct OutboundResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl fmt::Debug for OutboundRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutboundRequest")
            .field("method", &self.method)
            .field("url", &without_query(&self.url))
            .field("headers", &names(&self.headers))
            .field("body_bytes", &self.body.as_ref().map(Bytes::len))
            .finish()
    }
}

impl fmt::Debug for OutboundResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutboundResponse")
            .field("status", &self.status)
            .field("headers", &names(&self.headers))
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

fn names(headers: &[(String, String)]) -> Vec<&str> {
    headers.iter().map(|(name, _)| name.as_str()).collect()
}

/// The URL up to its query or fragment. Credentials in the authority are cut too, although the
/// request would be refused for them anyway.
fn without_query(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..end];
    match url.find('@') {
        Some(_) => "[url with credentials]",
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_secrets() {
        let request = OutboundRequest {
            method: "POST".to_owned(),
            url: "https://api.vendor.com/v1/check?api_key=SECRET1#SECRET2".to_owned(),
            headers: vec![("Authorization".to_owned(), "Bearer SECRET3".to_owned())],
            body: Some(Bytes::from_static(b"{\"token\":\"SECRET4\"}")),
        };
        let shown = format!("{request:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("https://api.vendor.com/v1/check"), "{shown}");
        assert!(shown.contains("Authorization"), "{shown}");

        let with_credentials = OutboundRequest {
            url: "https://user:SECRET5@api.vendor.com/".to_owned(),
            ..request
        };
        assert!(!format!("{with_credentials:?}").contains("SECRET"));

        let response = OutboundResponse {
            status: 200,
            headers: vec![("set-cookie".to_owned(), "session=SECRET6".to_owned())],
            body: Bytes::from_static(b"SECRET7"),
        };
        let shown = format!("{response:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("set-cookie"), "{shown}");
    }
}
