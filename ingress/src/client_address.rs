//! The client address a public route counts against (SPEC §8 rule 3): the socket's peer, unless
//! the peer is one of the proxies `API_TRUST_FORWARDED_FOR` names. Then `x-forwarded-for` is
//! read from its right end (the entry the nearest proxy appended) leftwards, past every trusted
//! proxy, and the first address no trusted proxy owns is the client. Entries left of it were
//! written by the client itself and are never believed; a header that does not read leaves the
//! nearest untrusted hop, or the peer, in place.

use std::net::IpAddr;

use http::HeaderMap;
use ipnet::IpNet;

const FORWARDED_FOR: &str = "x-forwarded-for";

/// The proxies whose `x-forwarded-for` is believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// `API_TRUST_FORWARDED_FOR`: comma-separated addresses or CIDR ranges.
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        raw.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("{entry:?} is not an IP address or CIDR range"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    fn trusts(&self, address: IpAddr) -> bool {
        let address = canonical(address);
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The client address of a request that came from `peer` with `headers`.
    pub(crate) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if !self.trusts(peer) {
            return peer;
        }
        let mut client = peer;
        let hops = headers
            .get_all(FORWARDED_FOR)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .collect::<Vec<_>>();
        for hop in hops.iter().rev() {
            let Ok(address) = hop.trim().parse::<IpAddr>() else {
                break;
            };
            client = canonical(address);
            if !self.trusts(client) {
                break;
            }
        }
        client
    }
}

/// An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) counts as the IPv4 address.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(FORWARDED_FOR, HeaderValue::from_str(value).expect("value"));
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    #[test]
    fn without_trusted_proxies_the_peer_is_the_client_whatever_the_header_says() {
        let none = TrustedProxies::default();
        assert_eq!(
            none.client(ip("203.0.113.9"), &headers(&["198.51.100.1"])),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn a_trusted_proxy_chain_is_walked_from_the_right_and_spoofed_entries_are_ignored() {
        let trusted = TrustedProxies::parse("10.0.0.0/8, 192.0.2.7").expect("parses");
        let peer = ip("10.1.2.3");
        // The client wrote "1.1.1.1" itself; 198.51.100.4 connected to the outer proxy.
        let chain = headers(&["1.1.1.1, 198.51.100.4", "192.0.2.7"]);
        assert_eq!(trusted.client(peer, &chain), ip("198.51.100.4"));
        // No header: the proxy itself is all we know.
        assert_eq!(trusted.client(peer, &HeaderMap::new()), peer);
        // A hop that does not read stops the walk at the last address that did.
        assert_eq!(
            trusted.client(peer, &headers(&["junk, 192.0.2.7"])),
            ip("192.0.2.7")
        );
        // An untrusted peer's header is never read.
        assert_eq!(
            trusted.client(ip("198.51.100.9"), &chain),
            ip("198.51.100.9")
        );
        // IPv4-mapped IPv6 peers count as their IPv4 address.
        assert_eq!(
            trusted.client(ip("::ffff:10.0.0.1"), &headers(&["203.0.113.5"])),
            ip("203.0.113.5")
        );
    }

    #[test]
    fn the_setting_names_addresses_or_ranges() {
        assert!(TrustedProxies::parse("").expect("empty").0.is_empty());
        assert_eq!(
            TrustedProxies::parse("127.0.0.1,::1")
                .expect("parses")
                .0
                .len(),
            2
        );
        assert!(TrustedProxies::parse("10.0.0.0/8,proxy.local").is_err());
    }
}
