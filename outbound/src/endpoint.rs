//! A tenant's webhook endpoint as the one host its deliveries may reach. The endpoint's URL names
//! its own host, approved as an install's vendor host is, so a delivery passes every layer a
//! vendor request does (the resolver's public-address filter, the connected-address check, no
//! proxy, redirects only to the same origin). Beyond that:
//! - `https` only; `http` only to loopback, in development;
//! - an address written in the URL must itself be public: an approved IPv4 entry would otherwise
//!   connect to whatever private address a tenant typed;
//! - loopback (`localhost`, 127.0.0.0/8) only when the development setting allows it.

use std::net::Ipv4Addr;

use url::{Host, Url};

use crate::address::is_public;
use crate::error::OutboundError;
use crate::hosts::ApprovedHosts;

/// Whether endpoints may be on this machine: a development setting, off in production.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loopback {
    Refused,
    Allowed,
}

/// The hosts a delivery to `url` may reach, or why an endpoint may not have that URL.
pub fn endpoint_hosts(url: &Url, loopback: Loopback) -> Result<ApprovedHosts, OutboundError> {
    let hosts = match url.host() {
        Some(Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => {
            local(loopback, "localhost")?;
            ApprovedHosts::new(["localhost"])
        }
        Some(Host::Ipv4(ip)) => ApprovedHosts::new([address(ip, loopback)?.to_string()]),
        Some(Host::Domain(name)) => ApprovedHosts::new([name]),
        // No host, or an IPv6 literal: the vendor rules refuse them with their reasons.
        Some(Host::Ipv6(_)) | None => ApprovedHosts::default(),
    };
    // The vendor rules: scheme, credentials, port, the host's form.
    let target = hosts.target(url)?;
    if url.scheme() != "https" && !target.is_loopback() {
        return Err(OutboundError::NotAllowed(
            "an endpoint must use https".to_owned(),
        ));
    }
    Ok(hosts)
}

fn address(ip: Ipv4Addr, loopback: Loopback) -> Result<Ipv4Addr, OutboundError> {
    if is_public(ip.into()) {
        return Ok(ip);
    }
    if ip.is_loopback() {
        local(loopback, &ip.to_string())?;
        return Ok(ip);
    }
    Err(OutboundError::NotAllowed(format!(
        "{ip} is not a public address"
    )))
}

fn local(loopback: Loopback, host: &str) -> Result<(), OutboundError> {
    match loopback {
        Loopback::Allowed => Ok(()),
        Loopback::Refused => Err(OutboundError::NotAllowed(format!(
            "{host} is this machine: endpoints must be reachable elsewhere"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str, loopback: Loopback) -> Result<(), String> {
        let url = Url::parse(url).map_err(|error| format!("parse: {error}"))?;
        endpoint_hosts(&url, loopback)
            .map(|_| ())
            .map_err(|error| error.code().to_owned())
    }

    /// The address forms of the runner's SSRF table, as endpoint URLs: refused whether or not
    /// development allows loopback, unless the last column says loopback admits them.
    #[rustfmt::skip]
    const FORMS: &[(&str, &str, bool)] = &[
        ("loopback", "http://127.0.0.1:9000/hook", true),
        ("another loopback address", "http://127.0.0.2:9000/hook", true),
        ("localhost", "http://localhost:9000/hook", true),
        ("localhost in capitals", "http://LOCALHOST:9000/hook", true),
        ("localhost. with a trailing dot", "http://localhost.:9000/hook", false),
        ("decimal 2130706433", "http://2130706433:9000/", true),
        ("hex 0x7f.0.0.1", "http://0x7f.0.0.1:9000/", true),
        ("octal 0177.0.0.1", "http://0177.0.0.1:9000/", true),
        ("short 127.1", "http://127.1:9000/", true),
        ("a name before an @", "https://hooks.example.com@127.0.0.1:9000/", false),
        ("credentials", "https://user:pw@hooks.example.com/", false),
        ("[::1]", "http://[::1]:9000/", false),
        ("[::]", "http://[::]:9000/", false),
        ("IPv4-mapped [::ffff:127.0.0.1]", "http://[::ffff:127.0.0.1]:9000/", false),
        ("IPv4-compatible [::127.0.0.1]", "http://[::127.0.0.1]:9000/", false),
        ("NAT64 [64:ff9b::7f00:1]", "http://[64:ff9b::7f00:1]:9000/", false),
        ("6to4 [2002:7f00:1::]", "http://[2002:7f00:1::]:9000/", false),
        ("link-local [fe80::1]", "http://[fe80::1]:9000/", false),
        ("a public IPv6 literal", "https://[2606:4700:4700::1111]/", false),
        ("0.0.0.0", "http://0.0.0.0:9000/", false),
        ("0 as 0.0.0.0", "http://0:9000/", false),
        ("metadata 169.254.169.254", "http://169.254.169.254/latest/meta-data/", false),
        ("private 10.0.0.1", "https://10.0.0.1/", false),
        ("CGNAT 100.64.0.1", "https://100.64.0.1/", false),
        ("private 192.168.1.1", "https://192.168.1.1/", false),
        ("private 172.16.0.1", "https://172.16.0.1/", false),
        ("documentation 192.0.2.1", "https://192.0.2.1/", false),
        ("broadcast", "https://255.255.255.255/", false),
        ("ftp scheme", "ftp://hooks.example.com/", false),
        ("file scheme", "file:///etc/passwd", false),
        ("port 0", "https://hooks.example.com:0/", false),
        ("not a plain name", "https://hooks_example.com/", false),
        ("plain http to a public name", "http://hooks.example.com/", false),
        ("plain http to a public address", "http://93.184.216.34/", false),
    ];

    #[test]
    fn the_runners_address_forms_are_refused_as_endpoints() {
        for (name, url, loopback_admits) in FORMS {
            assert!(
                check(url, Loopback::Refused).is_err(),
                "{name}: {url} accepted without loopback"
            );
            assert_eq!(
                check(url, Loopback::Allowed).is_ok(),
                *loopback_admits,
                "{name}: {url} with loopback allowed"
            );
        }
    }

    #[test]
    fn public_https_endpoints_are_accepted() {
        for url in [
            "https://hooks.example.com/risk",
            "https://HOOKS.Example.com:8443/risk?token=x",
            "https://93.184.216.34/hook",
        ] {
            assert_eq!(check(url, Loopback::Refused), Ok(()), "{url}");
        }
    }

    #[test]
    fn the_approved_host_is_the_urls_alone() {
        let url = Url::parse("https://hooks.example.com/x").expect("url");
        let hosts = endpoint_hosts(&url, Loopback::Refused).expect("accepted");
        let other = Url::parse("https://other.example.com/x").expect("url");
        assert!(hosts.target(&other).is_err());
        let sub = Url::parse("https://a.hooks.example.com/x").expect("url");
        assert!(hosts.target(&sub).is_err());
    }
}
