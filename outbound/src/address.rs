//! Which addresses a vendor request may connect to when the host is a DNS name: public unicast
//! only. Written by hand because `IpAddr::is_global` is unstable, and because this is our policy
//! rather than a registry's: ranges that are technically routable but never a vendor's API
//! (documentation, benchmarking, relays, translation prefixes) are refused as well.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 ranges that are never a vendor's address, as (network, prefix length).
const NON_PUBLIC_V4: &[(Ipv4Addr, u8)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8), // "this network"; 0.0.0.0 reaches the local host
    (Ipv4Addr::new(10, 0, 0, 0), 8), // private
    (Ipv4Addr::new(100, 64, 0, 0), 10), // carrier-grade NAT
    (Ipv4Addr::new(127, 0, 0, 0), 8), // loopback
    (Ipv4Addr::new(169, 254, 0, 0), 16), // link-local, cloud metadata 169.254.169.254
    (Ipv4Addr::new(172, 16, 0, 0), 12), // private
    (Ipv4Addr::new(192, 0, 0, 0), 24), // IETF protocol assignments
    (Ipv4Addr::new(192, 0, 2, 0), 24), // documentation TEST-NET-1
    (Ipv4Addr::new(192, 88, 99, 0), 24), // deprecated 6to4 relay anycast
    (Ipv4Addr::new(192, 168, 0, 0), 16), // private
    (Ipv4Addr::new(198, 18, 0, 0), 15), // benchmarking
    (Ipv4Addr::new(198, 51, 100, 0), 24), // documentation TEST-NET-2
    (Ipv4Addr::new(203, 0, 113, 0), 24), // documentation TEST-NET-3
    (Ipv4Addr::new(224, 0, 0, 0), 4), // multicast
    (Ipv4Addr::new(240, 0, 0, 0), 4), // reserved, includes broadcast 255.255.255.255
];

/// IPv6 ranges inside global unicast 2000::/3 that are still not a vendor's address. Everything
/// outside 2000::/3 is refused before this list is consulted (see `is_public_v6`).
const NON_PUBLIC_V6: &[(Ipv6Addr, u8)] = &[
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23), // IETF protocol assignments, Teredo 2001::/32
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32), // documentation
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16), // 6to4: tunnels to an embedded IPv4
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20), // documentation (RFC 9637)
];

/// Whether a DNS answer may be connected to.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    !NON_PUBLIC_V4
        .iter()
        .any(|&(network, len)| in_prefix(ip.to_bits().into(), network.to_bits().into(), len, 32))
}

/// Only global unicast 2000::/3 can be public. That single rule already refuses `::`, `::1`, the
/// IPv4-mapped and IPv4-compatible forms (whatever IPv4 they embed: a mapped address is a way to
/// reach an IPv4 host the IPv4 rules would judge, so it is refused outright), NAT64 64:ff9b::/96
/// and 64:ff9b:1::/48, discard 100::/64, unique-local fc00::/7, link-local fe80::/10, site-local
/// fec0::/10 and multicast ff00::/8.
fn is_public_v6(ip: Ipv6Addr) -> bool {
    let bits = ip.to_bits();
    let global_unicast = Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0).to_bits();
    in_prefix(bits, global_unicast, 3, 128)
        && !NON_PUBLIC_V6
            .iter()
            .any(|&(network, len)| in_prefix(bits, network.to_bits(), len, 128))
}

/// Whether `ip` lies in `network/len`, both given as `width`-bit integers.
fn in_prefix(ip: u128, network: u128, len: u8, width: u32) -> bool {
    let host_bits = width - u32::from(len);
    // A /0 shifts every bit out; `checked_shr` keeps that from overflowing.
    ip.checked_shr(host_bits).unwrap_or(0) == network.checked_shr(host_bits).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        is_public(s.parse().expect("test address parses"))
    }

    #[test]
    fn refuses_every_special_ipv4_range() {
        for ip in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.255",
            "127.0.0.1",
            "127.255.255.254",
            "169.254.169.254",
            "169.254.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.1",
            "192.0.0.170",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!public(ip), "{ip} must not be public");
        }
    }

    #[test]
    fn accepts_public_ipv4_including_range_neighbours() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.1",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "93.184.216.34",
        ] {
            assert!(public(ip), "{ip} must be public");
        }
    }

    #[test]
    fn refuses_every_special_ipv6_range() {
        for ip in [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:8.8.8.8", // mapped: refused whatever it embeds
            "::127.0.0.1",    // IPv4-compatible
            "::8.8.8.8",
            "::ffff:0:8.8.8.8", // IPv4-translated
            "64:ff9b::7f00:1",
            "64:ff9b::808:808",
            "64:ff9b:1::1",
            "100::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "ff0e::1",
            "2001::1",
            "2001:0:4136:e378::1", // Teredo
            "2001:2::1",           // benchmarking
            "2001:db8::1",
            "2001:db8:ffff::1",
            "2002:7f00:1::",
            "2002:808:808::1",
            "3fff::1",
            "4000::1",
        ] {
            assert!(!public(ip), "{ip} must not be public");
        }
    }

    #[test]
    fn accepts_public_ipv6() {
        for ip in [
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001::1",
            "2001:200::1", // just past 2001::/23
            "2003::1",
        ] {
            assert!(public(ip), "{ip} must be public");
        }
    }
}
