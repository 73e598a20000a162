//! HTTP to addresses outside the platform: approved hosts only, SSRF-safe, bounded. One
//! implementation for every request the platform sends where a tenant or a vendor chose the URL.
//!
//! - Vendor requests from inside a call (the runner): the kernel `http_request` and the platform
//!   `http_send` both go through one `OutboundClient`. A call keeps a `RequestBudget` (25
//!   requests) and passes the install's `ApprovedHosts` and a timeout from `request_timeout`
//!   (never past the call's deadline) to `OutboundClient::send`.
//! - Deliveries to tenants' webhook endpoints (the pipeline): `endpoint_hosts` approves the
//!   endpoint URL's own host, under the stricter rules of `endpoint`, and the delivery goes
//!   through the same client (`OutboundClient::send_taking`, redirects not followed), signed per
//!   Standard Webhooks (`signing`).
//!
//! Layers of the SSRF defence, each sufficient on its own for the case it covers:
//! - `hosts`: the URL's host must be approved: an exact name, a `*.` wildcard, or the development
//!   entries `localhost` and an exact IPv4 address. No IPv6 literals, credentials, trailing dots
//!   or schemes other than http(s).
//! - `resolve`: DNS names connect only to public addresses (`address`), filtered inside the
//!   resolver the connector uses; `localhost` has its own client answering loopback only.
//! - `client`: the address actually connected to is checked again; redirects are followed by
//!   hand and only to the original scheme, host and port; no proxies.
//! - `body`, `limits`: timeouts cover the whole exchange, bodies are capped at 8 MiB.
//! - `endpoint`: a webhook endpoint's URL is https, names a public host or address, and reaches
//!   loopback only where development allows it.

mod address;
mod body;
mod budget;
mod client;
mod endpoint;
mod error;
mod hop;
mod hosts;
mod limits;
mod message;
mod redirect;
mod resolve;
mod signing;

pub use budget::RequestBudget;
pub use client::{OutboundClient, Taking};
pub use endpoint::{Loopback, endpoint_hosts};
pub use error::OutboundError;
pub use hosts::ApprovedHosts;
pub use limits::request_timeout;
pub use limits::{MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES};
pub use message::{OutboundRequest, OutboundResponse};
pub use signing::{BadSecret, SigningSecret, signature_header};
