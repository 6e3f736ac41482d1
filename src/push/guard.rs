//! Where a webhook may be sent: never to the service's own network. A subscribed URL must be
//! `https`, and every address its host resolves to must be a public unicast address: not
//! loopback, private, shared (CGNAT), link-local (the cloud metadata address 169.254.169.254
//! among them), multicast, unspecified, broadcast, documentation or reserved, in IPv4 or IPv6
//! (an IPv4-mapped, IPv4-translated or NAT64 IPv6 address is judged by the IPv4 address it
//! carries; the tunnels and translators that can reach IPv4 we cannot judge, 6to4, Teredo,
//! local-use NAT64 and the 6to4 relay anycast, are refused). The check runs when a subscription
//! is created or changed, and again at every connection the sender opens ([`GuardedResolver`],
//! over a [`Resolver`] a caller may replace), so a name that resolves elsewhere later (DNS
//! rebinding) is refused then. `GOVDATA_WEBHOOK_ALLOW_PRIVATE` lifts the address rule and allows plain `http`
//! (tests on loopback receivers, private deployments).
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why an address may not be sent to, or `None` when it may.
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        // 169.254.0.0/16: the cloud metadata service (169.254.169.254) lives here.
        Some("a link-local address (the metadata service among them)")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if ip.is_broadcast() {
        Some("the broadcast address")
    } else if a == 0 {
        Some("an unspecified (\"this network\") address")
    } else if ip.is_documentation() {
        Some("a documentation address")
    } else if a == 192 && b == 0 && c == 0 {
        Some("an IETF protocol assignment address")
    } else if a == 192 && b == 88 && c == 99 {
        // The 6to4 relay anycast (RFC 3068, deprecated by RFC 7526): whichever relay answers
        // unwraps what it is sent towards the IPv4 address carried in a 6to4 destination.
        Some("the 6to4 relay anycast address")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking address")
    } else if a >= 240 {
        Some("a reserved address")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // An IPv4 address carried in the last 32 bits reaches that IPv4 address: mapped
    // ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d (SIIT) and the well-known NAT64 prefix
    // 64:ff9b::/96 are judged by it.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0, 0, 0, 0, 0xffff, 0] || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., a, b, c, d] = ip.octets();
        return forbidden_v4(Ipv4Addr::new(a, b, c, d));
    }
    if segments[0] == 0x2002 {
        // 6to4 carries an IPv4 address in bits 16-47 and is reached through a relay that
        // unwraps it there. Refused outright rather than judged by that address: the mechanism
        // is deprecated (RFC 7526), so no receiver needs it, and what reaches the carried
        // address is whichever relay the network picks, not anything this guard can check.
        return Some("a 6to4 address (it reaches the IPv4 address it carries)");
    }
    if segments[0] == 0x2001 && segments[1] == 0 {
        // Teredo (2001::/32) tunnels to an IPv4 server and an IPv4 client carried (the client
        // obfuscated) in the address; neither is ours to judge safely.
        return Some("a Teredo address (it reaches the IPv4 addresses it carries)");
    }
    if segments[..3] == [0x64, 0xff9b, 1] {
        // Local-use NAT64 (64:ff9b:1::/48, RFC 8215): the operator's own translator, with the
        // IPv4 address at a prefix length only the operator knows.
        return Some("a local-use NAT64 address (it reaches IPv4 inside its operator's network)");
    }
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("the unspecified address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if segments[0] & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if segments[0] & 0xfe00 == 0xfc00 {
        // fc00::/7, unique local (the IPv6 private range; AWS's metadata fd00:ec2::254 among them).
        Some("a unique local (private) address")
    } else if segments[0] & 0xffc0 == 0xfec0 {
        Some("a site-local address")
    } else if segments[0] == 0x2001 && segments[1] == 0x0db8 {
        Some("a documentation address")
    } else if segments[..6] == [0, 0, 0, 0, 0, 0] {
        // ::a.b.c.d, the deprecated IPv4-compatible form.
        Some("an IPv4-compatible address")
    } else {
        None
    }
}

/// Whether webhooks may reach private addresses and plain `http` (from
/// [`crate::contract::webhooks::ALLOW_PRIVATE_ENV`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    pub allow_private: bool,
}

impl Reach {
    /// The first address of `addrs` that may not be reached, with why.
    pub fn refused(self, addrs: &[SocketAddr]) -> Option<(IpAddr, &'static str)> {
        if self.allow_private {
            return None;
        }
        addrs.iter().find_map(|a| forbidden(a.ip()).map(|why| (a.ip(), why)))
    }

    /// The schemes a subscribed URL may have.
    pub fn schemes(self) -> &'static [&'static str] {
        if self.allow_private { &["https", "http"] } else { &["https"] }
    }
}

