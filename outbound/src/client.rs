//! The one HTTP client of the wasm host functions (kernel `http_request` and platform
//! `http_send`) and of deliveries to webhook endpoints. Each hop of a request is approved
//! (`hosts`), connected through a resolver that only yields allowed addresses (`resolve`),
//! checked against the address actually connected to, and bounded in time and size.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use reqwest::dns::Resolve;
use tokio::time::Instant;
use tracing::{Instrument, Span, field};
use url::Url;

use crate::body::{read_limited, read_prefix};
use crate::error::OutboundError;
use crate::hop::Hop;
use crate::hosts::{ApprovedHosts, Target};
use crate::limits::MAX_REDIRECTS;
use crate::message::{OutboundRequest, OutboundResponse};
use crate::redirect::next_hop;
use crate::resolve::{LocalhostResolver, PublicResolver, SystemResolver};

/// Idle keep-alive connections are dropped after this; vendors are called in bursts per call.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends vendor requests. Build it once at start; clones share the connection pools.
#[derive(Debug, Clone)]
pub struct OutboundClient {
    /// DNS names (public addresses only) and approved IPv4 literals (which bypass DNS).
    public: reqwest::Client,
    /// Only the approved development name `localhost`, answered as loopback. A separate client
    /// keeps loopback out of the public resolver entirely.
    localhost: reqwest::Client,
}

/// How a response is taken, per caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taking {
    /// What a module gets: same-origin redirects followed, the whole body (refused past
    /// `MAX_RESPONSE_BYTES`).
    Module,
    /// What a webhook delivery records: the first answer as it is (a redirect is an answer,
    /// never followed: a POST turned into a GET proves nothing was accepted), and at most the
    /// first `prefix` bytes of its body, the rest left unread.
    Delivery { prefix: usize },
}

/// What one hop ended in.
enum Step {
    Done(OutboundResponse),
    Redirect(Hop),
}

impl OutboundClient {
    /// A client resolving names with the operating system's resolver.
    pub fn new() -> Result<Self, OutboundError> {
        Self::with_name_lookup(Arc::new(SystemResolver))
    }

    /// A client resolving names with `lookup`. The public-address filter still applies to
    /// whatever `lookup` answers; only where answers come from changes.
    pub fn with_name_lookup(lookup: Arc<dyn Resolve>) -> Result<Self, OutboundError> {
        Ok(Self {
            public: build(PublicResolver::new(lookup))?,
            localhost: build(LocalhostResolver)?,
        })
    }

    /// Sends `request` if `hosts` approve it, following same-origin redirects, within `timeout`
    /// for the whole exchange including the body. Take from the call's `RequestBudget` first.
    pub async fn send(
        &self,
        hosts: &ApprovedHosts,
        request: OutboundRequest,
        timeout: Duration,
    ) -> Result<OutboundResponse, OutboundError> {
        self.send_taking(hosts, request, timeout, Taking::Module)
            .await
    }

