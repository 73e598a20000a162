//! The hosts an install approved (SPEC §2.8 `hosts`), and the decision of which target a URL
//! names. Everything here works on the URL as the `url` crate parsed it, which is the URL reqwest
//! sends: alternate IPv4 spellings (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`) are already
//! plain IPv4 addresses, and host names are lower-case ASCII.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use crate::error::OutboundError;

/// The approved host list of one install. Entries are matched case-insensitively; an entry that
/// is none of the shapes the manifest allows matches nothing, so a bad entry can never widen
/// access.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovedHosts {
    /// Exact names, such as `api.vendor.com`.
    exact: Vec<String>,
    /// Wildcard entries `*.vendor.com`, kept as `.vendor.com`.
    suffixes: Vec<String>,
    /// The development entry `localhost`.
    localhost: bool,
    /// Development entries naming one IPv4 address.
    ipv4: Vec<Ipv4Addr>,
}

/// Where an approved URL may connect to, and so which connected addresses are acceptable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A DNS name: only public addresses (resolver filter and connected-address check).
    Name(String),
    /// The approved development name `localhost`: loopback only, through its own resolver.
    Localhost,
    /// An IPv4 address approved exactly: that address only, without DNS.
    Ipv4(Ipv4Addr),
}

impl ApprovedHosts {
    /// Builds the list from the manifest's strings.
    pub fn new<I, S>(entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut hosts = Self::default();
        for entry in entries {
            hosts.add(&entry.as_ref().to_ascii_lowercase());
        }
        hosts
    }

    /// Whether no entry was usable: every request will be refused.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.suffixes.is_empty() && !self.localhost && self.ipv4.is_empty()
    }

    fn add(&mut self, entry: &str) {
        if entry == "localhost" {
            self.localhost = true;
        } else if let Ok(ip) = entry.parse::<Ipv4Addr>() {
            // std refuses octal and short forms, so only a dotted quad is an address entry.
            self.ipv4.push(ip);
        } else if let Some(parent) = entry.strip_prefix("*.") {
            if let Some(parent) = normalised_name(parent) {
                self.suffixes.push(format!(".{parent}"));
            }
        } else if let Some(name) = normalised_name(entry) {
            self.exact.push(name);
        }
    }

    /// The target of `url`, or why it is refused.
    pub(crate) fn target(&self, url: &Url) -> Result<Target, OutboundError> {
        let scheme = url.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(refused(format!("scheme {scheme} is not allowed")));
        }
        // `http://api.vendor.com@127.0.0.1/` connects to 127.0.0.1; refusing credentials in the
        // URL removes that confusion and keeps secrets out of URLs.
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refused("credentials in the URL are not allowed".to_owned()));
        }
        if url.port() == Some(0) {
            return Err(OutboundError::InvalidRequest(
                "port 0 is not a port".to_owned(),
            ));
        }
        match url.host() {
            None => Err(refused("the URL has no host".to_owned())),
            Some(Host::Ipv6(ip)) => Err(refused(format!("IPv6 address {ip} is not allowed"))),
            Some(Host::Ipv4(ip)) => self.ipv4_target(ip),
            Some(Host::Domain(name)) => self.name_target(name),
        }
    }

    fn ipv4_target(&self, ip: Ipv4Addr) -> Result<Target, OutboundError> {
        // An approval names one host; these are never one host, whatever the manifest says.
        let single_host = !(ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast());
        if single_host && self.ipv4.contains(&ip) {
            Ok(Target::Ipv4(ip))
        } else {
            Err(refused(format!("{ip} is not an approved host")))
        }
    }

    fn name_target(&self, name: &str) -> Result<Target, OutboundError> {
        if name.ends_with('.') {
            // `localhost.` and `api.vendor.com.` are other names to the resolver and the TLS
            // check than the ones approved.
            return Err(refused(format!("{name} ends with a dot")));
        }
        if name == "localhost" {
            return if self.localhost {
                Ok(Target::Localhost)
            } else {
                Err(refused("localhost is not an approved host".to_owned()))
            };
        }
        if !is_plain_name(name) {
            return Err(refused(format!("{name} is not a plain host name")));
        }
        if self.matches_name(name) {
            Ok(Target::Name(name.to_owned()))
        } else {
            Err(refused(format!("{name} is not an approved host")))
        }
    }

    /// A wildcard matches one or more labels below its parent: `*.vendor.com` matches
    /// `a.vendor.com` and `a.b.vendor.com`, not `vendor.com` nor `evilvendor.com` (the suffix
    /// keeps its leading dot, and plain names have no empty label).
    fn matches_name(&self, name: &str) -> bool {
        self.exact.iter().any(|exact| exact == name)
            || self
                .suffixes
                .iter()
                .any(|suffix| name.len() > suffix.len() && name.ends_with(suffix.as_str()))
    }
}