/// Why a URL cannot be subscribed.
pub fn check_url_text(reach: Reach, text: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(text).map_err(|e| format!("is not an absolute URL: {e}"))?;
    if !reach.schemes().contains(&url.scheme()) {
        return Err(format!("has the scheme `{}`; only {} is accepted", url.scheme(), reach.schemes().join(" or ")));
    }
    if url.host().is_none() {
        return Err("names no host".to_owned());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("carries credentials; put a secret in the path or query instead".to_owned());
    }
    if url.fragment().is_some() {
        return Err("has a fragment, which is never sent".to_owned());
    }
    Ok(url)
}

/// Where the guard learns a name's addresses. Production uses the system's resolver
/// ([`resolver`] with nothing injected); a Rust caller may put another in its place (tests answer
/// fixed loopback addresses for made-up public-looking names, so that the send-time check runs
/// and nothing leaves the machine). Whatever it answers is judged the same way.
pub type Resolver = Arc<dyn Resolve>;

/// `injected`, or the system's resolver.
pub fn resolver(injected: Option<Resolver>) -> Resolver {
    injected.unwrap_or_else(|| Arc::new(SystemResolver))
}

/// The system's resolver (`getaddrinfo`, off the async threads).
struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The guard's refusal to reach an address. The sender records it as the attempt's error;
/// found among a failed request's sources, it says why nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused by the address guard: {}", self.0)
    }
}

impl std::error::Error for Refused {}

/// Resolves `url`'s host with `resolver` and checks every address (the check at creation).
/// With private reach allowed there is no address rule to hold, and nothing is resolved.
pub async fn check_url(reach: Reach, resolver: &dyn Resolve, url: &reqwest::Url) -> Result<(), String> {
    if reach.allow_private {
        return Ok(());
    }
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, 0)],
        Err(_) => {
            let name: Name = host.parse().map_err(|_| "names a host that is not a valid name".to_owned())?;
            resolver.resolve(name).await.map_err(|e| format!("names a host that does not resolve: {e}"))?.collect()
        }
    };
    if addrs.is_empty() {
        return Err("names a host with no address".to_owned());
    }
    match reach.refused(&addrs) {
        Some((ip, why)) => Err(format!("resolves to {ip}, {why}, which webhooks may not reach")),
        None => Ok(()),
    }
}