    /// [`OutboundClient::send`], the response taken as `taking` says.
    pub async fn send_taking(
        &self,
        hosts: &ApprovedHosts,
        request: OutboundRequest,
        timeout: Duration,
        taking: Taking,
    ) -> Result<OutboundResponse, OutboundError> {
        let first = Hop::from_request(request)?;
        if timeout.is_zero() {
            // Nothing is left of the call: do not even connect.
            return Err(OutboundError::Timeout);
        }
        let deadline = Instant::now() + timeout;
        let origin = first.url.clone();
        let mut hop = first;
        for _ in 0..=MAX_REDIRECTS {
            match self
                .traced_step(deadline, (hosts, taking), &origin, &hop)
                .await?
            {
                Step::Done(response) => return Ok(response),
                Step::Redirect(next) => hop = next,
            }
        }
        Err(OutboundError::NotAllowed(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }

    /// One hop in its own client span, cut off at the request's deadline.
    async fn traced_step(
        &self,
        deadline: Instant,
        approved: (&ApprovedHosts, Taking),
        origin: &Url,
        hop: &Hop,
    ) -> Result<Step, OutboundError> {
        let span = vendor_span(hop);
        let step = tokio::time::timeout_at(deadline, self.step(approved, origin, hop))
            .instrument(span.clone())
            .await
            .unwrap_or(Err(OutboundError::Timeout));
        if let Err(err) = &step {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", err.code());
        }
        step
    }

    async fn step(
        &self,
        (hosts, taking): (&ApprovedHosts, Taking),
        origin: &Url,
        hop: &Hop,
    ) -> Result<Step, OutboundError> {
        let target = hosts.target(&hop.url)?;
        let response = self.exchange(&target, hop).await?;
        let status = response.status();
        Span::current().record("http.response.status_code", status.as_u16());
        if taking == Taking::Module
            && let Some(next) = next_hop(origin, hop, status, response.headers())?
        {
            return Ok(Step::Redirect(next));
        }
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect();
        let body = match taking {
            Taking::Module => read_limited(response, hop.method == Method::HEAD).await?,
            Taking::Delivery { prefix } => read_prefix(response, prefix).await?,
        };
        Ok(Step::Done(OutboundResponse {
            status: status.as_u16(),
            headers,
            body,
        }))
    }

    /// Sends one hop and checks where it went before anything of the response is used.
    async fn exchange(
        &self,
        target: &Target,
        hop: &Hop,
    ) -> Result<reqwest::Response, OutboundError> {
        let client = match target {
            Target::Localhost => &self.localhost,
            Target::Name(_) | Target::Ipv4(_) => &self.public,
        };
        let mut request = client
            .request(hop.method.clone(), hop.url.clone())
            .headers(hop.headers.clone());
        if let Some(body) = &hop.body {
            request = request.body(body.clone());
        }
        let response = request.send().await.map_err(OutboundError::from_reqwest)?;
        check_connected(target, &hop.url, response.remote_addr())?;
        Ok(response)
    }
}

/// Belt and braces after the resolver: the address the connection actually reached must be one
/// the target allows, on the URL's port. The address is not named in the error: a module has no
/// business learning the runner's network.
fn check_connected(
    target: &Target,
    url: &Url,
    connected: Option<SocketAddr>,
) -> Result<(), OutboundError> {
    let allowed = connected.is_some_and(|addr| {
        target.accepts(addr.ip()) && Some(addr.port()) == url.port_or_known_default()
    });
    if allowed {
        Ok(())
    } else {
        Err(OutboundError::NotAllowed(
            "the address connected to is not allowed for this host".to_owned(),
        ))
    }
}

fn build(resolver: impl Resolve + 'static) -> Result<reqwest::Client, OutboundError> {
    reqwest::Client::builder()
        .use_rustls_tls()
        // A proxy would connect on our behalf, past the resolver and address checks.
        .no_proxy()
        // Followed by hand, hop by hop (see `redirect`).
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .dns_resolver(Arc::new(resolver))
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .build()
        .map_err(OutboundError::from_reqwest)
}

/// The client span of one vendor request. Host and port only: the path and query may carry
/// identifiers or keys, and headers carry secrets.
fn vendor_span(hop: &Hop) -> Span {
    tracing::info_span!(
        "vendor.request",
        otel.kind = "client",
        otel.status_code = field::Empty,
        http.request.method = %hop.method,
        server.address = hop.url.host_str().unwrap_or_default(),
        server.port = hop.url.port_or_known_default(),
        http.response.status_code = field::Empty,
        error.type = field::Empty,
    )
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    #[test]
    fn the_connected_address_must_match_target_and_port() {
        let literal = Target::Ipv4(Ipv4Addr::LOCALHOST);
        let to = url("http://127.0.0.1:8080/");
        assert!(
            check_connected(&literal, &to, Some("127.0.0.1:8080".parse().expect("addr"))).is_ok()
        );
        assert!(
            check_connected(&literal, &to, Some("127.0.0.1:8081".parse().expect("addr"))).is_err()
        );
        assert!(
            check_connected(&literal, &to, Some("127.0.0.2:8080".parse().expect("addr"))).is_err()
        );
        assert!(check_connected(&literal, &to, None).is_err());

        let name = Target::Name("api.vendor.com".to_owned());
        let to = url("https://api.vendor.com/");
        assert!(
            check_connected(&name, &to, Some("93.184.216.34:443".parse().expect("addr"))).is_ok()
        );
        assert!(check_connected(&name, &to, Some("127.0.0.1:443".parse().expect("addr"))).is_err());
        assert!(
            check_connected(
                &name,
                &to,
                Some("[::ffff:7f00:1]:443".parse().expect("addr"))
            )
            .is_err()
        );

        let to = url("http://localhost:3000/");
        let ok = check_connected(
            &Target::Localhost,
            &to,
            Some("[::1]:3000".parse().expect("addr")),
        );
        assert!(ok.is_ok());
        let other = Some("10.0.0.1:3000".parse().expect("addr"));
        assert!(check_connected(&Target::Localhost, &to, other).is_err());
    }

    #[test]
    fn builds_and_clones() {
        let client = OutboundClient::new().expect("client builds");
        let _shared = client.clone();
    }

    #[tokio::test]
    async fn a_zero_timeout_never_connects() {
        let client = OutboundClient::new().expect("client builds");
        let hosts = ApprovedHosts::new(["127.0.0.1"]);
        let request = OutboundRequest {
            method: "GET".to_owned(),
            url: "http://127.0.0.1:9/".to_owned(),
            headers: Vec::new(),
            body: None,
        };
        let result = client.send(&hosts, request, Duration::ZERO).await;
        assert_eq!(result, Err(OutboundError::Timeout));
    }
}
