//! Name resolution for vendor requests. The address policy is applied inside the resolver the
//! connector uses, so the addresses checked are the only addresses the connector can try (a
//! check before the request, followed by a second lookup, could be answered differently by DNS).

use std::error::Error as StdError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::address::is_public;

/// A name had addresses, but none the policy allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} has no public address")]
pub(crate) struct NoPublicAddress {
    name: String,
}

impl NoPublicAddress {
    pub(crate) fn new(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }
}

/// Resolves with `names` and keeps the public answers only; fails when none is left, so a public
/// name that points at 127.0.0.1 or 169.254.169.254 connects nowhere.
pub(crate) struct PublicResolver {
    names: Arc<dyn Resolve>,
}

impl PublicResolver {
    pub(crate) fn new(names: Arc<dyn Resolve>) -> Self {
        Self { names }
    }
}

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let lookup = self.names.resolve(name);
        Box::pin(async move {
            let public = public_only(lookup.await?);
            if public.is_empty() {
                return Err(Box::new(NoPublicAddress::new(host)) as Box<dyn StdError + Send + Sync>);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// The answers the policy allows, in the resolver's order.
pub(crate) fn public_only(addrs: impl Iterator<Item = SocketAddr>) -> Vec<SocketAddr> {
    addrs.filter(|addr| is_public(addr.ip())).collect()
}

/// The operating system's resolver (getaddrinfo on tokio's blocking pool).
pub(crate) struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(Box::new(addrs.collect::<Vec<_>>().into_iter()) as Addrs)
        })
    }
}

/// The resolver of the development client: `localhost` is loopback, without asking the system
/// (whose hosts file could say otherwise), and no other name resolves at all.
pub(crate) struct LocalhostResolver;

/// The loopback addresses, IPv4 first: development servers most often listen there only.
pub(crate) const LOOPBACK: [IpAddr; 2] = [
    IpAddr::V4(Ipv4Addr::LOCALHOST),
    IpAddr::V6(Ipv6Addr::LOCALHOST),
];

impl Resolve for LocalhostResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let answer = if name.as_str().eq_ignore_ascii_case("localhost") {
            Ok(Box::new(LOOPBACK.into_iter().map(|ip| SocketAddr::new(ip, 0))) as Addrs)
        } else {
            Err(Box::new(NoPublicAddress::new(name.as_str())) as Box<dyn StdError + Send + Sync>)
        };
        Box::pin(std::future::ready(answer))
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    /// Answers every name with a fixed list, standing in for DNS.
    struct Fixed(Vec<SocketAddr>);

    impl Resolve for Fixed {
        fn resolve(&self, _name: Name) -> Resolving {
            let addrs = self.0.clone();
            Box::pin(async move { Ok(Box::new(addrs.into_iter()) as Addrs) })
        }
    }

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|ip| SocketAddr::new(ip.parse().expect("test address"), 0))
            .collect()
    }

    fn name(s: &str) -> Name {
        Name::from_str(s).expect("test name")
    }

    #[test]
    fn keeps_only_public_answers_in_order() {
        let answers = addrs(&[
            "127.0.0.1",
            "93.184.216.34",
            "10.0.0.1",
            "::1",
            "::ffff:93.184.216.34",
            "2606:4700:4700::1111",
            "169.254.169.254",
        ]);
        assert_eq!(
            public_only(answers.into_iter()),
            addrs(&["93.184.216.34", "2606:4700:4700::1111"])
        );
    }

    #[tokio::test]
    async fn a_name_with_only_private_answers_fails() {
        let dns = Fixed(addrs(&["127.0.0.1", "::1", "10.1.2.3", "64:ff9b::7f00:1"]));
        let resolver = PublicResolver::new(Arc::new(dns));
        let err = resolver
            .resolve(name("api.example.com"))
            .await
            .err()
            .expect("refused");
        let refusal = err
            .downcast_ref::<NoPublicAddress>()
            .expect("policy refusal");
        assert_eq!(refusal, &NoPublicAddress::new("api.example.com"));
    }

    #[tokio::test]
    async fn a_name_with_some_public_answers_resolves_to_those() {
        let dns = Fixed(addrs(&["127.0.0.1", "93.184.216.34"]));
        let resolver = PublicResolver::new(Arc::new(dns));
        let resolved: Vec<_> = resolver
            .resolve(name("api.example.com"))
            .await
            .expect("resolves")
            .collect();
        assert_eq!(resolved, addrs(&["93.184.216.34"]));
    }

    #[tokio::test]
    async fn localhost_resolves_to_loopback_only_and_nothing_else_resolves() {
        let resolved: Vec<_> = LocalhostResolver
            .resolve(name("localhost"))
            .await
            .expect("resolves")
            .collect();
        assert_eq!(resolved, addrs(&["127.0.0.1", "::1"]));
        assert!(
            LocalhostResolver
                .resolve(name("example.com"))
                .await
                .is_err()
        );
        assert!(LocalhostResolver.resolve(name("localhost.")).await.is_err());
    }
}