/// The sender's resolver: asks `inner`, and refuses a name any of whose addresses may not be
/// reached. reqwest asks it at every new connection, so an answer that changed since the
/// subscription was checked (DNS rebinding) is judged again.
pub struct GuardedResolver {
    pub reach: Reach,
    pub inner: Resolver,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let reach = self.reach;
        let host = name.as_str().to_owned();
        let answer = self.inner.resolve(name);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = answer.await?.collect();
            if let Some((ip, why)) = reach.refused(&addrs) {
                let refused = Refused(format!("{host} resolves to {ip}, {why}, which webhooks may not reach"));
                return Err(Box::new(refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// An address written in the URL itself never reaches the resolver: the sender checks it here.
pub fn literal_refused(reach: Reach, url: &reqwest::Url) -> Option<Refused> {
    let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = host.parse().ok()?;
    reach
        .refused(&[SocketAddr::new(ip, 0)])
        .map(|(ip, why)| Refused(format!("{ip} is {why}, which webhooks may not reach")))
}

/// Whether `url` names a loopback host (`localhost`, or a loopback address written in it),
/// judged without resolving anything.
pub fn names_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The sender's HTTP client: `resolver` behind the guard, no redirects (a 3xx is a failed attempt, and
/// never a way around the guard), no proxy from the environment, the attempt timeout.
pub fn client(reach: Reach, resolver: Resolver) -> reqwest::Client {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { reach, inner: resolver }))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(crate::contract::webhooks::ATTEMPT_TIMEOUT)
        .connect_timeout(crate::contract::webhooks::ATTEMPT_TIMEOUT)
        .pool_max_idle_per_host(crate::contract::webhooks::ENDPOINT_CONCURRENCY)
        .user_agent(concat!("govdata-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("the TLS backend initialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> bool {
        forbidden(text.parse().unwrap()).is_some()
    }

    #[test]
    fn the_classifier_refuses_every_internal_range() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "255.255.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "192.0.2.5",
            "198.51.100.1",
            "203.0.113.9",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "::7f00:1",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
    }

    #[test]
    fn the_classifier_lets_public_unicast_through() {
        // Classified only: no test sends anything to these.
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            // Neighbours of the special ranges below, outside them.
            "192.88.98.1",
            "192.88.100.1",
            "2001:4860:4860::8888",
            "2003::1",
            "64:ff9b::808:808",
        ] {
            assert!(!refused(ip), "{ip} is public");
        }
    }

    fn reason(text: &str) -> &'static str {
        forbidden(text.parse().unwrap()).unwrap_or_else(|| panic!("{text} must be refused"))
    }

    #[test]
    fn six_to_four_is_refused_whatever_ipv4_it_carries() {
        // 2002:7f00:1:: carries 127.0.0.1, 2002:a00:1:: 10.0.0.1, 2002:808:808:: 8.8.8.8.
        for ip in ["2002:7f00:1::1", "2002:a00:1::1", "2002:a9fe:a9fe::1", "2002:808:808::1", "2002::"] {
            assert!(reason(ip).contains("6to4"), "{ip}");
        }
    }

    #[test]
    fn teredo_is_refused() {
        // A client behind 127.0.0.1 (obfuscated as 80ff:fffe), and the RFC 4380 example.
        for ip in ["2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::1"] {
            assert!(reason(ip).contains("Teredo"), "{ip}");
        }
    }

    #[test]
    fn nat64_is_judged_by_its_ipv4_and_local_use_nat64_is_refused() {
        assert!(reason("64:ff9b::7f00:1").contains("loopback"));
        assert!(reason("64:ff9b::a00:1").contains("private"));
        assert!(!refused("64:ff9b::808:808"));
        for ip in ["64:ff9b:1::7f00:1", "64:ff9b:1::808:808", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"] {
            assert!(reason(ip).contains("local-use NAT64"), "{ip}");
        }
    }

    #[test]
    fn ipv4_translated_addresses_are_judged_by_their_ipv4() {
        assert!(reason("::ffff:0:7f00:1").contains("loopback"));
        assert!(reason("::ffff:0:a9fe:a9fe").contains("link-local"));
        assert!(!refused("::ffff:0:808:808"));
    }

    #[test]
    fn the_6to4_relay_anycast_is_refused() {
        for ip in ["192.88.99.1", "192.88.99.0", "192.88.99.255"] {
            assert!(reason(ip).contains("6to4 relay"), "{ip}");
        }
    }

    /// A resolver answering `answer` for every name, as a test's injected one does.
    struct Fixed(IpAddr);

    impl Resolve for Fixed {
        fn resolve(&self, _: Name) -> Resolving {
            let addr = SocketAddr::new(self.0, 0);
            Box::pin(async move { Ok(Box::new(std::iter::once(addr)) as Addrs) })
        }
    }

    #[tokio::test]
    async fn the_guard_judges_what_the_injected_resolver_answers() {
        let strict = Reach { allow_private: false };
        let rebound: Resolver = Arc::new(Fixed("127.0.0.1".parse().unwrap()));
        let public: Resolver = Arc::new(Fixed("8.8.8.8".parse().unwrap()));
        let url: reqwest::Url = "https://hooks.example.com/x".parse().unwrap();
        assert!(check_url(strict, &*rebound, &url).await.unwrap_err().contains("127.0.0.1, a loopback address"));
        assert!(check_url(strict, &*public, &url).await.is_ok());
        // At send time: the guarded resolver refuses, naming the host and the address.
        let guarded = GuardedResolver { reach: strict, inner: rebound.clone() };
        let err = guarded.resolve("hooks.example.com".parse().unwrap()).await.err().expect("refused");
        let refused = err.downcast_ref::<Refused>().expect("the guard's refusal");
        assert_eq!(
            refused.0,
            "hooks.example.com resolves to 127.0.0.1, a loopback address, which webhooks may not reach"
        );
        let open = GuardedResolver { reach: Reach { allow_private: true }, inner: rebound };
        let addrs: Vec<SocketAddr> = open.resolve("hooks.example.com".parse().unwrap()).await.unwrap().collect();
        assert_eq!(addrs, [SocketAddr::new("127.0.0.1".parse().unwrap(), 0)]);
    }

    #[test]
    fn urls_must_be_https_without_credentials_unless_private_reach_is_allowed() {
        let strict = Reach { allow_private: false };
        let open = Reach { allow_private: true };
        assert!(check_url_text(strict, "https://hooks.example/govdata").is_ok());
        assert!(check_url_text(strict, "http://hooks.example/govdata").unwrap_err().contains("scheme"));
        assert!(check_url_text(open, "http://127.0.0.1:9/x").is_ok());
        assert!(check_url_text(strict, "ftp://hooks.example/").is_err());
        assert!(check_url_text(strict, "https://user:pw@hooks.example/").unwrap_err().contains("credentials"));
        assert!(check_url_text(strict, "not a url").is_err());
        assert!(check_url_text(strict, "https://hooks.example/#x").is_err());
        let loopback: reqwest::Url = "https://127.0.0.1/".parse().unwrap();
        assert!(literal_refused(strict, &loopback).is_some());
        assert!(literal_refused(open, &loopback).is_none());
        let v6: reqwest::Url = "https://[::1]:8443/".parse().unwrap();
        assert!(literal_refused(strict, &v6).is_some());
        assert!(names_loopback(&v6) && names_loopback(&loopback));
        for other in ["https://0.com/", "https://10.0.0.1/", "https://localhost.example/"] {
            assert!(!names_loopback(&other.parse().unwrap()), "{other}");
        }
    }
}
