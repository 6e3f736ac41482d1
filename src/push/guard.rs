//! Where a webhook may be sent: never to the service's own network. A subscribed URL must be
//! `https`, and every address its host resolves to must be a public unicast address: not
//! loopback, private, shared (CGNAT), link-local (the cloud metadata address 169.254.169.254
//! among them), multicast, unspecified, broadcast, documentation or reserved, in IPv4 or IPv6
//! (an IPv4-mapped or NAT64 IPv6 address is judged by the IPv4 address it carries). The check
//! runs when a subscription is created or changed, and again at every connection the sender
//! opens ([`GuardedResolver`]), so a name that resolves elsewhere later (DNS rebinding) is
//! refused then. `GOVDATA_WEBHOOK_ALLOW_PRIVATE` lifts the address rule and allows plain `http`
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
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking address")
    } else if a >= 240 {
        Some("a reserved address")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // An IPv4 address carried in IPv6 (mapped ::ffff:a.b.c.d, or the NAT64 prefix 64:ff9b::/96)
    // reaches that IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(Ipv4Addr::new(
            (segments[6] >> 8) as u8,
            segments[6] as u8,
            (segments[7] >> 8) as u8,
            segments[7] as u8,
        ));
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

/// Resolves `url`'s host and checks every address (the check at creation). With private reach
/// allowed there is no address rule to hold, and nothing is resolved.
pub async fn check_url(reach: Reach, url: &reqwest::Url) -> Result<(), String> {
    if reach.allow_private {
        return Ok(());
    }
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| format!("names a host that does not resolve: {e}"))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err("names a host with no address".to_owned());
    }
    match reach.refused(&addrs) {
        Some((ip, why)) => Err(format!("resolves to {ip}, {why}, which webhooks may not reach")),
        None => Ok(()),
    }
}

/// The sender's resolver: resolves as the system does, and refuses a name any of whose
/// addresses may not be reached. reqwest asks it at every new connection.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    pub reach: Reach,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let reach = self.reach;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            if let Some((ip, why)) = reach.refused(&addrs) {
                let message = format!("{} resolves to {ip}, {why}, which webhooks may not reach", name.as_str());
                return Err(Box::new(std::io::Error::new(std::io::ErrorKind::PermissionDenied, message))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// An address written in the URL itself never reaches the resolver: the sender checks it here.
pub fn literal_refused(reach: Reach, url: &reqwest::Url) -> Option<String> {
    let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = host.parse().ok()?;
    reach.refused(&[SocketAddr::new(ip, 0)]).map(|(ip, why)| format!("{ip} is {why}, which webhooks may not reach"))
}

/// Whether `url` names a loopback host (`localhost`, or a loopback address written in it),
/// judged without resolving anything.
pub fn names_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The sender's HTTP client: the guarded resolver, no redirects (a 3xx is a failed attempt, and
/// never a way around the guard), no proxy from the environment, the attempt timeout.
pub fn client(reach: Reach) -> reqwest::Client {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { reach }))
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
        for ip in
            ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "192.169.0.1", "2606:4700::1111", "::ffff:8.8.8.8"]
        {
            assert!(!refused(ip), "{ip} is public");
        }
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