impl Target {
    /// Whether this target is this machine (a development entry).
    pub(crate) fn is_loopback(&self) -> bool {
        match self {
            Target::Name(_) => false,
            Target::Localhost => true,
            Target::Ipv4(ip) => ip.is_loopback(),
        }
    }

    /// Whether the address actually connected to is one this target may reach.
    pub(crate) fn accepts(&self, connected: IpAddr) -> bool {
        match self {
            Target::Name(_) => crate::address::is_public(connected),
            Target::Localhost => {
                connected == IpAddr::V4(Ipv4Addr::LOCALHOST)
                    || connected == IpAddr::V6(Ipv6Addr::LOCALHOST)
            }
            Target::Ipv4(ip) => connected == IpAddr::V4(*ip),
        }
    }
}

fn refused(reason: String) -> OutboundError {
    OutboundError::NotAllowed(reason)
}

/// A manifest name in the form URLs carry (lower-case, punycode), or `None` when it is not a
/// plain DNS name (for instance `127.1`, which a URL would read as an address).
fn normalised_name(entry: &str) -> Option<String> {
    match Host::parse(entry).ok()? {
        Host::Domain(name) if is_plain_name(&name) && !name.ends_with('.') => Some(name),
        _ => None,
    }
}

/// A host name of the one syntax manifests are checked with (`schema::host`), so an approved
/// entry and a URL's host can only match when both are of that form. Rules out names the URL
/// parser lets through but no approval names (`*.x`, `a..b`, `.b`, `a_b.c`).
fn is_plain_name(name: &str) -> bool {
    schema::host::is_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(approved: &[&str], url: &str) -> Result<Target, OutboundError> {
        let url = Url::parse(url).expect("test URL parses");
        ApprovedHosts::new(approved).target(&url)
    }

    fn refused(approved: &[&str], url: &str) -> bool {
        matches!(target(approved, url), Err(OutboundError::NotAllowed(_)))
    }

    #[test]
    fn exact_names_match_case_insensitively() {
        let expected = Ok(Target::Name("api.vendor.com".to_owned()));
        assert_eq!(
            target(&["api.vendor.com"], "https://api.vendor.com/x"),
            expected
        );
        assert_eq!(
            target(&["API.Vendor.COM"], "https://api.vendor.com/x"),
            expected
        );
        assert_eq!(
            target(&["api.vendor.com"], "https://API.VENDOR.com:8443/x"),
            expected
        );
        assert!(refused(&["api.vendor.com"], "https://vendor.com/"));
        assert!(refused(&["api.vendor.com"], "https://x.api.vendor.com/"));
    }

    #[test]
    fn wildcards_match_one_or_more_labels_below_the_parent_only() {
        let approved = &["*.vendor.com"];
        assert_eq!(
            target(approved, "https://a.vendor.com/"),
            Ok(Target::Name("a.vendor.com".to_owned()))
        );
        assert!(target(approved, "https://a.b.vendor.com/").is_ok());
        assert!(target(approved, "https://A.Vendor.Com/").is_ok());
        assert!(refused(approved, "https://vendor.com/"));
        assert!(refused(approved, "https://evilvendor.com/"));
        assert!(refused(approved, "https://vendor.com.evil.com/"));
        assert!(refused(approved, "https://.vendor.com/"));
        assert!(refused(approved, "https://a..vendor.com/"));
        assert!(refused(approved, "https://*.vendor.com/"));
    }

    #[test]
    fn localhost_needs_its_own_entry() {
        assert_eq!(
            target(&["localhost"], "http://localhost:8080/"),
            Ok(Target::Localhost)
        );
        assert_eq!(
            target(&["LocalHost"], "http://LOCALHOST/"),
            Ok(Target::Localhost)
        );
        assert!(refused(&["127.0.0.1"], "http://localhost/"));
        assert!(refused(&["*.localhost"], "http://localhost/"));
        assert!(refused(&["localhost"], "http://localhost./"));
        assert!(refused(&["localhost"], "http://127.0.0.1/"));
    }

    #[test]
    fn ipv4_addresses_need_an_exact_entry_whatever_their_spelling() {
        let approved = &["127.0.0.1"];
        let expected = Ok(Target::Ipv4(Ipv4Addr::LOCALHOST));
        for url in [
            "http://127.0.0.1:9/",
            "http://2130706433:9/",
            "http://0x7f.0.0.1:9/",
            "http://0177.0.0.1:9/",
            "http://017700000001:9/",
            "http://127.1:9/",
        ] {
            assert_eq!(target(approved, url), expected, "{url}");
            assert!(refused(&["api.vendor.com"], url), "{url}");
            assert!(refused(&["127.0.0.2"], url), "{url}");
        }
    }

    #[test]
    fn address_entries_must_be_dotted_quads() {
        // Octal or short spellings in the manifest are not address entries, nor names.
        assert!(ApprovedHosts::new(["0177.0.0.1"]).is_empty());
        assert!(ApprovedHosts::new(["127.1"]).is_empty());
        assert!(ApprovedHosts::new(["::1"]).is_empty());
        assert!(ApprovedHosts::new(["[::1]"]).is_empty());
        assert!(ApprovedHosts::new(["api.vendor.com."]).is_empty());
        assert!(ApprovedHosts::new(["*.*.vendor.com"]).is_empty());
        assert!(ApprovedHosts::new([""]).is_empty());
        assert!(!ApprovedHosts::new(["10.1.2.3"]).is_empty());
    }

    #[test]
    fn addresses_that_are_never_one_host_are_refused_even_when_listed() {
        assert!(refused(&["0.0.0.0"], "http://0.0.0.0/"));
        assert!(refused(&["0.0.0.0"], "http://0/"));
        assert!(refused(&["255.255.255.255"], "http://255.255.255.255/"));
        assert!(refused(&["224.0.0.1"], "http://224.0.0.1/"));
    }

    #[test]
    fn ipv6_literals_are_never_allowed() {
        let approved = &["127.0.0.1", "localhost", "::1"];
        for url in [
            "http://[::1]/",
            "http://[::]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:7f00:1::]/",
            "http://[fe80::1]/",
            "http://[2606:4700:4700::1111]/",
        ] {
            assert!(refused(approved, url), "{url}");
        }
    }

    #[test]
    fn credentials_in_the_url_are_refused() {
        assert!(refused(
            &["api.example.com"],
            "http://api.example.com@127.0.0.1/"
        ));
        assert!(refused(&["127.0.0.1"], "http://api.example.com@127.0.0.1/"));
        assert!(refused(
            &["api.example.com"],
            "https://user:pw@api.example.com/"
        ));
        assert!(refused(
            &["api.example.com"],
            "https://:pw@api.example.com/"
        ));
    }

    #[test]
    fn only_http_and_https_are_allowed() {
        assert!(refused(&["127.0.0.1"], "ftp://127.0.0.1/"));
        assert!(refused(&["localhost"], "file:///etc/passwd"));
        assert!(refused(&["localhost"], "file://localhost/etc/passwd"));
        assert!(refused(&["api.example.com"], "ws://api.example.com/"));
        assert!(refused(&["api.example.com"], "gopher://api.example.com/"));
        assert!(target(&["api.example.com"], "HTTPS://api.example.com/").is_ok());
    }

    #[test]
    fn port_zero_is_invalid() {
        assert!(matches!(
            target(&["127.0.0.1"], "http://127.0.0.1:0/"),
            Err(OutboundError::InvalidRequest(_))
        ));
    }

    #[test]
    fn international_names_match_in_punycode() {
        assert!(target(&["bücher.example"], "https://BÜCHER.example/").is_ok());
        assert!(target(&["*.bücher.example"], "https://api.xn--bcher-kva.example/").is_ok());
    }

    #[test]
    fn connected_addresses_are_judged_per_target() {
        let name = Target::Name("api.vendor.com".to_owned());
        assert!(name.accepts("93.184.216.34".parse().expect("ip")));
        assert!(!name.accepts("127.0.0.1".parse().expect("ip")));
        assert!(!name.accepts("::ffff:93.184.216.34".parse().expect("ip")));

        assert!(Target::Localhost.accepts("127.0.0.1".parse().expect("ip")));
        assert!(Target::Localhost.accepts("::1".parse().expect("ip")));
        assert!(!Target::Localhost.accepts("127.0.0.2".parse().expect("ip")));
        assert!(!Target::Localhost.accepts("10.0.0.1".parse().expect("ip")));

        let literal = Target::Ipv4(Ipv4Addr::new(10, 0, 0, 5));
        assert!(literal.accepts("10.0.0.5".parse().expect("ip")));
        assert!(!literal.accepts("10.0.0.6".parse().expect("ip")));
    }
}
